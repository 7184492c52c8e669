"""The checks an uploaded file passes before anything reads it as a model. Nothing here runs code.

Order of business for a file from a stranger:

1. ``Limits.check_size``: the byte count, on the server (Streamlit's widget limit is
   enforced only in the browser).
2. ``sniff``: what the bytes are (safetensors, zip, pickle, text), by content, not by name.
3. Per kind: ``safetensors_header`` validates the header against the data it describes;
   ``check_zip`` refuses absolute paths, ``..``, links, encryption, too many members and
   too much inflated data; ``scan_pickle`` lists every global a pickle would import
   (``pickletools`` reads opcodes, it never executes them) and refuses any that is not a
   tensor rebuild or a plain container; only then does the torch reader
   (``models.uploads.readers.TorchSave``) call ``torch.load(weights_only=True)``, whose
   restricted unpickler is the second guard.

These are the checks; ``models.uploads.readers`` applies them, one reader per format.
Every refusal is one ``UploadError`` whose message names the file and the problem: each
check takes ``name``, what its messages call the file.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import math
import os
import pickletools
import re
import stat
import struct
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from attention_atlas.i18n import N_, _
from attention_atlas.models.storage.checkpoint import CheckpointError

MB = 1 << 20


class UploadError(CheckpointError):
    """An upload refused before or while loading; the message is one line that names the problem."""


def _env_mb(name: str, default: float) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return int(default * MB)
    try:
        value = float(raw)
    except ValueError as err:
        raise UploadError(_("{name}={raw!r} is not a number of megabytes", name=name, raw=raw)) from err
    if not value > 0:
        raise UploadError(_("{name}={raw!r} must be a positive number of megabytes", name=name, raw=raw))
    return int(value * MB)


@dataclass(frozen=True)
class Limits:
    """What an upload may be. ``Limits.from_env()`` reads the ``ATLAS_UPLOAD_*`` variables."""

    max_bytes: int = 200 * MB  # the file as uploaded (ATLAS_UPLOAD_MAX_MB)
    max_inflated: int = 1024 * MB  # a zip's members, unpacked, all together (ATLAS_UPLOAD_MAX_INFLATED_MB)
    max_members: int = 200  # a zip's entries; an HF folder has about ten (ATLAS_UPLOAD_MAX_MEMBERS)
    max_header: int = 16 * MB  # a safetensors JSON header; minilm's is 14 kB
    max_pickle: int = 16 * MB  # a torch file's data.pkl (names and shapes only; tensors live beside it)

    @classmethod
    def from_env(cls) -> Limits:
        members = os.environ.get("ATLAS_UPLOAD_MAX_MEMBERS", "").strip()
        return cls(
            max_bytes=_env_mb("ATLAS_UPLOAD_MAX_MB", 200),
            max_inflated=_env_mb("ATLAS_UPLOAD_MAX_INFLATED_MB", 1024),
            max_members=int(members) if members.isdigit() else cls.max_members,
        )

    def check_size(self, size: int, name: str) -> None:
        if size == 0:
            raise UploadError(_("{name} is empty (0 bytes)", name=name))
        if size > self.max_bytes:
            raise UploadError(
                _(
                    "{name} is {size:,.1f} MB; uploads are limited to {limit:,.0f} MB "
                    "(ATLAS_UPLOAD_MAX_MB on the server raises it)",
                    name=name,
                    size=size / MB,
                    limit=self.max_bytes / MB,
                )
            )


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# -- what the bytes are ------------------------------------------------------------------------


def sniff(data: bytes) -> str:
    """``safetensors``, ``zip`` (an HF folder or a torch.save file), ``pickle``, ``text`` or ``unknown``."""
    if data[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        return "zip"
    if len(data) >= 9:
        (n,) = struct.unpack("<Q", data[:8])
        if n < 1 << 32 and data[8:9] == b"{":  # truncated files too: the header check says so
            return "safetensors"
    if data[:1] == b"\x80" and data[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        return "pickle"  # a raw pickle, or torch.save's pre-1.6 format (pickles back to back)
    head = data[:4096]
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        text = None if b"\x00" in head else head.decode("latin-1")
    if text is not None and all(ch.isprintable() or ch in "\r\n\t" for ch in text[:1024]):
        return "text"
    return "unknown"


def describe_refused_kind(kind: str, data: bytes, name: str) -> str:
    if kind == "text":
        first = data[:40].decode("utf-8", "replace").splitlines()[0] if data.strip() else ""
        return _("{name} is a text file (it starts {first!r}), not a checkpoint", name=name, first=first)
    return _(
        "{name} is not a checkpoint this app reads (safetensors, a torch.save .pt/.pth, or a .zip "
        "of a model folder); its first bytes are {first}",
        name=name,
        first=data[:8].hex(" "),
    )


# -- safetensors ---------------------------------------------------------------------------------

DTYPE_BYTES = {
    "F64": 8,
    "F32": 4,
    "F16": 2,
    "BF16": 2,
    "I64": 8,
    "I32": 4,
    "I16": 2,
    "I8": 1,
    "U8": 1,
    "BOOL": 1,
}
FLOAT_DTYPES = {"F64", "F32", "F16", "BF16"}


@dataclass(frozen=True)
class TensorSpec:
    dtype: str  # safetensors' name: F32, F16, ...
    shape: tuple[int, ...]

    @property
    def numel(self) -> int:
        return math.prod(self.shape)


def safetensors_header(source: bytes | Path, name: str, limits: Limits) -> tuple[dict, dict]:
    """``(specs by tensor name, metadata)`` of a safetensors file (its bytes, or a path), fully checked.

    The header must describe the data exactly: every tensor's byte range has the size its
    dtype and shape need, the ranges tile the data area without gaps or overlaps, and the
    file is neither shorter nor longer than that. Only the header is read from a path.
    """
    if isinstance(source, Path):
        size = source.stat().st_size
        with open(source, "rb") as f:
            prefix = f.read(8)
            n = struct.unpack("<Q", prefix)[0] if len(prefix) == 8 else 0
            head = f.read(min(n, limits.max_header + 1))
    else:
        size, prefix = len(source), bytes(source[:8])
        n = struct.unpack("<Q", prefix)[0] if len(prefix) == 8 else 0
        head = bytes(source[8 : 8 + min(n, limits.max_header + 1)])
    if size < 8:
        raise UploadError(
            _("{name} is truncated: {size} bytes, not even a safetensors header length", name=name, size=size)
        )
    if n > limits.max_header:
        raise UploadError(
            _(
                "{name}: a safetensors header of {n:,} bytes is over the {limit:,} limit",
                name=name,
                n=n,
                limit=limits.max_header,
            )
        )
    if 8 + n > size:
        raise UploadError(
            _(
                "{name} is truncated: its header needs {n:,} bytes, the file has {after:,} after it",
                name=name,
                n=n,
                after=size - 8,
            )
        )
    try:
        header = json.loads(head.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise UploadError(
            _("{name}: the safetensors header is not JSON ({error})", name=name, error=err)
        ) from err
    if not isinstance(header, dict):
        raise UploadError(_("{name}: the safetensors header is not a JSON object", name=name))
    meta = header.pop("__metadata__", None) or {}
    if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
        raise UploadError(_("{name}: safetensors metadata must map strings to strings", name=name))
    specs, ranges = {}, []
    for tname, entry in header.items():
        try:
            dtype, shape, (begin, end) = entry["dtype"], entry["shape"], entry["data_offsets"]
        except (TypeError, KeyError, ValueError) as err:
            raise UploadError(
                _("{name}: tensor {tensor!r} has a malformed header entry", name=name, tensor=tname)
            ) from err
        if dtype not in DTYPE_BYTES:
            raise UploadError(
                _(
                    "{name}: tensor {tensor!r} has dtype {dtype!r}; accepted: {accepted}",
                    name=name,
                    tensor=tname,
                    dtype=dtype,
                    accepted=", ".join(DTYPE_BYTES),
                )
            )
        if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
            raise UploadError(
                _(
                    "{name}: tensor {tensor!r} has shape {shape!r}, not a list of sizes",
                    name=name,
                    tensor=tname,
                    shape=shape,
                )
            )
        if not all(isinstance(x, int) and x >= 0 for x in (begin, end)) or end < begin:
            raise UploadError(
                _(
                    "{name}: tensor {tensor!r} has byte range {span!r}",
                    name=name,
                    tensor=tname,
                    span=[begin, end],
                )
            )
        spec = TensorSpec(dtype, tuple(shape))
        need = spec.numel * DTYPE_BYTES[dtype]
        if end - begin != need:
            raise UploadError(
                _(
                    "{name}: tensor {tensor!r} is declared {dtype} {shape} ({need:,} bytes) "
                    "but its data is {size:,} bytes",
                    name=name,
                    tensor=tname,
                    dtype=dtype,
                    shape=list(shape),
                    need=need,
                    size=end - begin,
                )
            )
        specs[tname] = spec
        ranges.append((begin, end, tname))
    ranges.sort()
    at = 0
    for begin, end, tname in ranges:
        if begin < at:
            raise UploadError(
                _("{name}: tensor {tensor!r} overlaps the tensor before it", name=name, tensor=tname)
            )
        if begin > at:
            raise UploadError(
                _(
                    "{name}: tensor {tensor!r} leaves a gap of {gap:,} bytes",
                    name=name,
                    tensor=tname,
                    gap=begin - at,
                )
            )
        at = end
    body = size - 8 - n
    if at > body:
        raise UploadError(
            _(
                "{name} is truncated: its header describes {size:,} bytes of tensors, the file holds {body:,}",
                name=name,
                size=at,
                body=body,
            )
        )
    if at < body:
        raise UploadError(
            _(
                "{name} has {extra:,} bytes after its last tensor; the header does not describe them",
                name=name,
                extra=body - at,
            )
        )
    return specs, meta


def load_safetensors(data: bytes, name: str) -> dict[str, Any]:
    """The tensors of checked safetensors bytes (safetensors reads raw arrays; no code runs)."""
    from safetensors.torch import load

    try:
        return load(data)
    except Exception as err:  # the header was checked; this is a last line of defence
        raise UploadError(_("{name}: safetensors could not read it ({error})", name=name, error=err)) from err


# -- zip -----------------------------------------------------------------------------------------

_DRIVE = re.compile(r"^[A-Za-z]:")


def check_zip(zf: zipfile.ZipFile, name: str, limits: Limits) -> list[zipfile.ZipInfo]:
    """The members of a zip that passes every check; refuses before anything is inflated."""
    infos = zf.infolist()
    if len(infos) > limits.max_members:
        raise UploadError(
            _(
                "{name} has {n:,} members; at most {limit} are accepted",
                name=name,
                n=len(infos),
                limit=limits.max_members,
            )
        )
    total = 0
    for info in infos:
        member = info.filename
        if "\x00" in member or member.startswith(("/", "\\")) or _DRIVE.match(member):
            raise UploadError(_("{name}: member {member!r} has an absolute path", name=name, member=member))
        if ".." in re.split(r"[/\\]", member):
            raise UploadError(
                _("{name}: member {member!r} climbs out of the folder with '..'", name=name, member=member)
            )
        mode = info.external_attr >> 16
        if stat.S_ISLNK(mode):
            raise UploadError(
                _(
                    "{name}: member {member!r} is a symbolic link; links are not accepted",
                    name=name,
                    member=member,
                )
            )
        if info.flag_bits & 0x1:
            raise UploadError(_("{name}: member {member!r} is encrypted", name=name, member=member))
        total += info.file_size
        if total > limits.max_inflated:
            raise UploadError(
                _(
                    "{name} unpacks to more than {limit:,.0f} MB "
                    "(member {member!r} alone declares {size:,.1f} MB); refused as a zip bomb",
                    name=name,
                    limit=limits.max_inflated / MB,
                    member=member,
                    size=info.file_size / MB,
                )
            )
    return infos


def read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, name: str, cap: int) -> bytes:
    """A member's bytes, counted while inflating: a size header that lies cannot get past ``cap``."""
    out = io.BytesIO()
    with _damaged(name, info), zf.open(info) as src:
        while block := src.read(1 << 20):
            out.write(block)
            if out.tell() > min(cap, info.file_size):
                raise UploadError(
                    _(
                        "{name}: member {member!r} inflates past its declared size; refused",
                        name=name,
                        member=info.filename,
                    )
                )
    return out.getvalue()


