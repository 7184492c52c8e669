"""After a quiet spell, drop what can be computed again and hand the memory back to the system.

One ``Janitor`` per server. Each model request calls ``used()``; once nobody has for ``quiet``
seconds (the class has gone home), the janitor calls every dropper registered with ``on_quiet``
(the pages' result caches, the long inputs' captures: the models themselves stay loaded), then
collects and trims. While it stays quiet, what the sessions that have since closed held
(Streamlit lets them go ``server.disconnectedSessionTTL`` seconds after their browser left) is
handed back at each look (every ``quiet / 3`` seconds).

Plain threading, no Streamlit: the caches to drop are callbacks.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable

from attention_atlas.serve.process import trim


def hand_back() -> None:
    """Collect what nothing refers to any more and return glibc's freed pages to the system."""
    gc.collect()
    trim()


class Janitor:
    def __init__(self, quiet: float, name: str = "atlas-janitor"):
        self.quiet, self.name = quiet, name
        self._droppers: list[Callable[[], None]] = []
        self._last_use = time.monotonic()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def on_quiet(self, drop: Callable[[], None]) -> Callable[[], None]:
        """Register ``drop`` (say, a cache's ``clear``) to be called once the server is quiet."""
        with self._lock:
            if drop not in self._droppers:
                self._droppers.append(drop)
        return drop

    def used(self) -> None:
        """A page asked for model work: the quiet clock starts again, and the thread runs."""
        self._last_use = time.monotonic()
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._sweep_when_quiet, name=self.name, daemon=True)
                self._thread.start()

    def release(self) -> None:
        """Call every dropper now, then hand the memory back."""
        with self._lock:
            droppers = list(self._droppers)
        for drop in droppers:
            drop()
        hand_back()

    def _sweep_when_quiet(self) -> None:
        swept = True  # nothing to let go before the first use
        while True:
            time.sleep(self.quiet / 3)
            quiet = time.monotonic() - self._last_use >= self.quiet
            if quiet and not swept:
                self.release()
            elif quiet:
                hand_back()
            swept = quiet
