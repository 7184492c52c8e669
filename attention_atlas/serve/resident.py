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
it as well. The process-wide parts (``settle``, ``trim``) are ``serve.process``.
"""

from __future__ import annotations

import gc
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from attention_atlas.serve.lanes import whole
from attention_atlas.serve.process import settle, trim

ENV_VAR = "ATLAS_MAX_MODELS"
DEFAULT_LIMIT = 6  # every bundled model a class visits (2 couplet RNNs, 2 translators, 2 Transformers)


def max_models(environ: dict[str, str] | None = None) -> int:
    """``ATLAS_MAX_MODELS`` (default 6); a value that is not a whole number ≥ 1 is one clear error."""
    return whole(ENV_VAR, DEFAULT_LIMIT, environ)


LOADS = "load_seconds.json"  # in the cache folder: how long each model's last load took on this machine


def remember_load(model_id: str, seconds: float) -> None:
    """Keep how long ``model_id`` took to load, for the next wait's hint (``last_load``); a cache
    folder that cannot be written keeps nothing, and loses nothing else."""
    from attention_atlas.models.storage.atomic import atomic_write
    from attention_atlas.paths import cache_dir

    try:
        loads = _loads()
        loads[model_id] = round(seconds, 1)
        cache_dir().mkdir(parents=True, exist_ok=True)
        atomic_write(cache_dir() / LOADS, json.dumps(loads, sort_keys=True))
    except OSError:
        pass


def last_load(model_id: str) -> float | None:
    """Seconds ``model_id``'s last load took on this machine, if one is on record."""
    seconds = _loads().get(model_id)
    return float(seconds) if isinstance(seconds, int | float) else None


def _loads() -> dict:
    from attention_atlas.paths import cache_dir

    try:
        found = json.loads((cache_dir() / LOADS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _registry_load(model_id: str) -> Any:
    from attention_atlas.models.registry import load

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
            started = time.perf_counter()
            adapter = self._load(model_id)
            remember_load(model_id, time.perf_counter() - started)
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


