"""A Ray that the corpus run starts itself (``ATLAS_RAY_ADDRESS=auto`` with none running) is started
again when Ray's own 30 s for its raylet to register run out, as they did on a saturated 2-core machine
(the Corpus page then said "cannot run this corpus" on a first visit). Ray's ``init`` and ``shutdown``
are replaced here by recorders: what is tested is the start-up order, not Ray."""

import pytest

from attention_atlas.models.corpus import ray_run

ray = pytest.importorskip("ray")
TIMED_OUT = "The current node timed out during startup. This could happen because some of the raylet"


def recorder(monkeypatch, outcomes: list):
    calls = []

    def init(**kwargs):
        calls.append(("init", kwargs.get("address")))
        outcome = outcomes.pop(0)
        if outcome is not None:
            raise outcome

    monkeypatch.setattr(ray, "init", init)
    monkeypatch.setattr(ray, "shutdown", lambda: calls.append(("shutdown", None)))
    return calls


def test_a_start_that_times_out_is_shut_down_and_tried_again(monkeypatch):
    calls = recorder(monkeypatch, [ConnectionError("no Ray running"), Exception(TIMED_OUT), None])
    ray_run._init("auto")
    assert calls == [("init", "auto"), ("init", None), ("shutdown", None), ("init", None)]


def test_other_failures_and_the_last_timeout_are_raised(monkeypatch):
    recorder(monkeypatch, [ConnectionError("no Ray running"), RuntimeError("no space left on device")])
    with pytest.raises(RuntimeError, match="no space left"):
        ray_run._init("auto")
    calls = recorder(monkeypatch, [ConnectionError("none"), *[Exception(TIMED_OUT)] * ray_run.START_TRIES])
    with pytest.raises(Exception, match="timed out during startup"):
        ray_run._init("auto")
    assert [c for c in calls if c[0] == "init"] == [("init", "auto")] + [("init", None)] * ray_run.START_TRIES