@contextlib.contextmanager
def _damaged(name: str, info: zipfile.ZipInfo):
    """A corrupt member (bad CRC, a size header that lies, an unknown compression) is a refusal."""
    try:
        yield
    except UploadError:
        raise
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, ValueError) as err:
        raise UploadError(
            _("{name}: member {member!r} is damaged ({error})", name=name, member=info.filename, error=err)
        ) from err


def extract_members(
    zf: zipfile.ZipFile, members: dict[str, zipfile.ZipInfo], folder: Path, name: str, limits: Limits
) -> None:
    """Write ``members`` (flat file name → info) into ``folder`` (fresh), counting inflated bytes."""
    budget = limits.max_inflated
    for target, info in members.items():
        if "/" in target or target in ("", ".", ".."):
            raise UploadError(_("{name}: refusing to write {target!r}", name=name, target=target))
        dest = folder / target
        written = 0
        with _damaged(name, info), zf.open(info) as src, open(dest, "xb") as out:  # "x": never overwrite
            while block := src.read(1 << 20):
                written += len(block)
                budget -= len(block)
                if written > info.file_size or budget < 0:
                    raise UploadError(
                        _(
                            "{name}: member {member!r} inflates past its declared size or the "
                            "{limit:,.0f} MB cap; refused as a zip bomb",
                            name=name,
                            member=info.filename,
                            limit=limits.max_inflated / MB,
                        )
                    )
                out.write(block)


