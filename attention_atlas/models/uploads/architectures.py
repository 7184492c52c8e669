"""Our architectures an upload may hold: what a family registers, and the checks its files pass.

An ``Architecture`` says how to rebuild a model from a bundle's config (the bundle class
names the format, config and model classes), what sane config values are, how to guess
the config from a bare state dict's shapes (``models.uploads.shapes``), and which adapter
runs the result. Each family registers its own in its adapter file, beside its model ids
(``models/adapters/couplet_rnn.py``: ``register_architecture(Architecture(...))``), keyed
by (bundle format, task): translation's GRU/LSTM models register ``(seq2seq-rnn format,
"translation")``, with their own adapter, two vocabularies and bundled ids to compare with.

Reading ``ARCHITECTURES`` first imports every adapter module (the model registry's
discovery), so every family is registered before an upload is read:

>>> sorted(a.name for a in ARCHITECTURES.values())
['couplet-rnn', 'couplet-transformer', 'translation-rnn']
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from attention_atlas.i18n import _
from attention_atlas.models.uploads.safety import FLOAT_DTYPES, TensorSpec, UploadError
from attention_atlas.paths import WEIGHTS

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
    title: str  # for people: "couplet RNN", marked with N_ (shown through _)
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


class Registry(Mapping):
    """Key → entry (each with a ``name``), in order of name. Adding never reads; the first read
    imports every adapter module, which is where families register (``models.registry``)."""

    def __init__(self, what: str):
        self.what = what
        self._items: dict[Any, Any] = {}

    def add(self, key, entry):
        if key in self._items:
            raise ValueError(f"{self.what} for {key} is registered twice")
        self._items[key] = entry
        return entry

    def _all(self) -> dict:
        from attention_atlas.models.registry import available

        available()  # imports models/adapters/*: each family registers its upload architecture there
        return self._items

    def __getitem__(self, key):
        return self._all()[key]

    def __iter__(self) -> Iterator:
        items = self._all()
        return iter(sorted(items, key=lambda k: items[k].name))

    def __len__(self) -> int:
        return len(self._all())


ARCHITECTURES: Registry = Registry("an upload architecture")  # (bundle format, task) -> Architecture


def register_architecture(arch: Architecture) -> Architecture:
    """Make ``arch`` readable from uploads; called at import by its family's adapter module."""
    return ARCHITECTURES.add((arch.format, arch.task), arch)


def by_name(name: str, file_name: str = "upload") -> Architecture:
    for arch in ARCHITECTURES.values():
        if arch.name == name:
            return arch
    raise UploadError(
        _(
            "{name}: unknown architecture {architecture!r}; known: {known}",
            name=file_name,
            architecture=name,
            known=", ".join(names()),
        )
    )


def names() -> list[str]:
    return [a.name for a in ARCHITECTURES.values()]


def for_meta(meta: dict, name: str) -> Architecture:
    fmt, task = meta.get("format"), meta.get("task")
    arch = ARCHITECTURES.get((fmt, task)) if isinstance(fmt, str) and isinstance(task, str) else None
    if arch is None:
        known = "; ".join(f"{f} ({t})" for f, t in ARCHITECTURES)
        raise UploadError(
            _(
                "{name}: no architecture for format {format!r}, task {task!r} (this app reads: {known})",
                name=name,
                format=fmt,
                task=task,
                known=known,
            )
        )
    return arch


# -- checks --------------------------------------------------------------------------------------


def out_of_range(name: str, key: str, value, lo, hi) -> UploadError:
    """The one-line refusal of a config value outside its sane range (both config checks use it)."""
    return UploadError(
        _(
            "{name}: config {key} = {value!r} is outside the sane range {lo}..{hi}",
            name=name,
            key=key,
            value=value,
            lo=lo,
            hi=hi,
        )
    )


def build_config(arch: Architecture, data: Any, name: str):
    """The config object, every value within ``arch.ranges``; refused with the first bad value."""
    if not isinstance(data, dict):
        raise UploadError(_("{name}: the config is not a JSON object", name=name))
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
                raise UploadError(
                    _("{name}: config {key} = {value!r} is not a number", name=name, key=key, value=value)
                )
            if not lo <= value <= hi:
                raise out_of_range(name, key, value, lo, hi)
        elif value not in allowed:
            raise UploadError(
                _(
                    "{name}: config {key} = {value!r}; accepted: {accepted}",
                    name=name,
                    key=key,
                    value=value,
                    accepted=", ".join(map(str, allowed)),
                )
            )
    try:
        return arch.bundle.config_class.from_dict(data)
    except (TypeError, ValueError, KeyError) as err:
        raise UploadError(
            _(
                "{name}: the config does not describe a {title} ({error})",
                name=name,
                title=_(arch.title),
                error=err,
            )
        ) from err


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
        raise UploadError(
            _(
                "{name}: the config implies {n:,} parameters; at most {limit:,}",
                name=name,
                n=n_params,
                limit=MAX_PARAMETERS,
            )
        )
    missing = [k for k in expected if k not in found]
    extra = [k for k in found if k not in expected]
    if missing or extra:
        parts = []
        if missing:
            parts.append(_("missing {n} ({names})", n=len(missing), names=_few(missing)))
        if extra:
            parts.append(_("{n} unexpected ({names})", n=len(extra), names=_few(extra)))
        raise UploadError(
            _(
                "{name}: the tensors do not fit a {title} with this config: {parts}",
                name=name,
                title=_(arch.title),
                parts="; ".join(parts),
            )
        )
    for tname, (shape, is_float) in expected.items():
        spec = found[tname]
        if spec.shape != shape:
            raise UploadError(
                _(
                    "{name}: tensor {tensor!r} is {shape}; the {title} config needs {needed}",
                    name=name,
                    tensor=tname,
                    shape=list(spec.shape),
                    title=_(arch.title),
                    needed=list(shape),
                )
            )
        if is_float and spec.dtype not in FLOAT_DTYPES:
            raise UploadError(
                _(
                    "{name}: tensor {tensor!r} is {dtype}; a floating-point tensor is needed",
                    name=name,
                    tensor=tname,
                    dtype=spec.dtype,
                )
            )
    return n_params


def _few(items: list[str], n: int = 3) -> str:
    return ", ".join(items[:n]) + (", …" if len(items) > n else "")


def bundled_vocab(model_id: str) -> tuple[list[str], list[str] | None] | None:
    """``(source, target or None)`` vocabularies of a bundled model's weights, or None where they are not installed."""
    from attention_atlas.models.storage.checkpoint import CheckpointError, read_meta

    try:
        meta = read_meta(WEIGHTS / model_id / "model.safetensors")
    except CheckpointError:
        return None
    return meta.get("src_vocab"), meta.get("tgt_vocab")
