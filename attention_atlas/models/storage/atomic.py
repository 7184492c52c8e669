"""Files written whole or not at all, and cache folders that prove they are whole.

A file: ``atomic_write(path, data)`` (or ``with atomic_path(path) as tmp: <write tmp>``) writes a
temporary file in the same folder, fsyncs it, ``os.replace``\\ s it over ``path`` and fsyncs the
folder, so a process killed at any moment leaves the old file or the new one, never half of one.

A cache folder (the SmolLM2 conversion): ``ensure_folder(target, build)`` builds into a staging
folder beside ``target``, writes ``MANIFEST.json`` last (every file's size and SHA-256), then
renames the folder into place. Each later use checks the folder against its manifest (sizes,
safetensors headers against the file size, the SHA-256 of the small files): a truncated or
damaged cache is discarded and rebuilt, with a notice in the log and for the caller.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import json
import logging
import os
import shutil
import struct
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

log = logging.getLogger("attention_atlas.cache")

MANIFEST = "MANIFEST.json"
HASH_LIMIT = 64 << 20  # files up to this size have their SHA-256 checked on every use
STALE_SECONDS = 3600  # a staging folder or temporary file this old belongs to a killed writer


class CacheError(ValueError):
    """A cache that could not be built or checked."""


# -- one file -------------------------------------------------------------------------------------


@contextlib.contextmanager
def atomic_path(path: str | Path, mode: int = 0o644) -> Iterator[Path]:
    """A temporary path beside ``path`` to write; on a clean exit it replaces ``path`` durably."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    sweep(path.parent, f".{path.name}.")
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        fsync_file(tmp)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def atomic_write(path: str | Path, data: str | bytes, encoding: str = "utf-8") -> Path:
    """Write ``data`` (text as ``encoding``) to ``path`` whole or not at all."""
    raw = data.encode(encoding) if isinstance(data, str) else data
    with atomic_path(path) as tmp:
        tmp.write_bytes(raw)
    return Path(path)


def fsync_file(path: str | Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(folder: str | Path) -> None:
    """Make a rename inside ``folder`` durable (a no-op where the file system cannot)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


# -- checks ---------------------------------------------------------------------------------------


def sha256_of(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def safetensors_problem(path: str | Path) -> str | None:
    """What is wrong with a safetensors file's framing (header vs. size), or None if it holds together."""
    path = Path(path)
    size = path.stat().st_size
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) < 8:
            return f"{path.name} is {size} bytes, too short for a safetensors header"
        (n,) = struct.unpack("<Q", head)
        if n > size - 8:
            return f"{path.name} announces a {n:,}-byte header but holds {size:,} bytes"
        try:
            header = json.loads(f.read(n))
        except (UnicodeDecodeError, json.JSONDecodeError):
            return f"{path.name} has a header that is not JSON"
    if not isinstance(header, dict):
        return f"{path.name} has a header that is not a JSON object"
    try:
        end = max((int(t["data_offsets"][1]) for k, t in header.items() if k != "__metadata__"), default=0)
    except (KeyError, TypeError, ValueError, IndexError):
        return f"{path.name} has a header without data offsets"
    if 8 + n + end != size:
        return f"{path.name} is {size:,} bytes; its header describes {8 + n + end:,}"
    return None


def file_problem(path: Path, expected: dict, hash_limit: int = HASH_LIMIT) -> str | None:
    """What is wrong with ``path`` against its manifest entry ``{"size", "sha256"}``, or None."""
    if not path.is_file():
        return f"{path.name} is missing"
    size = path.stat().st_size
    if size != expected.get("size"):
        return f"{path.name} is {size:,} bytes; the manifest says {expected.get('size')!r}"
    if path.suffix == ".safetensors" and (why := safetensors_problem(path)):
        return why
    if size <= hash_limit and sha256_of(path) != expected.get("sha256"):
        return f"{path.name} does not match its SHA-256 in the manifest"
    return None


