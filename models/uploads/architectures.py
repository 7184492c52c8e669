"""Our architectures an upload may hold, registered by (bundle format, task); checks and shape inference.

An ``Architecture`` says how to rebuild a model from a bundle's config (the bundle class
names the format, config and model classes), what sane config values are, which tensor
names and shapes that config implies, how to guess the config from a bare state dict's
shapes, and which adapter runs the result. Adding one is a ``register_architecture``
call; translation's GRU/LSTM models register ``(seq2seq-rnn format, "translation")``,
with their own adapter, two vocabularies and bundled ids to compare with.

>>> sorted(a.name for a in ARCHITECTURES.values())
['couplet-rnn', 'couplet-transformer', 'translation-rnn']
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from models.uploads.safety import FLOAT_DTYPES, TensorSpec, UploadError

WEIGHTS = Path(__file__).resolve().parents[2] / "weights"
MAX_PARAMETERS = 1_000_000_000  # a config that implies more is refused before anything is allocated


@dataclass(frozen=True)
class Missing:
    """A config value (or the vocabulary) that a file does not carry and its shapes do not fix."""

    field: str  # "vocabulary", "num_heads", "attention", "architecture"
    why: str
    choices: tuple = ()  # the values the shapes allow, most likely first


@dataclass(frozen=True)
class Architecture:
    name: str  # "couplet-rnn"
    title: str  # for people: "couplet RNN (seed 000)"
    bundle: type  # a Seq2SeqBundle subclass: format tag, config class, model class
    task: str  # "couplet", "translation": the bundle's task field
    tokenizer: str  # "char", "word"
    adapter: Callable[..., Any]  # (model_id, bundle file, device) -> adapter
    infer: Callable[[dict[str, tuple[int, ...]]], tuple[dict, list[Missing]]]  # bare state dict -> config
    ranges: dict[str, Any]  # config field -> (low, high) or a collection of allowed values
    aliases: tuple[tuple[str, str], ...] = ()  # (kept, dropped) names of a shared tensor
    describe: Callable[[Any], str] = str  # config -> "LSTM, additive attention"
    layers_heads: Callable[[Any], tuple[str, int]] = lambda cfg: ("1", 1)  # ("3 + 3", 4)
    compare: Callable[[Any], tuple[str, ...]] = (
        lambda cfg: ()
    )  # bundled ids of the same family, closest first
    example: str = ""  # an input to start from
    how_to: str = ""  # the command that writes such a checkpoint
    shared_vocab: bool = True  # one vocabulary for source and target
    extra: dict = field(default_factory=dict)

    @property
    def format(self) -> str:
        return self.bundle.file_format


ARCHITECTURES: dict[tuple[str, str], Architecture] = {}


def register_architecture(arch: Architecture) -> Architecture:
    key = (arch.format, arch.task)
    if key in ARCHITECTURES:
        raise ValueError(f"an upload architecture for {key} is registered twice")
    ARCHITECTURES[key] = arch
    return arch


def by_name(name: str, file_name: str = "upload") -> Architecture:
    for arch in ARCHITECTURES.values():
        if arch.name == name:
            return arch
    raise UploadError(f"{file_name}: unknown architecture {name!r}; known: {', '.join(names())}")


def names() -> list[str]:
    return [a.name for a in ARCHITECTURES.values()]


def for_meta(meta: dict, name: str) -> Architecture:
    fmt, task = meta.get("format"), meta.get("task")
    arch = ARCHITECTURES.get((fmt, task))
    if arch is None:
        known = "; ".join(f"{f} ({t})" for f, t in ARCHITECTURES)
        raise UploadError(
            f"{name}: no architecture for format {fmt!r}, task {task!r} (this app reads: {known})"
        )
    return arch


# -- checks --------------------------------------------------------------------------------------


def build_config(arch: Architecture, data: Any, name: str):
    """The config object, every value within ``arch.ranges``; refused with the first bad value."""
    if not isinstance(data, dict):
        raise UploadError(f"{name}: the config is not a JSON object")
    for key, allowed in arch.ranges.items():
        if key not in data:
            continue
        value = data[key]
        if (
            isinstance(allowed, tuple)
            and len(allowed) == 2
            and all(isinstance(x, int | float) for x in allowed)
        ):
            lo, hi = allowed
            wanted = float if isinstance(lo, float) else int
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or (wanted is int and value != int(value))
            ):
                raise UploadError(f"{name}: config {key} = {value!r} is not a number")
            if not lo <= value <= hi:
                raise UploadError(f"{name}: config {key} = {value!r} is outside the sane range {lo}..{hi}")
        elif value not in allowed:
            raise UploadError(f"{name}: config {key} = {value!r}; accepted: {', '.join(map(str, allowed))}")
    try:
        return arch.bundle.config_class.from_dict(data)
    except (TypeError, ValueError, KeyError) as err:
        raise UploadError(f"{name}: the config does not describe a {arch.title} ({err})") from err


def expected_tensors(arch: Architecture, cfg) -> tuple[dict[str, tuple[tuple[int, ...], bool]], int]:
    """``({name: (shape, is_float)}, parameter count)`` of the model ``cfg`` builds, built on the
    meta device (no memory); names as ``unique_state`` stores them (an alias appears once)."""
    import torch

    with torch.device("meta"):
        model = arch.bundle.model_class(cfg)
    out, seen = {}, set()
    for tname, t in model.state_dict(keep_vars=True).items():
        if id(t) in seen:
            continue
        seen.add(id(t))
        out[tname] = (tuple(t.shape), t.is_floating_point())
    n_params = sum(p.numel() for p in model.parameters())
    return out, n_params


def check_tensors(arch: Architecture, cfg, found: dict[str, TensorSpec], name: str) -> int:
    """Refuse unless ``found`` has exactly the tensors ``cfg`` needs, with their shapes; the parameter count."""
    expected, n_params = expected_tensors(arch, cfg)
    if n_params > MAX_PARAMETERS:
        raise UploadError(f"{name}: the config implies {n_params:,} parameters; at most {MAX_PARAMETERS:,}")
    missing = [k for k in expected if k not in found]
    extra = [k for k in found if k not in expected]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing {len(missing)} ({_few(missing)})")
        if extra:
            parts.append(f"{len(extra)} unexpected ({_few(extra)})")
        raise UploadError(
            f"{name}: the tensors do not fit a {arch.title} with this config: {'; '.join(parts)}"
        )
    for tname, (shape, is_float) in expected.items():
        spec = found[tname]
        if spec.shape != shape:
            raise UploadError(
                f"{name}: tensor {tname!r} is {list(spec.shape)}; the {arch.title} config needs {list(shape)}"
            )
        if is_float and spec.dtype not in FLOAT_DTYPES:
            raise UploadError(f"{name}: tensor {tname!r} is {spec.dtype}; a floating-point tensor is needed")
    return n_params


def _few(items: list[str], n: int = 3) -> str:
    return ", ".join(items[:n]) + (", …" if len(items) > n else "")


def _count(shapes: dict, pattern: str) -> int:
    rx = re.compile(pattern)
    return len({m.group(1) for k in shapes if (m := rx.fullmatch(k))})


def _need(shapes: dict, keys: tuple[str, ...], title: str) -> None:
    absent = [k for k in keys if k not in shapes]
    if absent:
        raise UploadError(f"these tensors are not a {title}: no {_few(absent)}")


# -- couplet RNN (seed 000): BiLSTM/GRU encoder, attention, LSTM/GRU decoder ---------------------

RNN_RANGES = {
    "src_vocab_size": (5, 500_000),
    "tgt_vocab_size": (5, 500_000),
    "embed_size": (1, 4096),
    "hidden_size": (1, 4096),
    "num_layers": (1, 8),
    "dropout": (0.0, 1.0),
    "pad_id": (0, 0),
}
PARAMETER_FREE = ("scaled_dot", "dot", "cosine", "gaussian")  # scorers that leave no tensor behind


def infer_rnn(shapes: dict[str, tuple[int, ...]], title: str = "seq2seq RNN") -> tuple[dict, list[Missing]]:
    """A ``Seq2SeqConfig`` dict from tensor shapes; the scorer is missing when it has no parameters,
    and the keys' activation always is (a linear layer looks the same with or without tanh after it).

    >>> cfg, missing = infer_rnn({"encoder.embedding.weight": (50, 8), "encoder.rnn.weight_hh_l0": (64, 16),
    ...     "decoder.out.weight": (50, 16)})
    >>> cfg["rnn"], cfg["hidden_size"], [m.field for m in missing]
    ('lstm', 16, ['attention', 'key_activation'])
    """
    _need(shapes, ("encoder.embedding.weight", "encoder.rnn.weight_hh_l0", "decoder.out.weight"), title)
    v_src, embed = shapes["encoder.embedding.weight"]
    gates, hidden = shapes["encoder.rnn.weight_hh_l0"]
    rnn = {4: "lstm", 3: "gru"}.get(gates // hidden) if hidden and gates % hidden == 0 else None
    if rnn is None:
        raise UploadError(
            f"encoder.rnn.weight_hh_l0 is {[gates, hidden]}: neither an LSTM (4h × h) nor a GRU (3h × h)"
        )
    params = {k.rsplit(".", 1)[1] for k in shapes if k.startswith("decoder.attention.params.")}
    cfg = {
        "src_vocab_size": v_src,
        "tgt_vocab_size": shapes["decoder.out.weight"][0],
        "embed_size": embed,
        "hidden_size": hidden,
        "num_layers": _count(shapes, r"encoder\.rnn\.weight_hh_l(\d+)"),
        "rnn": rnn,
        "share_embeddings": "decoder.embedding.weight" not in shapes,
    }
    missing = []
    if params == {"W_q", "W_k", "v"}:
        cfg["attention"] = "additive"
    elif params == {"W"}:
        cfg["attention"] = "general"
    elif not params:
        missing.append(
            Missing("attention", "a parameter-free scorer leaves no tensor behind", PARAMETER_FREE)
        )
    else:
        raise UploadError(
            f"decoder.attention has parameters {sorted(params)}, which match no scoring function"
        )
    why = "no tensor records whether the encoder states pass through tanh (seed 000) or stay linear"
    missing.append(Missing("key_activation", why, ("tanh", "linear")))
    return cfg, missing


def _rnn_describe(cfg) -> str:
    return f"{cfg.rnn.upper()} encoder–decoder, {cfg.attention} attention, hidden {cfg.hidden_size}"


def _rnn_adapter(model_id: str, path: Path, device):
    from models.adapters.couplet_rnn import CoupletRNNAdapter

    return CoupletRNNAdapter(model_id, path, device)


def _rnn_compare(cfg) -> tuple[str, ...]:
    first = "couplet-rnn-additive" if cfg.attention == "additive" else "couplet-rnn-dot"
    return tuple(dict.fromkeys((first, "couplet-rnn-additive", "couplet-rnn-dot")))


# -- couplet Transformer -------------------------------------------------------------------------

TRANSFORMER_RANGES = {
    "src_vocab_size": (5, 500_000),
    "tgt_vocab_size": (5, 500_000),
    "d_model": (1, 4096),
    "num_heads": (1, 64),
    "encoder_layers": (1, 24),
    "decoder_layers": (1, 24),
    "ffn_size": (1, 16384),
    "dropout": (0.0, 1.0),
    "max_len": (1, 100_000),
    "pad_id": (0, 0),
}


def infer_transformer(shapes: dict[str, tuple[int, ...]]) -> tuple[dict, list[Missing]]:
    """A ``TransformerConfig`` dict from tensor shapes; the head count is never in a shape."""
    _need(
        shapes,
        ("src_embed.embedding.weight", "decoder.out_bias", "encoder_layers.0.ffn.0.weight"),
        "couplet Transformer",
    )
    v_src, d = shapes["src_embed.embedding.weight"]
    cfg = {
        "src_vocab_size": v_src,
        "tgt_vocab_size": shapes["decoder.out_bias"][0],
        "d_model": d,
        "encoder_layers": _count(shapes, r"encoder_layers\.(\d+)\.norm1\.weight"),
        "decoder_layers": _count(shapes, r"decoder\.layers\.(\d+)\.norm1\.weight"),
        "ffn_size": shapes["encoder_layers.0.ffn.0.weight"][0],
        "share_embeddings": "decoder.embed.embedding.weight" not in shapes,
        "dropout": 0.0,
    }
    heads = tuple(h for h in (4, 8, 2, 1, 16, 32, 64) if d % h == 0)
    return cfg, [
        Missing("num_heads", f"no tensor shape records how the {d} dimensions split into heads", heads)
    ]


def _tf_describe(cfg) -> str:
    return (
        f"encoder–decoder Transformer, {cfg.encoder_layers} + {cfg.decoder_layers} layers × "
        f"{cfg.num_heads} heads, d_model {cfg.d_model}"
    )


def _tf_adapter(model_id: str, path: Path, device):
    from models.adapters.couplet_transformer import CoupletTransformerAdapter

    return CoupletTransformerAdapter(model_id, path, device)


def _register_couplets() -> None:
    from models.storage.bundle import Seq2SeqBundle, TransformerBundle
    from models.tasks.couplet import EXAMPLE

    register_architecture(
        Architecture(
            name="couplet-rnn",
            title="couplet RNN",
            bundle=Seq2SeqBundle,
            task="couplet",
            tokenizer="char",
            adapter=_rnn_adapter,
            infer=lambda shapes: infer_rnn(shapes, "couplet RNN"),
            ranges={**RNN_RANGES, "rnn": ("lstm", "gru"), "attention": _scorers()},
            aliases=(("encoder.embedding.weight", "decoder.embedding.weight"),),
            describe=_rnn_describe,
            layers_heads=lambda cfg: ("1", 1),  # one attention, whatever the RNN depth
            compare=_rnn_compare,
            example=EXAMPLE[0],
            how_to="python cli.py export --model couplet-rnn-additive --out my.safetensors  "
            "(or: python cli.py train couplet-rnn --attention additive --out weights/mine)",
        )
    )
    register_architecture(
        Architecture(
            name="couplet-transformer",
            title="couplet Transformer",
            bundle=TransformerBundle,
            task="couplet",
            tokenizer="char",
            adapter=_tf_adapter,
            infer=infer_transformer,
            ranges=TRANSFORMER_RANGES,
            aliases=(("src_embed.embedding.weight", "decoder.embed.embedding.weight"),),
            describe=_tf_describe,
            layers_heads=lambda cfg: (f"{cfg.encoder_layers} + {cfg.decoder_layers}", cfg.num_heads),
            compare=lambda cfg: ("couplet-transformer",),
            example=EXAMPLE[0],
            how_to="python cli.py export --model couplet-transformer --out my.safetensors  "
            "(or: python cli.py train couplet-transformer --out weights/mine)",
        )
    )


def _scorers() -> tuple[str, ...]:
    from models.attention.scoring import SCORERS

    return tuple(SCORERS)


def bundled_vocab(model_id: str) -> tuple[list[str], list[str] | None] | None:
    """``(source, target or None)`` vocabularies of a bundled model's weights, or None where they are not installed."""
    from models.storage.checkpoint import CheckpointError, read_meta

    try:
        meta = read_meta(WEIGHTS / model_id / "model.safetensors")
    except CheckpointError:
        return None
    return meta.get("src_vocab"), meta.get("tgt_vocab")


