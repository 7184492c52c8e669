"""Bytes from a stranger → a checked, cached adapter and a summary of what it holds.

    upload = load_bytes(data, "mine.safetensors")          # or load_path("mine.pt")
    upload.summary.architecture, upload.summary.parameters  # 'couplet-rnn', 2_600_000
    upload.adapter.run("两个黄鹂鸣翠柳").records["cross"]       # the same records as a bundled model

Four shapes of file arrive at one place, a self-describing bundle checked against its
architecture, and leave through the adapter the bundled models of that architecture use:

- our bundle (safetensors with format, config and vocabulary in its header);
- a ``torch.save`` zip of ``{"state_dict": ..., "config": ..., "src_vocab": ...}`` (the
  bundle's metadata keys beside the tensors), read with ``torch.load(weights_only=True)``;
- a bare state dict (safetensors or .pt): the architecture is picked by the caller, the
  config inferred from shapes, and what shapes cannot tell is raised as ``NeedsAnswers``;
- a zipped model folder: a Hugging Face one (``models.uploads.hf_folder``) or ours.

A file is identified by its SHA-256; ``UploadCache`` keeps loaded ones within a memory
bound, least recently used out first, so the same file twice loads once.
"""

from __future__ import annotations

import io
import json
import os
import tempfile
import threading
import zipfile
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from models.uploads import architectures as archs
from models.uploads.architectures import Architecture, Missing
from models.uploads.safety import (
    MB,
    Limits,
    TensorSpec,
    UploadError,
    check_zip,
    describe_refused_kind,
    extract_members,
    load_safetensors,
    read_member,
    safetensors_header,
    scan_pickle,
    sha256,
    sniff,
    torch_load,
    torch_zip_root,
)

STATE_KEYS = ("state_dict", "model_state_dict", "model", "weights")  # where .pt files keep their tensors
WRAPPER_PREFIXES = ("module.", "_orig_mod.")  # DataParallel and torch.compile rename every tensor
RISKY_SUFFIXES = (
    ".py",
    ".pyc",
    ".so",
    ".bin",
    ".pt",
    ".pth",
    ".pkl",
    ".pickle",
    ".ckpt",
    ".h5",
    ".msgpack",
    ".joblib",
)


class NeedsAnswers(UploadError):
    """A file that loads once the caller supplies what it lacks (architecture, head count, vocabulary…)."""

    def __init__(self, name: str, missing: list[Missing], inferred: dict, architecture: str | None):
        self.missing, self.inferred, self.architecture = missing, inferred, architecture
        fields = ", ".join(m.field for m in missing)
        super().__init__(
            f"{name} does not say everything needed to rebuild it; missing: {fields} (the Checkpoint "
            "inspector page asks for them; or save the config and vocabulary beside the state dict)"
        )


@dataclass(frozen=True)
class Summary:
    """What an upload is, for the page's summary and the report of a refusal-free load."""

    file_name: str
    sha256: str
    size: int  # bytes as uploaded
    source: str  # "Attention Atlas bundle", "PyTorch state dict + config", ...
    architecture: str  # "couplet-rnn", "couplet-transformer", "hf-encoder", "hf-causal", "hf-seq2seq"
    description: str
    view: str  # "alignment" (one cross-attention head) or "heads" (layers × heads)
    parameters: int
    vocab_size: int
    layers: str  # "1", "6", "3 + 3" (encoder + decoder)
    heads: int
    seq2seq: bool  # a target can be force-decoded
    model_id: str
    compare: tuple[str, ...] = ()  # bundled models of the same family, closest first
    example: str = ""
    nonfinite: tuple[str, ...] = ()  # tensors holding NaN or ±inf
    notices: tuple[str, ...] = ()
    config: dict = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class Upload:
    summary: Summary
    adapter: Any = field(compare=False)
    nbytes: int = 0  # memory held by the model's tensors


# -- entry points --------------------------------------------------------------------------------


