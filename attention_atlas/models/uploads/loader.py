"""Bytes from a stranger → a checked, cached adapter and a summary of what it holds.

    upload = load_bytes(data, "mine.safetensors")          # or load_path("mine.pt")
    upload.summary.architecture, upload.summary.parameters  # 'couplet-rnn', 2_600_000
    upload.adapter.run("两个黄鹂鸣翠柳").records["cross"]       # the same records as a bundled model

The way down, once: the size is checked, the file becomes one ``Incoming`` (name, bytes,
limits, answers), and ``readers.read`` hands it to the one reader that claims its format
(``models.uploads.readers`` lists them). A file is identified by its SHA-256 and the
answers given; ``CACHE`` keeps loaded ones within a memory bound, so the same file twice
loads once.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from attention_atlas.i18n import _
from attention_atlas.models.uploads.cache import CACHE, UploadCache
from attention_atlas.models.uploads.incoming import Incoming, Upload
from attention_atlas.models.uploads.readers import read
from attention_atlas.models.uploads.safety import MB, Limits, UploadError


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
    f = Incoming(Path(name or "upload").name, data, limits, dict(answers or {}), device)
    limits.check_size(f.size, f.name)
    return (CACHE if cache is None else cache).get(f.cache_key, lambda: _read(f), f.name)


def load_path(
    path: str | Path, answers: dict | None = None, device=None, limits: Limits | None = None
) -> Upload:
    """``load_bytes`` of a file on disk; its size is checked before it is read."""
    path, limits = Path(path), limits or Limits.from_env()
    if not path.is_file():
        raise UploadError(_("no checkpoint file at {path}", path=path))
    limits.check_size(path.stat().st_size, path.name)
    return load_bytes(path.read_bytes(), path.name, answers, device, limits)


def _read(f: Incoming) -> Upload:
    if f.device is None:
        from attention_atlas.models.device import pick_device

        f.device = pick_device()
    return read(f)


def parse_vocab(data: bytes, name: str) -> dict:
    """``{"src": tokens, "tgt": tokens or None}`` from ``vocab.json`` as ``atlas train`` writes it
    (``{"src": [...], "tgt": [...] | null}``), ``Vocab.to_json`` (``{"tokens": [...]}``) or a JSON list.
    ``tgt`` None: one vocabulary for source and target (couplets)."""
    if len(data) > 16 * MB:
        raise UploadError(
            _(
                "{name} is {size:,.1f} MB; a vocabulary file is a few MB at most",
                name=name,
                size=len(data) / MB,
            )
        )
    try:
        obj = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise UploadError(_("{name} is not a JSON vocabulary ({error})", name=name, error=err)) from err
    src = obj.get("src", obj.get("tokens")) if isinstance(obj, dict) else obj
    tgt = obj.get("tgt") if isinstance(obj, dict) else None

    def is_tokens(x) -> bool:
        return isinstance(x, list) and all(isinstance(t, str) for t in x)

    if not is_tokens(src) or not (tgt is None or is_tokens(tgt)):
        raise UploadError(
            _(
                "{name}: expected {src}, {tokens} or a list of strings",
                name=name,
                src='{"src": [tokens…], "tgt": …}',
                tokens='{"tokens": [...]}',
            )
        )
    return {"src": src, "tgt": tgt}


def export_bytes(model_id: str) -> tuple[str, bytes]:
    """A bundled model's checkpoint exactly as ``atlas export --model ID`` writes it (the page's demo)."""
    from attention_atlas.models.registry import load

    adapter = load(model_id, "cpu")
    if not hasattr(adapter, "export"):
        raise UploadError(_("{model} has no checkpoint to export", model=model_id))
    with tempfile.TemporaryDirectory(prefix="atlas-export-") as tmp:
        path = adapter.export(Path(tmp) / f"{model_id}.safetensors")
        return path.name, path.read_bytes()
