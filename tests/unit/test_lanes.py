"""serve.lanes: the lanes really bound how many threads run at once, serve in arrival order,
tell each waiter its position, and a heavy lane never holds up the light one."""

from __future__ import annotations

import threading
import time

import pytest

from attention_atlas.serve import lanes as admission
from attention_atlas.serve.lanes import GaveUp, Lane, Seen


def _wait_until(cond, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def test_a_lane_bounds_concurrency_across_threads():
    lane = Lane("t", capacity=2)
    inside, most, lock = [0], [0], threading.Lock()

    def work():
        with lane.turn():
            with lock:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
            time.sleep(0.05)
            with lock:
                inside[0] -= 1

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert most[0] == 2 == lane.peak  # never three at once, but two did run side by side
    assert lane.busy == 0 and lane.waiting == 0


def test_waiters_enter_in_arrival_order_and_are_told_their_position():
    lane = Lane("t", capacity=1)
    gates = [threading.Event() for _ in range(4)]  # gate 0: the holder; 1..3: each waiter's stay
    order, told = [], {}

    def holder():
        with lane.turn():
            gates[0].wait(10)

    def waiter(n):
        with lane.turn(on_wait=lambda k: told.setdefault(n, []).append(k), poll=0.01):
            order.append(n)
            gates[n + 1].wait(10)

    threads = [threading.Thread(target=holder)]
    threads[0].start()
    _wait_until(lambda: lane.busy == 1)
    for n in range(3):
        threads.append(threading.Thread(target=waiter, args=(n,)))
        threads[-1].start()
        _wait_until(lambda n=n: lane.waiting == n + 1)
    for gate, position in zip(gates[:3], (2, 1, None), strict=True):
        gate.set()  # the one inside leaves; the line moves up by one
        if position is not None:
            _wait_until(lambda p=position: told[2][-1] == p)
    gates[3].set()
    for t in threads:
        t.join(10)
    assert order == [0, 1, 2]
    assert told[2][0] == 3 and sorted(set(told[2]), reverse=True) == [3, 2, 1]


def test_a_thread_holding_a_slot_passes_through_a_nested_turn():
    lane = Lane("t", capacity=1)
    with lane.turn(), lane.turn():  # a cached call inside another: no deadlock
        assert lane.busy == 1
    assert lane.busy == 0


def test_a_waiter_whose_display_fails_gives_up_its_place():
    lane = Lane("t", capacity=1)
    release, done = threading.Event(), []

    def holder():
        with lane.turn():
            release.wait(10)

    def stopped(_position):
        raise RuntimeError("script stopped")

    t = threading.Thread(target=holder)
    t.start()
    _wait_until(lambda: lane.busy == 1)
    with pytest.raises(RuntimeError, match="script stopped"), lane.turn(on_wait=stopped):
        pass
    assert lane.waiting == 0
    release.set()
    t.join(10)
    with lane.turn():
        done.append(True)
    assert done == [True]


def test_a_heavy_run_does_not_hold_up_light_work():
    heavy, light = Lane("heavy", 1), Lane("light", 1)
    release = threading.Event()

    def long_run():
        with heavy.turn():
            release.wait(10)

    t = threading.Thread(target=long_run)
    t.start()
    _wait_until(lambda: heavy.busy == 1)
    start = time.monotonic()
    with light.turn():
        waited = time.monotonic() - start
    release.set()
    t.join(10)
    assert waited < 0.5


def test_heavy_means_a_model_the_registry_declares_heavy_or_a_long_input(monkeypatch):
    from attention_atlas.ui import cached

    monkeypatch.delenv(admission.HEAVY_MODELS_VAR, raising=False)
    monkeypatch.setenv(admission.HEAVY_CHARS_VAR, "100")
    assert cached.is_heavy("smollm2", "hi")  # registered with heavy=True
    assert cached.is_heavy("minilm", "x" * 101)
    assert not cached.is_heavy("minilm", "x" * 100)
    assert cached.lane_for("minilm", "short") is admission.LIGHT
    assert cached.lane_for("smollm2", "short") is admission.HEAVY
    monkeypatch.setenv(admission.HEAVY_MODELS_VAR, "minilm")  # the server's own list wins
    assert cached.is_heavy("minilm", "hi") and not cached.is_heavy("smollm2", "hi")


def test_a_waiter_that_gives_up_leaves_the_line():
    lane = Lane("t", 1)
    lane.acquire("first")
    with pytest.raises(GaveUp):
        lane.acquire("second", give_up=lambda: True, poll=0.01)
    assert lane.position("second") is None and lane.waiting == 0
    lane.release()
    assert lane.busy == 0


def test_bad_settings_are_one_clear_error(monkeypatch):
    monkeypatch.setenv(admission.HEAVY_CHARS_VAR, "lots")
    with pytest.raises(ValueError, match="ATLAS_HEAVY_CHARS='lots' must be a whole number"):
        admission.heavy_chars()
    with pytest.raises(ValueError, match="at least 1 slot"):
        Lane("t", 0)


def test_waiting_message_names_the_position():
    msg = Lane("t", 1, "long inputs").waiting_message(3)
    assert "position 3" in msg and "2 ahead of you" in msg and "1 run at a time for long inputs" in msg


def test_seen_forgets_the_oldest_keys():
    seen = Seen(size=2)
    for key in "abc":
        seen.add(key)
    assert "a" not in seen and "b" in seen and "c" in seen