def load_bytes(
    data: bytes,
    name: str,
    answers: dict | None = None,
    device=None,
    limits: Limits | None = None,
    cache: UploadCache | None = None,
) -> Upload:
    """Check and load an upload; the same bytes (and answers) come from the cache the second time."""
    limits = limits or Limits.from_env()
    name = Path(name or "upload").name
    limits.check_size(len(data), name)
    digest = sha256(data)
    key = (digest, json.dumps(answers or {}, sort_keys=True, ensure_ascii=False))
    cache = CACHE if cache is None else cache
    return cache.get(key, lambda: _load(data, name, digest, dict(answers or {}), device, limits))


def load_path(
    path: str | Path, answers: dict | None = None, device=None, limits: Limits | None = None
) -> Upload:
    """``load_bytes`` of a file on disk; its size is checked before it is read."""
    path, limits = Path(path), limits or Limits.from_env()
    if not path.is_file():
        raise UploadError(f"no checkpoint file at {path}")
    limits.check_size(path.stat().st_size, path.name)
    return load_bytes(path.read_bytes(), path.name, answers, device, limits)


def parse_vocab(data: bytes, name: str) -> dict:
    """``{"src": tokens, "tgt": tokens or None}`` from ``vocab.json`` as ``cli.py train`` writes it
    (``{"src": [...], "tgt": [...] | null}``), ``Vocab.to_json`` (``{"tokens": [...]}``) or a JSON list.
    ``tgt`` None: one vocabulary for source and target (couplets)."""
    if len(data) > 16 * MB:
        raise UploadError(f"{name} is {len(data) / MB:,.1f} MB; a vocabulary file is a few MB at most")
    try:
        obj = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise UploadError(f"{name} is not a JSON vocabulary ({err})") from err
    src = obj.get("src", obj.get("tokens")) if isinstance(obj, dict) else obj
    tgt = obj.get("tgt") if isinstance(obj, dict) else None

    def is_tokens(x) -> bool:
        return isinstance(x, list) and all(isinstance(t, str) for t in x)

    if not is_tokens(src) or not (tgt is None or is_tokens(tgt)):
        raise UploadError(
            f'{name}: expected {{"src": [tokens…], "tgt": …}}, {{"tokens": [...]}} or a list of strings'
        )
    return {"src": src, "tgt": tgt}


def export_bytes(model_id: str) -> tuple[str, bytes]:
    """A bundled model's checkpoint exactly as ``cli.py export --model ID`` writes it (the page's demo)."""
    from models.registry import load

    adapter = load(model_id, "cpu")
    if not hasattr(adapter, "export"):
        raise UploadError(f"{model_id} has no checkpoint to export")
    with tempfile.TemporaryDirectory(prefix="atlas-export-") as tmp:
        path = adapter.export(Path(tmp) / f"{model_id}.safetensors")
        return path.name, path.read_bytes()


# -- the cache ------------------------------------------------------------------------------------


class UploadCache:
    """Loaded uploads by (SHA-256, answers), within ``max_bytes`` of tensors; least recently used out first.

    Thread-safe: Streamlit serves sessions from threads. Two sessions uploading the same file
    at once load it once (a lock per key); an upload larger than the whole bound is
    returned but not kept.
    """

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self.loads = 0  # how many times a loader actually ran (tests read it)
        self._items: OrderedDict[Any, Upload] = OrderedDict()
        self._lock = threading.Lock()
        self._key_locks: dict[Any, threading.Lock] = {}

    @property
    def total(self) -> int:
        return sum(u.nbytes for u in self._items.values())

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key) -> bool:
        return key in self._items

    def get(self, key, load: Callable[[], Upload]) -> Upload:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:
            with self._lock:
                if key in self._items:
                    self._items.move_to_end(key)
                    return self._items[key]
            upload = load()
            with self._lock:
                self.loads += 1
                self._key_locks.pop(key, None)
                if upload.nbytes <= self.max_bytes:
                    self._items[key] = upload
                    while self.total > self.max_bytes:
                        self._items.popitem(last=False)
            return upload

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


