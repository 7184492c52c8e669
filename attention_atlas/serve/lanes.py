"""First come, first served: a few holders at once, the others wait in line and know their place.

Streamlit runs each session's script in its own thread, so thirty students typing at once would
start thirty model runs on two cores, and one long SmolLM2 input beside them could run the
machine out of memory. Every piece of work that needs the machine takes a turn in a lane:

- ``LIGHT``: ``ATLAS_MODEL_SLOTS`` model runs at once (default 2): short inputs, small models;
- ``HEAVY``: ``ATLAS_HEAVY_SLOTS`` runs at once (default 1): inputs over ``ATLAS_HEAVY_CHARS``
  characters (default 1,500), or a model the registry declares heavy (``ATLAS_HEAVY_MODELS``,
  a comma-separated list of ids, overrides the registry);
- ``trainings()``: ``ATLAS_MAX_TRAININGS`` classroom trainings at once (default 2).

The model lanes are separate, so a heavy run never holds a light slot: one visitor's long run
does not stall the others' pages. Whoever waits is told their position (``turn(on_wait=…)``, or
``position(ticket)`` from another thread). A thread that already holds a slot of a lane (a
cached call inside another) passes straight through, so nested calls never deadlock.

Plain threading, no Streamlit: the tests drive it with threads.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Collection, Hashable, Iterator

from attention_atlas.i18n import N_, _, ngettext

SLOTS_VAR, HEAVY_SLOTS_VAR = "ATLAS_MODEL_SLOTS", "ATLAS_HEAVY_SLOTS"
HEAVY_CHARS_VAR, HEAVY_MODELS_VAR = "ATLAS_HEAVY_CHARS", "ATLAS_HEAVY_MODELS"
TRAININGS_VAR = "ATLAS_MAX_TRAININGS"


def whole(var: str, default: int, environ=None) -> int:
    """The environment variable ``var`` as a whole number ≥ 1 (``default`` when unset); anything
    else is one clear ``ValueError``."""
    raw = (os.environ if environ is None else environ).get(var, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"{var}={raw!r} must be a whole number ≥ 1")
    return int(raw)


class GaveUp(Exception):
    """A wait in line ended because ``give_up()`` said so."""


class Lane:
    """At most ``capacity`` holders at once; the others wait in arrival order."""

    def __init__(self, name: str, capacity: int, describe: str = ""):
        if capacity < 1:
            raise ValueError(f"lane {name!r} needs at least 1 slot, not {capacity}")
        self.name, self.capacity, self.describe = name, capacity, describe
        self._cond = threading.Condition()
        self._line: deque[object] = deque()
        self._busy = 0
        self._local = threading.local()  # whether this thread holds a turn (re-entry)
        self.peak = 0  # the most holders seen at once (tests and benchmarks read it)

    @property
    def busy(self) -> int:
        return self._busy

    @property
    def waiting(self) -> int:
        return len(self._line)

    def position(self, ticket: object) -> int | None:
        """``ticket``'s place in line (1 = next), or None when it is not waiting."""
        with self._cond:
            return self._line.index(ticket) + 1 if ticket in self._line else None

    @contextlib.contextmanager
    def turn(
        self,
        on_wait: Callable[[int], None] | None = None,
        give_up: Callable[[], bool] | None = None,
        ticket: object | None = None,
        poll: float = 0.5,
    ) -> Iterator[None]:
        """Hold one slot for the ``with`` block, after waiting in line if the lane is full.

        ``on_wait(position)`` (1 = next) is called, outside the lane's lock, when the position
        changes and every ``poll`` seconds while waiting, so a caller can show it; if it raises
        (a Streamlit script being stopped does), the place in line is given up. ``give_up()``
        returning True ends the wait with ``GaveUp``. ``ticket`` names the place in line for
        ``position`` (default: a fresh object)."""
        if getattr(self._local, "held", 0):
            yield  # this thread already holds a slot of this lane
            return
        self.acquire(ticket, on_wait, give_up, poll)
        self._local.held = 1
        try:
            yield
        finally:
            self._local.held = 0
            self.release()

    def acquire(
        self,
        ticket: object | None = None,
        on_wait: Callable[[int], None] | None = None,
        give_up: Callable[[], bool] | None = None,
        poll: float = 0.5,
    ) -> None:
        """Wait in line for a slot (``turn`` without the ``with``); pair it with ``release``."""
        ticket = object() if ticket is None else ticket
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
                if give_up is not None and give_up():
                    raise GaveUp(f"gave up at position {position} in the {self.name} lane")
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

    def release(self) -> None:
        with self._cond:
            self._busy -= 1
            self._cond.notify_all()

    def waiting_message(self, position: int, what: str = N_("the model")) -> str:
        """What a visitor at ``position`` (1 = next) waiting for ``what`` is told, in the language in
        force (``what`` and the lane's ``describe``: strings marked with ``N_``)."""
        place = (
            _(
                "Waiting for {what}: position {position} in line (you are next).",
                what=_(what),
                position=position,
            )
            if position == 1
            else _(
                "Waiting for {what}: position {position} in line ({ahead} ahead of you).",
                what=_(what),
                position=position,
                ahead=position - 1,
            )
        )
        runs = ngettext(
            "{count} run at a time for {purpose}.", "{count} runs at a time for {purpose}.", self.capacity
        ).format(count=self.capacity, purpose=_(self.describe) if self.describe else "")
        return _("{place} {runs}", place=place, runs=runs)


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


LIGHT = Lane("light", whole(SLOTS_VAR, 2), N_("short inputs"))
HEAVY = Lane("heavy", whole(HEAVY_SLOTS_VAR, 1), N_("long inputs and large models, one at a time"))


@functools.cache
def trainings() -> Lane:
    """The process's training lane (``ATLAS_MAX_TRAININGS``, default 2), made on first use."""
    return Lane("training", whole(TRAININGS_VAR, 2), N_("trainings on this server"))


def heavy_chars(environ=None) -> int:
    return whole(HEAVY_CHARS_VAR, 1500, environ)


def heavy_models(declared: Collection[str] = (), environ=None) -> set[str]:
    """The ids that always take the heavy lane: ``ATLAS_HEAVY_MODELS`` where set, else ``declared``
    (the registry's ``heavy`` models)."""
    raw = (os.environ if environ is None else environ).get(HEAVY_MODELS_VAR)
    if raw is None:
        return set(declared)
    return {m.strip() for m in raw.split(",") if m.strip()}


def lane_for(heavy_model: bool, text: str = "") -> Lane:
    """The heavy lane for a heavy model or an input long enough that its records run to tens of
    megabytes, the light lane otherwise."""
    return HEAVY if heavy_model or len(text) > heavy_chars() else LIGHT