def torch_zip_root(infos: list[zipfile.ZipInfo]) -> str | None:
    """The record folder of a ``torch.save`` zip (``<root>/data.pkl``), else None."""
    for info in infos:
        parts = PurePosixPath(info.filename).parts
        if len(parts) == 2 and parts[1] == "data.pkl":
            return parts[0]
    return None


# -- pickle --------------------------------------------------------------------------------------

_STORAGES = (
    "FloatStorage",
    "DoubleStorage",
    "HalfStorage",
    "BFloat16Storage",
    "LongStorage",
    "IntStorage",
    "ShortStorage",
    "CharStorage",
    "ByteStorage",
    "BoolStorage",
)
_DTYPES = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool")
ALLOWED_GLOBALS = frozenset(
    {
        ("collections", "OrderedDict"),
        ("torch._utils", "_rebuild_tensor_v2"),
        ("torch._utils", "_rebuild_parameter"),
        ("torch._utils", "_rebuild_parameter_with_state"),
        ("torch", "Size"),
        *(("torch", s) for s in _STORAGES),
        *(("torch", d) for d in _DTYPES),
    }
)
_STRING_OPS = {
    "SHORT_BINUNICODE",
    "BINUNICODE",
    "BINUNICODE8",
    "UNICODE",
    "SHORT_BINSTRING",
    "BINSTRING",
    "STRING",
}
_MEMO_GET = {"GET", "BINGET", "LONG_BINGET"}
_MEMO_PUT = {"PUT", "BINPUT", "LONG_BINPUT"}
_NO_STACK = {"PROTO", "FRAME"}
_UNRESOLVED = object()