CACHE = UploadCache(int(float(os.environ.get("ATLAS_UPLOAD_CACHE_MB") or 1024) * MB))


# -- dispatch -------------------------------------------------------------------------------------


def _load(data: bytes, name: str, digest: str, answers: dict, device, limits: Limits) -> Upload:
    if device is None:
        from models.device import pick_device

        device = pick_device()
    ctx = _Context(name, digest, answers, device, limits, len(data))
    kind = sniff(data)
    if kind == "safetensors":
        specs, raw_meta = safetensors_header(data, name, limits)
        if raw_meta.get("format", "").startswith('"attention-atlas/'):  # our values are JSON strings
            return _from_bundle(ctx, data, specs, _decode_meta(raw_meta, name), "Attention Atlas bundle")
        # Anything else (Hugging Face writes {"format": "pt"}) carries no config: a bare state dict.
        return _from_state(ctx, load_safetensors(data, name), {}, "bare state dict (safetensors)")
    if kind == "zip":
        try:
            zf = zipfile.ZipFile(io.BytesIO(data))
        except zipfile.BadZipFile as err:
            raise UploadError(f"{name}: a damaged zip ({err})") from err
        with zf:
            infos = check_zip(zf, name, limits)
            if torch_zip_root(infos) is None:
                return _from_folder_zip(ctx, zf, infos)
        tensors, meta = _split_torch_object(torch_load(data, name, limits), name)
        source = "PyTorch state dict + config" if meta.get("config") else "bare state dict (PyTorch)"
        return _from_state(ctx, tensors, meta, source)
    if kind == "pickle":
        scan_pickle(data, name)  # names the first global it would import, if any
        raise UploadError(
            f"{name} is a bare pickle (or a pre-1.6 torch.save file); only torch.save's zip format, "
            "safetensors and zipped model folders are read"
        )
    raise UploadError(describe_refused_kind(kind, data, name))


@dataclass
class _Context:
    name: str
    digest: str
    answers: dict
    device: Any
    limits: Limits
    size: int
    notices: list[str] = field(default_factory=list)

    @property
    def model_id(self) -> str:
        return f"upload:{self.digest[:12]}"


def _decode_meta(raw: dict[str, str], name: str) -> dict:
    try:
        return {k: json.loads(v) for k, v in raw.items()}
    except json.JSONDecodeError as err:
        raise UploadError(f"{name}: its safetensors metadata is not JSON ({err})") from err


# -- our architectures ----------------------------------------------------------------------------


def _from_bundle(ctx: _Context, data: bytes, specs: dict[str, TensorSpec], meta: dict, source: str) -> Upload:
    if meta.get("format") == "attention-atlas/train-state":
        raise UploadError(f"{ctx.name} is a training state, not a model: upload the bundle the run wrote")
    arch = archs.for_meta(meta, ctx.name)
    if meta.get("format_version") != arch.bundle.file_format_version:
        raise UploadError(
            f"{ctx.name} is {arch.format} version {meta.get('format_version')!r}; "
            f"this app reads version {arch.bundle.file_format_version}"
        )
    cfg = archs.build_config(arch, meta.get("config"), ctx.name)
    _check_vocab(arch, cfg, meta, ctx.name)
    n_params = archs.check_tensors(arch, cfg, specs, ctx.name)
    with tempfile.TemporaryDirectory(prefix="atlas-upload-") as tmp:
        path = Path(tmp) / "model.safetensors"
        path.write_bytes(data)
        adapter = _build(lambda: arch.adapter(ctx.model_id, path, ctx.device), ctx.name)
    return _ours(ctx, arch, cfg, adapter, n_params, source)


