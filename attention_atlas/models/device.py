"""The one place that decides where tensors live.

CUDA first, then Apple's MPS, then the CPU. Set ``ATLAS_DEVICE=cpu`` (or ``cuda``,
``cuda:1``, ``mps``) to override, e.g. to compare speeds or to keep a GPU free.
"""

from __future__ import annotations

import os

import torch

from attention_atlas.i18n import _, later, ngettext

ENV_VAR = "ATLAS_DEVICE"
THREADS_VAR = "ATLAS_THREADS"  # CPU threads for torch; 1 is fastest on a busy 2-core machine


class DeviceError(ValueError):
    """The requested device does not exist on this machine."""


def _mps_available() -> bool:
    backend = getattr(torch.backends, "mps", None)
    return bool(backend and backend.is_available())


def pick_device(override: str | None = None) -> torch.device:
    """Return the device to run on: ``override``, else ``$ATLAS_DEVICE``, else the best one here.

    >>> pick_device("cpu")
    device(type='cpu')
    """
    _configure_threads()
    wanted = (override or os.environ.get(ENV_VAR, "")).strip().lower()
    if not wanted:
        if torch.cuda.is_available():
            return torch.device("cuda")
        if _mps_available():
            return torch.device("mps")
        return torch.device("cpu")
    try:
        device = torch.device(wanted)
    except RuntimeError as err:
        raise DeviceError(
            later("{var}={wanted!r} is not a device name (try cpu, cuda, mps)", var=ENV_VAR, wanted=wanted)
        ) from err
    if device.type == "cuda" and not torch.cuda.is_available():
        raise DeviceError(
            later("{var}={wanted!r} asks for CUDA, but no CUDA GPU is visible", var=ENV_VAR, wanted=wanted)
        )
    if device.type == "mps" and not _mps_available():
        raise DeviceError(
            later("{var}={wanted!r} asks for MPS, but MPS is not available", var=ENV_VAR, wanted=wanted)
        )
    return device


def _configure_threads() -> None:
    threads = os.environ.get(THREADS_VAR, "").strip()
    if not threads:
        return
    if not threads.isdigit() or int(threads) < 1:
        raise DeviceError(
            later("{var}={threads!r} must be a whole number ≥ 1", var=THREADS_VAR, threads=threads)
        )
    torch.set_num_threads(int(threads))


def describe(device: torch.device) -> str:
    """A short human label in the language in force: 'CUDA (NVIDIA H100)', 'MPS (Apple GPU)',
    'CPU (2 threads)'."""
    if device.type == "cuda":
        return _("CUDA ({name})", name=torch.cuda.get_device_name(device))
    if device.type == "mps":
        return _("MPS (Apple GPU)")
    n = torch.get_num_threads()
    return ngettext("CPU ({n} thread)", "CPU ({n} threads)", n).format(n=n)


def autocast(device: torch.device):
    """Mixed precision on CUDA only; a no-op context elsewhere (CPU/MPS stay float32)."""
    return torch.autocast("cuda", dtype=torch.float16, enabled=device.type == "cuda")
