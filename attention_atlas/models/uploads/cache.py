"""Loaded uploads kept within a memory bound, so the same file twice loads once.

The cache is shared by every session of a server, so it keeps only what the bytes (and the
answers) decide: the model and its summary, with no file name. Each caller gets the upload
under the name it gave; nothing of one session's upload reaches another's page.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from attention_atlas.models.uploads.incoming import Upload
from attention_atlas.models.uploads.safety import MB


class UploadCache:
    """Loaded uploads by (SHA-256, answers), within ``max_bytes`` of tensors; least recently used out first.

    Thread-safe: Streamlit serves sessions from threads. Two sessions uploading the same file
    at once load it once (a lock per key); an upload larger than the whole bound is
    returned but not kept. Kept uploads carry no file name: ``get(key, load, name)`` returns
    the same model under the caller's ``name``.
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

    def get(self, key, load: Callable[[], Upload], name: str = "") -> Upload:
        """The upload of ``key``, loaded by ``load()`` unless kept, named ``name`` for this caller."""
        return named(self._get(key, load), name)

    def _get(self, key, load: Callable[[], Upload]) -> Upload:
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
            upload = named(load(), "")  # what the next caller may see: nothing of this one's
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


def named(upload: Upload, name: str) -> Upload:
    """``upload`` (the same model) with its summary under the file name ``name``."""
    return replace(upload, summary=replace(upload.summary, file_name=name))


CACHE = UploadCache(int(float(os.environ.get("ATLAS_UPLOAD_CACHE_MB") or 1024) * MB))
