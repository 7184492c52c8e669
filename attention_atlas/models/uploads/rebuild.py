"""Tensors and metadata a reader found → one of our architectures, checked, as an adapter and a summary.

Two ways in: ``from_bundle`` for a file that describes itself (format, config and
vocabulary in its safetensors metadata), and ``from_state`` for a state dict with whatever
came beside it (``torch.save``'s dict keys, or nothing): the architecture comes from that
metadata or from the caller's answers, the config from the metadata or from the tensor
shapes, and what neither tells is raised as ``NeedsAnswers``. Either way the file is
checked against its architecture (config ranges, vocabulary sizes, every tensor's name
and shape) before the model is built.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from attention_atlas.i18n import N_, _, later
from attention_atlas.models.uploads import architectures as archs
from attention_atlas.models.uploads.architectures import Architecture, Missing
from attention_atlas.models.uploads.incoming import Incoming, NeedsAnswers, Summary, Upload, nbytes, nonfinite
from attention_atlas.models.uploads.safety import TensorSpec, UploadError

WRAPPER_PREFIXES = ("module.", "_orig_mod.")  # DataParallel and torch.compile rename every tensor


def from_bundle(
    f: Incoming, data: bytes, specs: dict[str, TensorSpec], raw_meta: dict, source: str
) -> Upload:
    """Our bundle's bytes (the upload, or a member of a zipped folder), its checked header and metadata."""
    meta = _decode_meta(f, raw_meta)
    if meta.get("format") == "attention-atlas/train-state":
        raise UploadError(
            _("{name} is a training state, not a model: upload the bundle the run wrote", name=f.name)
        )
    arch = archs.for_meta(meta, f.name)
    if meta.get("format_version") != arch.bundle.file_format_version:
        raise UploadError(
            _(
                "{name} is {format} version {version!r}; this app reads version {readable}",
                name=f.name,
                format=arch.format,
                version=meta.get("format_version"),
                readable=arch.bundle.file_format_version,
            )
        )
    cfg = archs.build_config(arch, meta.get("config"), f.name)
    _check_vocab(f, cfg, meta)
    n_params = archs.check_tensors(arch, cfg, specs, f.name)
    with tempfile.TemporaryDirectory(prefix="atlas-upload-") as tmp:
        path = Path(tmp) / "model.safetensors"
        path.write_bytes(data)
        adapter = f.build(lambda: arch.adapter(f.model_id, path, f.device))
    return _upload(f, arch, cfg, adapter, n_params, source)


def from_state(f: Incoming, tensors: dict, meta: dict, source: str) -> Upload:
    """A state dict with whatever metadata came with it: rebuild the bundle, then load that."""
    from attention_atlas.models.storage.checkpoint import save_checkpoint

    tensors = _strip_wrappers(tensors)
    arch = _architecture(f, meta)
    config = meta.get("config")
    tensors = _drop_aliases(arch, tensors, config)
    config, still = _config(f, arch, tensors, config)
    vocab, tgt_vocab = meta.get("src_vocab", meta.get("vocab")), meta.get("tgt_vocab")
    if vocab is None:
        vocab, tgt_vocab = _answered_vocab(f, arch, config, still)
    if still:
        raise NeedsAnswers(f.name, still, config, arch.name)
    cfg = archs.build_config(arch, config, f.name)
    full = {
        "format": arch.format,
        "format_version": arch.bundle.file_format_version,
        "task": arch.task,
        "tokenizer": meta.get("tokenizer", arch.tokenizer),
        "config": cfg.to_dict(),
        "src_vocab": vocab,
        "tgt_vocab": tgt_vocab,
        "info": {"model_id": f.model_id},  # no file name: the cache shares this model between sessions
    }
    _check_vocab(f, cfg, full)
    specs = {k: TensorSpec(_dtype_name(v), tuple(v.shape)) for k, v in tensors.items()}
    n_params = archs.check_tensors(arch, cfg, specs, f.name)
    with tempfile.TemporaryDirectory(prefix="atlas-upload-") as tmp:
        path = save_checkpoint(Path(tmp) / "model.safetensors", tensors, full)
        adapter = f.build(lambda: arch.adapter(f.model_id, path, f.device))
    return _upload(f, arch, cfg, adapter, n_params, source)