def folder_problem(folder: str | Path, hash_limit: int = HASH_LIMIT) -> str | None:
    """What is wrong with a cache folder (no manifest, a file missing, short or changed), or None."""
    folder = Path(folder)
    manifest = folder / MANIFEST
    if not manifest.is_file():
        return f"{folder.name} has no {MANIFEST} (an interrupted or older write)"
    try:
        files = json.loads(manifest.read_text(encoding="utf-8"))["files"]
        entries = list(files.items())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError, AttributeError):
        return f"{folder.name}/{MANIFEST} is unreadable"
    if not entries:
        return f"{folder.name}/{MANIFEST} lists no files"
    for name, expected in entries:
        if "/" in name or name in ("", ".", "..") or not isinstance(expected, dict):
            return f"{folder.name}/{MANIFEST} has a bad entry {name!r}"
        if why := file_problem(folder / name, expected, hash_limit):
            return why
    return None


def structure_problem(folder: Path) -> str | None:
    """For a folder without a manifest: every safetensors file framed right and every JSON parses."""
    files = [p for p in sorted(folder.iterdir()) if p.is_file()]
    if not files:
        return f"{folder.name} is empty"
    for p in files:
        if p.suffix == ".safetensors" and (why := safetensors_problem(p)):
            return why
        if p.suffix == ".json":
            try:
                json.loads(p.read_text(encoding="utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError):
                return f"{p.name} is not whole JSON"
    return None


def write_manifest(folder: str | Path) -> Path:
    """Record every file of ``folder`` (flat) with its size and SHA-256; written last, atomically."""
    folder = Path(folder)
    files = {}
    for p in sorted(folder.iterdir()):
        if p.is_file() and p.name != MANIFEST and not p.name.startswith("."):
            fsync_file(p)
            files[p.name] = {"size": p.stat().st_size, "sha256": sha256_of(p)}
    return atomic_write(folder / MANIFEST, json.dumps({"files": files}, indent=1) + "\n")


# -- a cache folder -------------------------------------------------------------------------------


def ensure_folder(
    target: str | Path, build: Callable[[Path], None], adopt: bool = False
) -> tuple[Path, list[str]]:
    """``target`` checked whole, else (re)built by ``build(staging)``; returns it and any notices.

    ``adopt``: a folder without a manifest (written before manifests existed) whose safetensors
    and JSON files hold together gets a manifest instead of a rebuild.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    with building(target):
        return _ensure(target, build, adopt)


@contextlib.contextmanager
def building(target: Path) -> Iterator[None]:
    """Held while one process checks or builds ``target``: another process (a second server, a second
    test worker) asking for it meanwhile waits, then finds it built, instead of building it again
    beside the first (a conversion takes a core for minutes). An advisory lock on a file beside the
    target, released by the system if its holder dies; where there is no ``fcntl``, no lock."""
    try:
        import fcntl
    except ImportError:  # not POSIX
        yield
        return
    with open(target.parent / f".{target.name}.lock", "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _ensure(target: Path, build: Callable[[Path], None], adopt: bool) -> tuple[Path, list[str]]:
    sweep(target.parent, f".{target.name}.", keep=f".{target.name}.lock")
    notices: list[str] = []
    if target.exists():
        why = folder_problem(target)
        if why is None:
            return target, notices
        if adopt and not (target / MANIFEST).exists() and structure_problem(target) is None:
            write_manifest(target)
            return target, notices
        notice = f"the cache {target} was damaged ({why}); it is being rebuilt"
        log.warning(notice)
        notices.append(notice)
        discard(target)
    _build_into(target, build)
    return target, notices


def _build_into(target: Path, build: Callable[[Path], None]) -> None:
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".staging", dir=target.parent))
    try:
        build(staging)
        write_manifest(staging)
        try:
            os.replace(staging, target)  # a folder: refused if another process put one there first
        except OSError:
            if folder_problem(target) is not None:
                raise
        fsync_dir(target.parent)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def discard(folder: Path) -> None:
    """Move a damaged folder out of the way at once (a rename), then delete it."""
    trash = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", suffix=".damaged", dir=folder.parent))
    os.replace(folder, trash / folder.name)
    shutil.rmtree(trash, ignore_errors=True)


def sweep(folder: Path, prefix: str, max_age: float = STALE_SECONDS, keep: str = "") -> None:
    """Delete what killed writers left in ``folder`` (names starting with ``prefix``, older than
    ``max_age``), ``keep`` (a lock file) left alone."""
    now = time.time()
    for p in folder.glob(f"{glob.escape(prefix)}*"):
        if p.name == keep:
            continue
        with contextlib.suppress(OSError):
            if now - p.stat().st_mtime > max_age:
                shutil.rmtree(p) if p.is_dir() else p.unlink()