def _from_state(ctx: _Context, tensors: dict, meta: dict, source: str) -> Upload:
    """A state dict with whatever metadata came with it: rebuild the bundle, then load that."""
    from models.storage.checkpoint import save_checkpoint

    tensors = _strip_wrappers(tensors)
    if meta.get("format") and meta.get("task"):
        arch = archs.for_meta(meta, ctx.name)
    elif ctx.answers.get("architecture"):
        arch = archs.by_name(ctx.answers["architecture"], ctx.name)
    else:
        raise NeedsAnswers(
            ctx.name,
            [
                Missing(
                    "architecture",
                    "the file does not say which model it belongs to (a Hugging Face model is "
                    "uploaded as a .zip of its folder)",
                    tuple(archs.names()),
                )
            ],
            {},
            None,
        )
    config = meta.get("config")
    shares = not isinstance(config, dict) or config.get("share_embeddings", True)
    for kept, dropped in arch.aliases:  # a state_dict() saved with a shared table holds it twice
        if shares and kept in tensors and dropped in tensors and _same(tensors[kept], tensors[dropped]):
            tensors = {k: v for k, v in tensors.items() if k != dropped}
    missing: list[Missing] = []
    if isinstance(config, dict):
        config = dict(config)
    else:
        try:
            config, missing = arch.infer({k: tuple(v.shape) for k, v in tensors.items()})
        except UploadError as err:  # the shapes say which tensors are absent; the message names the file
            raise UploadError(f"{ctx.name}: {err}") from err
        ctx.notices.append("config inferred from the tensor shapes: " + _config_line(config))
    still = []
    for m in missing:
        if m.field in ctx.answers:
            config[m.field] = ctx.answers[m.field]
        else:
            still.append(m)
    vocab, tgt_vocab = meta.get("src_vocab", meta.get("vocab")), meta.get("tgt_vocab")
    if vocab is None:
        vocab, tgt_vocab = _answered_vocab(ctx, arch, config, still)
    if still:
        raise NeedsAnswers(ctx.name, still, config, arch.name)
    cfg = archs.build_config(arch, config, ctx.name)
    full = {
        "format": arch.format,
        "format_version": arch.bundle.file_format_version,
        "task": arch.task,
        "tokenizer": meta.get("tokenizer", arch.tokenizer),
        "config": cfg.to_dict(),
        "src_vocab": vocab,
        "tgt_vocab": tgt_vocab,
        "info": {"model_id": ctx.model_id, "uploaded_as": ctx.name},
    }
    _check_vocab(arch, cfg, full, ctx.name)
    specs = {k: TensorSpec(_dtype_name(v), tuple(v.shape)) for k, v in tensors.items()}
    n_params = archs.check_tensors(arch, cfg, specs, ctx.name)
    with tempfile.TemporaryDirectory(prefix="atlas-upload-") as tmp:
        path = save_checkpoint(Path(tmp) / "model.safetensors", tensors, full)
        adapter = _build(lambda: arch.adapter(ctx.model_id, path, ctx.device), ctx.name)
    return _ours(ctx, arch, cfg, adapter, n_params, source)


def _answered_vocab(
    ctx: _Context, arch: Architecture, config: dict, still: list[Missing]
) -> tuple[list[str] | None, list[str] | None]:
    """``(source, target)`` vocabularies from the answers: tokens (``parse_vocab``'s dict or a
    list) or a bundled model's id; else a ``Missing`` that offers the bundled ones that fit."""
    sizes = (config.get("src_vocab_size"), config.get("tgt_vocab_size"))
    answer = ctx.answers.get("vocabulary")
    if isinstance(answer, str):
        pair = archs.bundled_vocab(answer)
        if pair is None:
            raise UploadError(f"{ctx.name}: the vocabulary of {answer} is not installed here")
        return pair
    if isinstance(answer, list):
        answer = {"src": answer, "tgt": None}
    if isinstance(answer, dict) and answer.get("src") is not None:
        if answer.get("tgt") is None and not arch.shared_vocab:
            raise UploadError(f"{ctx.name}: a {arch.title} needs a target vocabulary too (vocab.json 'tgt')")
        return answer["src"], answer.get("tgt")
    cfg_guess = _try_config(arch, config)

    def fits(model_id: str) -> bool:
        pair = archs.bundled_vocab(model_id)
        return pair is not None and (len(pair[0]), len(pair[1] or pair[0])) == sizes

    matching = tuple(m for m in (arch.compare(cfg_guess) if cfg_guess else ()) if fits(m))
    what = f"{sizes[0]} tokens" if arch.shared_vocab else f"{sizes[0]} source and {sizes[1]} target tokens"
    still.append(
        Missing(
            "vocabulary",
            f"a state dict holds no tokens: give the vocab.json written beside the weights ({what})",
            matching,
        )
    )
    return None, None


