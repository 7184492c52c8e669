"""Checkpoints opened by a path on the server, for those that outgrow an upload (BERT-base: 440 MB).

Off unless the server sets ``ATLAS_LOCAL_PATHS=1``: a shared server must never read its own disk
for a visitor. ``ATLAS_LOCAL_ROOT`` (optional) keeps every path inside one folder, and
``ATLAS_LOCAL_MAX_MB`` (default 4096) caps the size. A path gives the same bytes an upload would:
a file as it is, a Hugging Face folder as a zip of its top-level files (links and subfolders are
left out). Those bytes then go through the same loader, checks and messages as an upload.
"""

from __future__ import annotations

import io
import os
import zipfile
from dataclasses import replace
from pathlib import Path

from attention_atlas.i18n import _
from attention_atlas.models.uploads.safety import MB, Limits, UploadError

SUFFIXES = (".safetensors", ".pt", ".pth", ".zip")


def allowed() -> bool:
    """Whether this server opens checkpoints by path (``ATLAS_LOCAL_PATHS=1``)."""
    return os.environ.get("ATLAS_LOCAL_PATHS", "").strip() == "1"


def local_limits(limits: Limits) -> Limits:
    """The upload limits with the size caps raised to ``ATLAS_LOCAL_MAX_MB`` (a folder is zipped unpacked)."""
    raw = os.environ.get("ATLAS_LOCAL_MAX_MB", "").strip() or "4096"
    if not raw.isdigit() or int(raw) == 0:
        raise UploadError(
            _("ATLAS_LOCAL_MAX_MB must be a whole number of megabytes above 0, not {raw!r}", raw=raw)
        )
    cap = int(raw) * MB
    return replace(limits, max_bytes=cap, max_inflated=max(cap, limits.max_inflated))


def resolve(text: str) -> Path:
    """The path typed, checked: allowed on this server, absolute after ~, inside ATLAS_LOCAL_ROOT, existing."""
    if not allowed():
        raise UploadError(
            _("opening checkpoints by path is switched off on this server (ATLAS_LOCAL_PATHS=1)")
        )
    text = (text or "").strip()
    if not text or "\x00" in text:
        raise UploadError(_("type the path of a checkpoint file or model folder on the server"))
    path = Path(text).expanduser().resolve()
    root = os.environ.get("ATLAS_LOCAL_ROOT", "").strip()
    if root and not path.is_relative_to(Path(root).expanduser().resolve()):
        raise UploadError(
            _(
                "{path} is outside the folder this server opens checkpoints from ({root})",
                path=path,
                root=root,
            )
        )
    if not path.exists():
        raise UploadError(_("there is no file or folder at {path}", path=path))
    return path


def read_local(text: str, limits: Limits) -> tuple[str, bytes]:
    """``(name, bytes)`` of the checkpoint at path ``text``, as if it had been uploaded."""
    path = resolve(text)
    if path.is_dir():
        return path.name + ".zip", _zip_folder(path, limits)
    if path.suffix.lower() not in SUFFIXES:
        raise UploadError(
            _(
                "{name} is not a checkpoint file; the inspector reads {suffixes}",
                name=path.name,
                suffixes=", ".join(SUFFIXES),
            )
        )
    _check_size(path.stat().st_size, path.name, limits)
    return path.name, path.read_bytes()


def _zip_folder(folder: Path, limits: Limits) -> bytes:
    """The folder's regular top-level files, stored uncompressed in one zip (the loader picks members)."""
    files = sorted(p for p in folder.iterdir() if p.is_file() and not p.is_symlink())
    if not files:
        raise UploadError(
            _("{folder} has no files; point at the folder save_pretrained wrote", folder=folder)
        )
    if len(files) > limits.max_members:
        raise UploadError(
            _("{folder} holds {n} files; a model folder has about ten", folder=folder, n=len(files))
        )
    _check_size(sum(p.stat().st_size for p in files), folder.name, limits)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as zf:
        for p in files:
            zf.write(p, f"{folder.name}/{p.name}")
    return buffer.getvalue()


def _check_size(size: int, name: str, limits: Limits) -> None:
    if size == 0:
        raise UploadError(_("{name} is empty (0 bytes)", name=name))
    if size > limits.max_bytes:
        raise UploadError(
            _(
                "{name} is {size:,.1f} MB; checkpoints opened by path are limited to "
                "{limit:,.0f} MB (ATLAS_LOCAL_MAX_MB on the server raises it)",
                name=name,
                size=size / MB,
                limit=limits.max_bytes / MB,
            )
        )