# -- what a state dict lacks ------------------------------------------------------------------------


def _architecture(f: Incoming, meta: dict) -> Architecture:
    """From the metadata (``format`` and ``task``), else the caller's answer, else asked for."""
    if meta.get("format") and meta.get("task"):
        return archs.for_meta(meta, f.name)
    if f.answers.get("architecture"):
        return archs.by_name(f.answers["architecture"], f.name)
    why = _(
        "the file does not say which model it belongs to (a Hugging Face model is "
        "uploaded as a .zip of its folder)"
    )
    raise NeedsAnswers(f.name, [Missing("architecture", why, tuple(archs.names()))], {}, None)


def _drop_aliases(arch: Architecture, tensors: dict, config) -> dict:
    """A ``state_dict()`` saved with a shared table holds it twice, under both names: keep one."""
    shares = not isinstance(config, dict) or config.get("share_embeddings", True)
    for kept, dropped in arch.aliases:
        if shares and kept in tensors and dropped in tensors and _same(tensors[kept], tensors[dropped]):
            tensors = {k: v for k, v in tensors.items() if k != dropped}
    return tensors


def _config(f: Incoming, arch: Architecture, tensors: dict, config) -> tuple[dict, list[Missing]]:
    """The config given, else inferred from the shapes with the caller's answers filled in; what is still missing."""
    if isinstance(config, dict):
        return dict(config), []
    try:
        config, missing = arch.infer({k: tuple(v.shape) for k, v in tensors.items()})
    except UploadError as err:  # the shapes say which tensors are absent; the message names the file
        raise UploadError(_("{name}: {error}", name=f.name, error=err)) from err
    f.notices.append(
        "config inferred from the tensor shapes: " + ", ".join(f"{k} {v}" for k, v in config.items())
    )
    still = []
    for m in missing:
        if m.field in f.answers:
            config[m.field] = f.answers[m.field]
        else:
            still.append(m)
    return config, still


def _answered_vocab(
    f: Incoming, arch: Architecture, config: dict, still: list[Missing]
) -> tuple[list[str] | None, list[str] | None]:
    """``(source, target)`` vocabularies from the answers: tokens (``parse_vocab``'s dict or a
    list) or a bundled model's id; else a ``Missing`` that offers the bundled ones that fit."""
    sizes = (config.get("src_vocab_size"), config.get("tgt_vocab_size"))
    answer = f.answers.get("vocabulary")
    if isinstance(answer, str):
        pair = archs.bundled_vocab(answer)
        if pair is None:
            raise UploadError(
                _("{name}: the vocabulary of {model} is not installed here", name=f.name, model=answer)
            )
        return pair
    if isinstance(answer, list):
        answer = {"src": answer, "tgt": None}
    if isinstance(answer, dict) and answer.get("src") is not None:
        if answer.get("tgt") is None and not arch.shared_vocab:
            raise UploadError(
                _(
                    "{name}: a {title} needs a target vocabulary too (vocab.json 'tgt')",
                    name=f.name,
                    title=_(arch.title),
                )
            )
        return answer["src"], answer.get("tgt")
    cfg_guess = _try_config(arch, config)

    def fits(model_id: str) -> bool:
        pair = archs.bundled_vocab(model_id)
        return pair is not None and (len(pair[0]), len(pair[1] or pair[0])) == sizes

    matching = tuple(m for m in (arch.compare(cfg_guess) if cfg_guess else ()) if fits(m))
    if arch.shared_vocab:
        why = _(
            "a state dict holds no tokens: give the vocab.json written beside the weights ({n} tokens)",
            n=sizes[0],
        )
    else:
        why = _(
            "a state dict holds no tokens: give the vocab.json written beside the weights "
            "({src} source and {tgt} target tokens)",
            src=sizes[0],
            tgt=sizes[1],
        )
    still.append(Missing("vocabulary", why, matching))
    return None, None


