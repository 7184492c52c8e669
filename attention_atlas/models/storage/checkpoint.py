"""Self-describing checkpoints: safetensors tensors + JSON metadata in the same file.

Loading never executes code: safetensors holds raw tensors and a string → string header,
and the header carries everything needed to rebuild the model (format tag, config,
vocabularies). Each metadata value is a JSON string::

    save_checkpoint("m.safetensors", model.state_dict(), {"format": FORMAT, "config": {...}})
    tensors, meta = load_checkpoint("m.safetensors")

``dtype="float16"`` halves the file; loading upcasts to float32 (``load_checkpoint``
returns what is stored, ``upcast=True`` by default).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import torch

from attention_atlas.models.storage.atomic import atomic_path

FORMAT_KEY = "format"


class CheckpointError(ValueError):
    """A file that is not a checkpoint this code can rebuild."""


def save_checkpoint(
    path: str | Path, tensors: dict[str, torch.Tensor], meta: dict[str, Any], dtype: str = "float32"
) -> Path:
    """Write ``tensors`` and ``meta`` (each value JSON-encoded) to one safetensors file."""
    from safetensors.torch import save_file

    if FORMAT_KEY not in meta:
        raise CheckpointError("checkpoint metadata needs a 'format' tag")
    cast = {"float32": torch.float32, "float16": torch.float16}[dtype]
    out = {}
    for name, t in tensors.items():
        t = t.detach().to("cpu")
        out[name] = (t.to(cast) if t.is_floating_point() else t).contiguous()
    header = {k: json.dumps(v, ensure_ascii=False) for k, v in meta.items()}
    header["stored_dtype"] = json.dumps(dtype)
    path = Path(path)
    with atomic_path(path) as tmp:  # a run cut off mid-write leaves the last good file
        save_file(out, str(tmp), metadata=header)
    return path


def read_meta(path: str | Path) -> dict[str, Any]:
    """The decoded metadata of a checkpoint, without reading its tensors."""
    from safetensors import safe_open

    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"no checkpoint file at {path}")
    try:
        with safe_open(str(path), framework="pt") as f:
            raw = f.metadata() or {}
    except Exception as err:  # safetensors raises its own error types for foreign files
        raise CheckpointError(f"{path.name} is not a safetensors file ({err})") from err
    try:
        meta = {k: json.loads(v) for k, v in raw.items()}
    except json.JSONDecodeError as err:
        raise CheckpointError(f"{path.name} has metadata that is not JSON ({err})") from err
    if FORMAT_KEY not in meta:
        raise CheckpointError(f"{path.name} carries no 'format' tag; it was not written by this app")
    return meta


def load_checkpoint(path: str | Path, upcast: bool = True) -> tuple[dict[str, torch.Tensor], dict]:
    """``(tensors, meta)``; float16 tensors come back as float32 unless ``upcast=False``."""
    from safetensors.torch import load_file

    meta = read_meta(path)
    tensors = load_file(str(path))
    if upcast:
        tensors = {k: (v.float() if v.is_floating_point() else v) for k, v in tensors.items()}
    return tensors, meta


def file_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def unique_state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """``state_dict`` without aliases (a shared embedding appears once; safetensors insists)."""
    seen, out = set(), {}
    for name, t in model.state_dict().items():
        key = (t.data_ptr(), t.shape, t.dtype)
        if key in seen:
            continue
        seen.add(key)
        out[name] = t
    return out


def load_unique_state(model: torch.nn.Module, tensors: dict[str, torch.Tensor]) -> None:
    expected = unique_state(model)
    missing = sorted(set(expected) - set(tensors))
    extra = sorted(set(tensors) - set(expected))
    if missing or extra:
        raise ValueError(f"weights do not fit the model: missing {missing[:5]}, unexpected {extra[:5]}")
    for name, t in expected.items():
        if tensors[name].shape != t.shape:
            raise ValueError(
                f"weight {name} has shape {tuple(tensors[name].shape)}, the model needs {tuple(t.shape)}"
            )
    model.load_state_dict(tensors, strict=False)
