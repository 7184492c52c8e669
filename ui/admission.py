"""Model work through an admission queue: a few runs at once, heavy ones in a line of their own.

Streamlit runs each session's script in its own thread, so thirty students typing at once
would start thirty model runs on two cores, and one long SmolLM2 input beside them could run
the machine out of memory. Every cache miss that runs a model therefore waits for a slot:

- ``light`` lane: ``ATLAS_MODEL_SLOTS`` runs at once (default 2): short inputs, small models;
- ``heavy`` lane: ``ATLAS_HEAVY_SLOTS`` runs at once (default 1): inputs over
  ``ATLAS_HEAVY_CHARS`` characters (default 1,500) or a model named in ``ATLAS_HEAVY_MODELS``
  (default ``smollm2``).

The lanes are separate, so a heavy run never holds a light slot: one visitor's long run does
not stall the others' pages. A lane is first come, first served; whoever waits is told their
position (``Lane.turn(on_wait=…)``), which ``ui.cached`` shows as "Waiting for the model:
position k". A thread that already holds a slot of a lane (a cached call inside another)
passes straight through, so nested cached calls never deadlock.

Plain threading, no Streamlit: the tests drive it with threads.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable, Iterator

SLOTS_VAR, HEAVY_SLOTS_VAR = "ATLAS_MODEL_SLOTS", "ATLAS_HEAVY_SLOTS"
HEAVY_CHARS_VAR, HEAVY_MODELS_VAR = "ATLAS_HEAVY_CHARS", "ATLAS_HEAVY_MODELS"


def _whole(var: str, default: int, environ=None) -> int:
    raw = (os.environ if environ is None else environ).get(var, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"{var}={raw!r} must be a whole number ≥ 1")
    return int(raw)


class Lane:
    """At most ``capacity`` holders at once; the others wait in arrival order."""

    def __init__(self, name: str, capacity: int, describe: str = ""):
        if capacity < 1:
            raise ValueError(f"lane {name!r} needs at least 1 slot, not {capacity}")
        self.name, self.capacity, self.describe = name, capacity, describe
        self._cond = threading.Condition()
        self._line: deque[object] = deque()
        self._busy = 0
        self._local = threading.local()  # how many turns this thread holds (re-entry)
        self.peak = 0  # the most holders seen at once (tests and benchmarks read it)

    @property
    def busy(self) -> int:
        return self._busy

    @property
    def waiting(self) -> int:
        return len(self._line)

    @contextlib.contextmanager
    def turn(self, on_wait: Callable[[int], None] | None = None, poll: float = 0.5) -> Iterator[None]:
        """Hold one slot for the ``with`` block, after waiting in line if the lane is full.

        ``on_wait(position)`` (1 = next) is called, outside the lane's lock, when the position
        changes and every ``poll`` seconds while waiting, so a caller can show it; if it raises
        (a Streamlit script being stopped does), the place in line is given up."""
        if getattr(self._local, "held", 0):
            yield  # this thread already holds a slot of this lane
            return
        self._wait(on_wait, poll)
        self._local.held = 1
        try:
            yield
        finally:
            self._local.held = 0
            with self._cond:
                self._busy -= 1
                self._cond.notify_all()

    def _wait(self, on_wait: Callable[[int], None] | None, poll: float) -> None:
        ticket = object()
        told, told_at = None, 0.0
        with self._cond:
            self._line.append(ticket)
        try:
            while True:
                with self._cond:
                    if self._line[0] is ticket and self._busy < self.capacity:
                        self._line.popleft()
                        self._busy += 1
                        self.peak = max(self.peak, self._busy)
                        self._cond.notify_all()  # the next in line may fit too
                        return
                    position = self._line.index(ticket) + 1
                if on_wait is not None and (position != told or time.monotonic() - told_at >= poll):
                    on_wait(position)
                    told, told_at = position, time.monotonic()
                with self._cond:
                    self._cond.wait(poll)
        except BaseException:
            with self._cond:
                if ticket in self._line:
                    self._line.remove(ticket)
                self._cond.notify_all()
            raise


class Seen:
    """Keys of results computed lately (bounded, oldest forgotten first): a cheap guess of
    whether a cached call will hit, so a hit never queues behind model work."""

    def __init__(self, size: int = 1024):
        self.size = size
        self._keys: OrderedDict[Hashable, None] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, key: Hashable) -> None:
        with self._lock:
            self._keys[key] = None
            self._keys.move_to_end(key)
            while len(self._keys) > self.size:
                self._keys.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._keys.clear()

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._keys


LIGHT = Lane("light", _whole(SLOTS_VAR, 2), "short inputs")
HEAVY = Lane("heavy", _whole(HEAVY_SLOTS_VAR, 1), "long inputs and large models, one at a time")


def heavy_chars(environ=None) -> int:
    return _whole(HEAVY_CHARS_VAR, 1500, environ)


def heavy_models(environ=None) -> set[str]:
    raw = (os.environ if environ is None else environ).get(HEAVY_MODELS_VAR, "smollm2")
    return {m.strip() for m in raw.split(",") if m.strip()}


def is_heavy(model_id: str, text: str = "") -> bool:
    """A large model, or an input long enough that its records run to tens of megabytes."""
    return model_id in heavy_models() or len(text) > heavy_chars()


def lane_for(model_id: str, text: str = "") -> Lane:
    return HEAVY if is_heavy(model_id, text) else LIGHT


def waiting_message(lane: Lane, position: int) -> str:
    ahead = "you are next" if position == 1 else f"{position - 1} ahead of you"
    return (
        f"Waiting for the model: position {position} in line ({ahead}). "
        f"{lane.capacity} {'run' if lane.capacity == 1 else 'runs'} at a time for {lane.describe}."
    )