def _try_config(arch: Architecture, config: dict):
    try:
        return arch.bundle.config_class.from_dict(
            {"num_heads": 1, **config} if "d_model" in config else config
        )
    except (TypeError, ValueError, KeyError):
        return None


# -- checks and the summary -----------------------------------------------------------------------


def _decode_meta(f: Incoming, raw: dict[str, str]) -> dict:
    """Our bundle's metadata values are JSON strings."""
    try:
        return {k: json.loads(v) for k, v in raw.items()}
    except json.JSONDecodeError as err:
        raise UploadError(
            _("{name}: its safetensors metadata is not JSON ({error})", name=f.name, error=err)
        ) from err


def _check_vocab(f: Incoming, cfg, meta: dict) -> None:
    from attention_atlas.models.text.vocab import Vocab

    src, tgt = meta.get("src_vocab"), meta.get("tgt_vocab")
    wrong = {
        "source": N_("{name}: the source vocabulary is not a list of strings"),
        "target": N_("{name}: the target vocabulary is not a list of strings"),
    }
    for what, tokens in (("source", src), ("target", tgt)):
        if tokens is not None and not (isinstance(tokens, list) and all(isinstance(t, str) for t in tokens)):
            raise UploadError(_(wrong[what], name=f.name))
    if src is None:
        raise UploadError(_("{name} carries no vocabulary (src_vocab)", name=f.name))
    try:
        Vocab(src)
        if tgt is not None:
            Vocab(tgt)
    except ValueError as err:
        raise UploadError(_("{name}: {error}", name=f.name, error=err)) from err
    n_tgt = len(src if tgt is None else tgt)
    if (len(src), n_tgt) != (cfg.src_vocab_size, cfg.tgt_vocab_size):
        raise UploadError(
            _(
                "{name}: vocabularies of {src}/{tgt} tokens but a config for {src_config}/{tgt_config}",
                name=f.name,
                src=len(src),
                tgt=n_tgt,
                src_config=cfg.src_vocab_size,
                tgt_config=cfg.tgt_vocab_size,
            )
        )


def _upload(f: Incoming, arch: Architecture, cfg, adapter, n_params: int, source: str) -> Upload:
    model = adapter.bundle.model
    adapter.bundle.sha256 = f.digest  # records name the uploaded file, not our temporary copy
    layers, heads = arch.layers_heads(cfg)
    summary = Summary(
        file_name=f.name,
        sha256=f.digest,
        size=f.size,
        source=source,
        architecture=arch.name,
        description=later("{title}: {about}", title=later(arch.title), about=arch.describe(cfg)),
        view="alignment" if (layers, heads) == ("1", 1) else "heads",
        parameters=n_params,
        vocab_size=cfg.src_vocab_size,
        layers=layers,
        heads=heads,
        seq2seq=True,
        model_id=f.model_id,
        compare=arch.compare(cfg),
        example=arch.example,
        nonfinite=nonfinite(model),
        notices=tuple(f.notices),
        config=cfg.to_dict(),
    )
    return Upload(summary, adapter, nbytes(model))


def _strip_wrappers(tensors: dict) -> dict:
    for prefix in WRAPPER_PREFIXES:
        if tensors and all(k.startswith(prefix) for k in tensors):
            tensors = {k[len(prefix) :]: v for k, v in tensors.items()}
    return tensors


def _same(a, b) -> bool:
    import torch

    return a.shape == b.shape and a.dtype == b.dtype and bool(torch.equal(a, b))


def _dtype_name(t) -> str:
    import torch

    names = {
        torch.float64: "F64",
        torch.float32: "F32",
        torch.float16: "F16",
        torch.bfloat16: "BF16",
        torch.int64: "I64",
        torch.int32: "I32",
        torch.int16: "I16",
        torch.int8: "I8",
        torch.uint8: "U8",
        torch.bool: "BOOL",
    }
    return names.get(t.dtype, str(t.dtype))
