"""At most ``ATLAS_MAX_MODELS`` models loaded in this process; the least recently used goes first.

A server that offers every model would otherwise keep each one it ever loaded (SmolLM2 alone
is about 0.6 GB). ``Resident.get(model_id)`` returns the loaded adapter, loading it on first
use; when a load makes more than ``limit`` models resident, the one used longest ago is
dropped and its memory handed back (a full garbage collection, then glibc's ``malloc_trim``).
Two threads asking for the same model at once load it once.

Loading also ends with ``settle()``: everything alive then (torch, transformers, the model's
own objects) moves into the interpreter's permanent generation (``gc.freeze``), so that the
full collections that follow, which Streamlit runs after every script run, no longer walk
half a million long-lived objects while holding the interpreter lock (0.6–1.6 s each on a
busy 2-core machine before; well under 10 ms after). Dropping a model unfreezes first, so
nothing it held stays behind.

No Streamlit here: the pages reach it through ``ui.cached.adapter``; the command line can use
it as well.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import gc
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

ENV_VAR = "ATLAS_MAX_MODELS"
DEFAULT_LIMIT = 6  # every bundled model a class visits (2 couplet RNNs, 2 translators, 2 Transformers)


def max_models(environ: dict[str, str] | None = None) -> int:
    """``ATLAS_MAX_MODELS`` (default 6); a value that is not a whole number ≥ 1 is one clear error."""
    raw = (os.environ if environ is None else environ).get(ENV_VAR, "").strip()
    if not raw:
        return DEFAULT_LIMIT
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"{ENV_VAR}={raw!r} must be a whole number ≥ 1")
    return int(raw)


def _registry_load(model_id: str) -> Any:
    from models.registry import load

    return load(model_id)


class Resident:
    """Loaded adapters by id, least recently used first; at most ``limit`` of them."""

    def __init__(self, limit: int | None = None, loader: Callable[[str], Any] | None = None):
        self.limit = max_models() if limit is None else limit
        if self.limit < 1:
            raise ValueError(f"at most {self.limit} models resident: the limit must be ≥ 1")
        self._load = loader or _registry_load
        self._models: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()
        self._gates: dict[str, threading.Lock] = {}  # one per model id: a model loads once at a time
        self.loads: dict[str, int] = {}  # how often each model was loaded
        self.evictions: dict[str, int] = {}  # how often each model was dropped to make room

    def get(self, model_id: str) -> Any:
        """The adapter of ``model_id``, loaded on first use (or again, after it was dropped)."""
        found = self._touch(model_id)
        if found is not None:
            return found
        with self._gate(model_id):
            found = self._touch(model_id)  # another thread may have loaded it meanwhile
            if found is not None:
                return found
            adapter = self._load(model_id)
            with self._lock:
                self._models[model_id] = adapter
                self.loads[model_id] = self.loads.get(model_id, 0) + 1
                dropped = self._over_limit()
            release(dropped)
            return adapter

    def resident(self) -> list[str]:
        """The ids loaded now, least recently used first."""
        with self._lock:
            return list(self._models)

    def was_evicted(self, model_id: str) -> bool:
        """Whether ``model_id`` was dropped at least once to make room for another model."""
        return self.evictions.get(model_id, 0) > 0

    def drop(self, model_id: str) -> bool:
        """Unload ``model_id`` now (True if it was loaded)."""
        with self._lock:
            adapter = self._models.pop(model_id, None)
        if adapter is None:
            return False
        release([adapter])
        return True

    def clear(self) -> None:
        with self._lock:
            dropped, self._models = list(self._models.values()), OrderedDict()
        release(dropped)

    def _touch(self, model_id: str) -> Any | None:
        with self._lock:
            if model_id in self._models:
                self._models.move_to_end(model_id)
                return self._models[model_id]
            return None

    def _gate(self, model_id: str) -> threading.Lock:
        with self._lock:
            return self._gates.setdefault(model_id, threading.Lock())

    def _over_limit(self) -> list[Any]:
        dropped = []
        while len(self._models) > self.limit:
            old_id, adapter = self._models.popitem(last=False)
            self.evictions[old_id] = self.evictions.get(old_id, 0) + 1
            dropped.append(adapter)
        return dropped


def release(adapters: list[Any]) -> None:
    """Let ``adapters`` go and hand their memory back to the system, then settle again."""
    if not adapters:
        settle()
        return
    adapters.clear()
    gc.unfreeze()  # what a frozen model held must be collectable again
    gc.collect()
    trim()
    settle()


def settle() -> None:
    """Collect garbage once, then freeze what is left (see the module docstring)."""
    gc.collect()
    gc.freeze()


M_ARENA_MAX = -8  # glibc's mallopt parameter number for the most malloc arenas
ARENAS = 2


@functools.cache
def limit_arenas(arenas: int = ARENAS) -> bool:
    """At most ``arenas`` glibc malloc arenas in this process from now on (True if it took).

    glibc gives threads that contend their own arena, up to eight per core; a server runs each
    session's script in a thread of its own, and what thirty sessions freed, scattered over a
    dozen arenas, did not go back: 23 % above the idle server two minutes after a class left,
    3 % with two arenas (bench_load, 30 sessions). An explicit ``MALLOC_ARENA_MAX`` wins."""
    if os.environ.get("MALLOC_ARENA_MAX"):
        return False
    libc = _glibc()
    return bool(libc and libc.mallopt(M_ARENA_MAX, arenas))


KERNEL_CACHE = 64  # oneDNN kernels kept, one per op and shape


def limit_kernel_cache(capacity: int = KERNEL_CACHE) -> None:
    """At most ``capacity`` compiled oneDNN kernels kept, for a process that has not run torch yet.

    oneDNN keeps one per op and input shape it has seen, 1,024 by default; a server sees every
    input length, so the cache only fills. Over 600 minilm inputs of 3–300 words, 64 left 3 MB
    in the process against 9 MB, at the same speed (0 kept nothing and cost 15 %). oneDNN reads
    ``ONEDNN_PRIMITIVE_CACHE_CAPACITY`` when it makes its first kernel; an explicit value wins."""
    os.environ.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", str(capacity))


def launch_env() -> dict[str, str]:
    """What a server needs in its environment from its start (``make run`` sets the same): two
    malloc arenas for every thread, those made before ``app.py`` runs too. An explicit value wins."""
    return {"MALLOC_ARENA_MAX": os.environ.get("MALLOC_ARENA_MAX", str(ARENAS))}


def trim() -> None:
    """glibc keeps freed memory in its heap; ``malloc_trim`` returns it. A no-op without glibc."""
    libc = _glibc()
    if libc:
        libc.malloc_trim(0)


@functools.cache
def _glibc():
    """The C library with glibc's malloc controls, or None (another libc, another system)."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL("libc.so.6")
        if hasattr(libc, "malloc_trim") and hasattr(libc, "mallopt"):
            return libc
    return None
