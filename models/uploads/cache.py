"""Loaded uploads kept within a memory bound, so the same file twice loads once."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from models.uploads.incoming import Upload
from models.uploads.safety import MB


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