def _try_config(arch: Architecture, config: dict):
    try:
        return arch.bundle.config_class.from_dict(
            {"num_heads": 1, **config} if "d_model" in config else config
        )
    except (TypeError, ValueError, KeyError):
        return None


def _check_vocab(arch: Architecture, cfg, meta: dict, name: str) -> None:
    from models.text.vocab import Vocab

    src, tgt = meta.get("src_vocab"), meta.get("tgt_vocab")
    for what, tokens in (("source", src), ("target", tgt)):
        if tokens is not None and not (isinstance(tokens, list) and all(isinstance(t, str) for t in tokens)):
            raise UploadError(f"{name}: the {what} vocabulary is not a list of strings")
    if src is None:
        raise UploadError(f"{name} carries no vocabulary (src_vocab)")
    try:
        Vocab(src)
        if tgt is not None:
            Vocab(tgt)
    except ValueError as err:
        raise UploadError(f"{name}: {err}") from err
    n_tgt = len(src if tgt is None else tgt)
    if (len(src), n_tgt) != (cfg.src_vocab_size, cfg.tgt_vocab_size):
        raise UploadError(
            f"{name}: vocabularies of {len(src)}/{n_tgt} tokens but a config for "
            f"{cfg.src_vocab_size}/{cfg.tgt_vocab_size}"
        )


def _ours(ctx: _Context, arch: Architecture, cfg, adapter, n_params: int, source: str) -> Upload:
    model = adapter.bundle.model
    adapter.bundle.sha256 = ctx.digest  # records name the uploaded file, not our temporary copy
    layers, heads = arch.layers_heads(cfg)
    summary = Summary(
        file_name=ctx.name,
        sha256=ctx.digest,
        size=ctx.size,
        source=source,
        architecture=arch.name,
        description=f"{arch.title}: {arch.describe(cfg)}",
        view="alignment" if (layers, heads) == ("1", 1) else "heads",
        parameters=n_params,
        vocab_size=cfg.src_vocab_size,
        layers=layers,
        heads=heads,
        seq2seq=True,
        model_id=ctx.model_id,
        compare=arch.compare(cfg),
        example=arch.example,
        nonfinite=_nonfinite(model),
        notices=tuple(ctx.notices),
        config=cfg.to_dict(),
    )
    return Upload(summary, adapter, _nbytes(model))


def _split_torch_object(obj: Any, name: str) -> tuple[dict, dict]:
    import torch

    if not isinstance(obj, dict):
        raise UploadError(f"{name} holds a {type(obj).__name__}, not a dict of tensors")

    def all_tensors(d) -> bool:
        return isinstance(d, dict) and bool(d) and all(torch.is_tensor(v) for v in d.values())

    if all_tensors(obj):
        return dict(obj), {}
    for key in STATE_KEYS:
        if all_tensors(obj.get(key)):
            return dict(obj[key]), {k: v for k, v in obj.items() if k != key}
    raise UploadError(
        f"{name} holds no state dict: expected a dict of tensors, or one under "
        f"{' / '.join(repr(k) for k in STATE_KEYS)} beside the config"
    )


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