_register_couplets()


def _translation_adapter(model_id: str, path: Path, device):
    from models.adapters.translate_rnn import TranslationAdapter

    return TranslationAdapter(model_id, path, device)


def _translation_compare(cfg) -> tuple[str, ...]:
    first = "translate-gru-additive" if cfg.attention == "additive" else "translate-lstm-dot"
    return tuple(dict.fromkeys((first, "translate-gru-additive", "translate-lstm-dot")))


def _register_translation() -> None:
    from models.storage.bundle import Seq2SeqBundle

    register_architecture(
        Architecture(
            name="translation-rnn",
            title="translation RNN",
            bundle=Seq2SeqBundle,
            task="translation",
            tokenizer="word",
            adapter=_translation_adapter,
            infer=lambda shapes: infer_rnn(shapes, "translation RNN"),
            ranges={**RNN_RANGES, "rnn": ("lstm", "gru"), "attention": _scorers()},
            describe=_rnn_describe,
            layers_heads=lambda cfg: ("1", 1),
            compare=_translation_compare,
            example="I'm home.",
            how_to="python cli.py export --model translate-gru-additive --out my.safetensors  "
            "(or: python cli.py train translate --rnn gru --attention additive --out weights/mine)",
            shared_vocab=False,
        )
    )


_register_translation()
