"""One background job type for work that outlives a request: start, poll, pause, stop, time out.

A page never owns a thread: it starts a ``Job`` (or asks an existing one to go on), and every
rerun reads what the work has produced so far from the object that owns the job (its
snapshot). The job calls ``step()`` again and again in its thread until ``step`` returns a
message (done) or raises (failed), and stops on its own when:

- ``stop()`` is called (``STOPPED``; a step that runs long asks ``cancelled()`` as it goes);
- ``alive()`` answers False (the visitor left; asked about once a second, also while paused);
- nobody has ``touch``-ed it for ``idle`` seconds (``IDLE``: a page left open touches it at every
  poll; ``start()`` again resumes from where the work had reached, without ``setup`` again).

A job that needs a slot waits in a ``serve.lanes.Lane`` first (``WAITING``, its position known to
``position``), and gives the slot back however it ends. Plain threading, no Streamlit.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from attention_atlas.i18n import later
from attention_atlas.serve.lanes import GaveUp, Lane

NEW, WAITING, STARTING, RUNNING, PAUSED = "new", "waiting", "starting", "running", "paused"
DONE, STOPPED, FAILED, IDLE = "done", "stopped", "failed", "idle"
LIVE = (WAITING, STARTING, RUNNING, PAUSED)
FINAL = (DONE, STOPPED, FAILED)  # IDLE is not final: start() goes on


class Job:
    """``step() -> str | None`` repeated in a background thread (``None``: more to do; a string:
    done, with that message), after ``setup()`` once and a turn of ``lane`` where given."""

    def __init__(
        self,
        step: Callable[[], str | None],
        *,
        name: str = "atlas-job",
        setup: Callable[[], None] | None = None,
        lane: Lane | None = None,
        idle: float | None = None,
        alive: Callable[[], bool] | None = None,
        gone: str = later("the visitor left"),
        check: float = 1.0,
    ):
        self._step, self._setup, self.lane = step, setup, lane
        self.name, self.idle, self.alive, self.gone, self.check = name, idle, alive, gone, check
        self.state, self.message = NEW, ""
        self._lock = threading.Lock()
        self._stop, self._running = threading.Event(), threading.Event()
        self._running.set()
        self._asked = time.monotonic()
        self._set_up = setup is None
        self.thread: threading.Thread | None = None

    # -- control (any thread) -------------------------------------------------------------
    def start(self) -> Job:
        """Start the work, or let it go on after ``IDLE``; a no-op while it runs or once it ended."""
        with self._lock:
            self._asked = time.monotonic()
            if self.state in FINAL or (self.thread is not None and self.thread.is_alive()):
                return self
            self.state = WAITING if self.lane else (RUNNING if self._set_up else STARTING)
            self.thread = threading.Thread(target=self._main, name=self.name, daemon=True)
            self.thread.start()
        return self

    def touch(self) -> None:
        """Somebody is looking: the idle clock starts again."""
        self._asked = time.monotonic()

    def pause(self) -> None:
        self._running.clear()

    def resume(self) -> None:
        self._running.set()

    def stop(self, wait: float | None = None) -> None:
        self._stop.set()
        self._running.set()
        thread = self.thread
        if wait is not None and thread is not None and thread.is_alive():
            thread.join(wait)

    def overdue(self) -> bool:
        """Nobody has ``touch``-ed or started the job for ``idle`` seconds (a step that runs long may
        stop for it: the job then ends ``IDLE``)."""
        return self.idle is not None and time.monotonic() - self._asked >= self.idle

    def cancelled(self) -> bool:
        """For a step that runs long (it is called once, not again and again): whether to stop
        now, because ``stop()`` was called or ``alive()`` answers False."""
        return self._give_up()

    @property
    def paused(self) -> bool:
        return not self._running.is_set()

    @property
    def status(self) -> str:
        """The state as a page shows it: ``PAUSED`` while a running job is paused."""
        with self._lock:
            return PAUSED if self.state == RUNNING and self.paused else self.state

    @property
    def live(self) -> bool:
        return self.status in LIVE

    def position(self) -> int | None:
        """The place in the lane's line while waiting (1 = next), else None."""
        return self.lane.position(self) if self.lane is not None and self.state == WAITING else None

    # -- the thread ----------------------------------------------------------------------
    def _main(self) -> None:
        if self.lane is not None:
            try:
                self.lane.acquire(self, give_up=self._give_up, poll=0.2)
            except GaveUp:
                return self._finish(STOPPED, self.message or later("stopped while waiting"))
        try:
            if not self._set_up:
                self._set(STARTING)
                self._setup()
                self._set_up = True
            self._set(RUNNING)
            self._loop()
        except Exception as err:  # shown on the page as one line; the slot is freed below
            self._finish(FAILED, f"{type(err).__name__}: {err}")
        finally:
            if self.lane is not None:
                self.lane.release()

    def _loop(self) -> None:
        checked = 0.0
        while True:
            if time.monotonic() - checked > self.check:  # also while paused: a paused visitor may leave
                checked = time.monotonic()
                self._give_up()
            if self._stop.is_set():
                return self._finish(STOPPED, self.message or later("stopped"))
            if self.overdue():
                return self._finish(IDLE, later("nobody looked for {seconds:g} s", seconds=self.idle))
            if not self._running.wait(0.5):
                continue
            done = self._step()
            if done is not None:
                return self._finish(DONE, done)

    def _give_up(self) -> bool:
        if not self._stop.is_set() and self.alive is not None and not self.alive():
            self.message = self.gone
            self._stop.set()
        return self._stop.is_set()

    def _set(self, state: str) -> None:
        with self._lock:
            self.state = state

    def _finish(self, state: str, message: str) -> None:
        with self._lock:
            self.state, self.message = state, message