def _config_line(config: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in config.items())


def _build(make: Callable[[], Any], name: str):
    """Construct an adapter; any failure is one refusal line, never a traceback on the page."""
    try:
        return make()
    except UploadError:
        raise
    except Exception as err:
        raise UploadError(
            f"{name}: the model could not be built ({' '.join(str(err).split())[:300]})"
        ) from err


def _nonfinite(model) -> tuple[str, ...]:
    import torch

    return tuple(
        n for n, p in model.named_parameters() if p.is_floating_point() and not torch.isfinite(p).all()
    )


def _nbytes(model) -> int:
    tensors = [*model.parameters(), *model.buffers()]
    return sum(t.numel() * t.element_size() for t in {id(t): t for t in tensors}.values())


# -- zipped folders -------------------------------------------------------------------------------


def _from_folder_zip(ctx: _Context, zf: zipfile.ZipFile, infos: list[zipfile.ZipInfo]) -> Upload:
    from models.uploads import hf_folder

    members, skipped = hf_folder.pick_members(infos, ctx.name)
    risky = [f for f in skipped if f.endswith(RISKY_SUFFIXES)]
    other = [f for f in skipped if f not in risky]
    if risky:
        ctx.notices.append(f"never opened (code and pickles are not read from a zip): {', '.join(risky)}")
    if other:
        shown = ", ".join(other[:5]) + (", …" if len(other) > 5 else "")
        ctx.notices.append(f"skipped {len(other)} other file(s) that are not model data: {shown}")
    config = hf_folder.read_config(zf, members["config.json"], ctx.name)
    if str(config.get("format", "")).startswith("attention-atlas/"):  # our bundle folder, zipped
        weights = members.get("model.safetensors")
        if weights is None:
            raise UploadError(f"{ctx.name}: an Attention Atlas folder without model.safetensors")
        data = read_member(zf, weights, ctx.name, ctx.limits.max_inflated)
        specs, raw = safetensors_header(data, ctx.name, ctx.limits)
        return _from_bundle(
            ctx, data, specs, _decode_meta(raw, ctx.name), "Attention Atlas bundle folder (zip)"
        )
    ctx.notices.extend(hf_folder.check_config(config, ctx.name))
    with tempfile.TemporaryDirectory(prefix="atlas-upload-") as tmp:
        folder = Path(tmp)
        extract_members(zf, members, folder, ctx.name, ctx.limits)
        family, notices = hf_folder.check_weights(folder, ctx.name, ctx.limits)
        ctx.notices.extend(notices)

        def make():
            from models.adapters.hf import HFAdapter

            return HFAdapter(ctx.model_id, folder, ctx.device)

        adapter = _build(make, ctx.name)
    cfg = adapter.config
    if family == "seq2seq":
        layers = " + ".join(map(str, hf_folder.encoder_decoder_layers(cfg)))
    else:
        layers = str(adapter.n_layers)
    summary = Summary(
        file_name=ctx.name,
        sha256=ctx.digest,
        size=ctx.size,
        source="Hugging Face model folder (zip)",
        architecture=f"hf-{family}",
        description=f"Hugging Face {family}: {type(adapter.model).__name__} ({cfg.model_type})",
        view="heads",
        parameters=adapter.model.num_parameters(),
        vocab_size=len(adapter.tokenizer),
        layers=layers,
        heads=adapter.n_heads,
        seq2seq=family == "seq2seq",
        model_id=ctx.model_id,
        compare=hf_folder.COMPARE[family],
        example=hf_folder.EXAMPLES[family],
        nonfinite=_nonfinite(adapter.model),
        notices=tuple(ctx.notices),
        config={k: v for k, v in cfg.to_dict().items() if k in hf_folder.CONFIG_RANGES or k == "model_type"},
    )
    return Upload(summary, adapter, _nbytes(adapter.model))