def scan_pickle(data: bytes, name: str) -> set[tuple[str, str]]:
    """Every ``(module, name)`` a pickle would import, read from its opcodes without running it.

    Refuses any global outside ``ALLOWED_GLOBALS`` (tensor rebuilds, storages, dtypes,
    OrderedDict). ``STACK_GLOBAL`` takes its two names from the stack; they are followed
    through string pushes and the memo, and a name that cannot be followed is refused.
    """
    found: set[tuple[str, str]] = set()
    last: list[Any] = []  # what the previous opcodes pushed: a str, or _UNRESOLVED
    memo: dict[int, Any] = {}
    try:
        for op, arg, _pos in pickletools.genops(data):
            kind = op.name
            if kind in _NO_STACK:
                continue
            if kind in _MEMO_PUT:
                memo[int(arg)] = last[-1] if last else _UNRESOLVED
                continue
            if kind == "MEMOIZE":
                memo[len(memo)] = last[-1] if last else _UNRESOLVED
                continue
            if kind == "GLOBAL":
                module, __, attr = str(arg).partition(" ")
                found.add(_allowed(module, attr, name))
                last.append(_UNRESOLVED)
            elif kind == "STACK_GLOBAL":
                module, attr = (last[-2], last[-1]) if len(last) >= 2 else (_UNRESOLVED, _UNRESOLVED)
                if not (isinstance(module, str) and isinstance(attr, str)):
                    raise UploadError(
                        _("{name}: the pickle imports a global whose name cannot be read; refused", name=name)
                    )
                found.add(_allowed(module, attr, name))
                last.append(_UNRESOLVED)
            elif kind in ("EXT1", "EXT2", "EXT4"):
                raise UploadError(
                    _("{name}: the pickle imports through the copyreg extension registry; refused", name=name)
                )
            elif kind == "INST":
                module, __, attr = str(arg).partition(" ")
                _allowed(module, attr, name)
            elif kind in _STRING_OPS:
                last.append(arg if isinstance(arg, str) else _UNRESOLVED)
            elif kind in _MEMO_GET:
                last.append(memo.get(int(arg), _UNRESOLVED))
            else:
                last.append(_UNRESOLVED)
            del last[:-2]  # STACK_GLOBAL only ever needs the two most recent pushes
            if kind == "STOP":
                break
    except UploadError:
        raise
    except Exception as err:  # genops raises ValueError on garbage
        raise UploadError(_("{name}: the pickle is malformed ({error})", name=name, error=err)) from err
    return found


def _allowed(module: str, attr: str, name: str) -> tuple[str, str]:
    if (module, attr) in ALLOWED_GLOBALS:
        return module, attr
    if module.startswith(("torch.nn", "models.", "transformers")) or attr[:1].isupper():
        message = N_(
            "{name}: the pickle would import {module}.{attr} (a pickled object or module: save its "
            "state_dict() instead); only tensors, numbers, strings, lists and dicts are accepted, nothing is run"
        )
    else:
        message = N_(
            "{name}: the pickle would import {module}.{attr}; only tensors, numbers, strings, "
            "lists and dicts are accepted, nothing is run"
        )
    raise UploadError(_(message, name=name, module=module, attr=attr))
