"""serve.resident: at most N real adapters loaded, the least recently used dropped and its
memory really let go (even one held in a reference cycle), one load per model under threads."""

from __future__ import annotations

import gc
import os
import threading
import time
import weakref

import pytest

from attention_atlas.serve.resident import Resident, max_models

SMALL = ("couplet-rnn-additive", "couplet-rnn-dot", "translate-gru-additive")  # bundled, small


@pytest.fixture(autouse=True)
def _unfreeze():
    yield
    gc.unfreeze()  # Resident freezes the heap after each load; leave the test process as found


@pytest.mark.slow
def test_the_least_recently_used_real_adapter_is_dropped_and_freed():
    models = Resident(limit=2)
    a, b = models.get(SMALL[0]), models.get(SMALL[1])
    assert models.get(SMALL[0]) is a  # a is now the most recently used
    gone = weakref.ref(b)
    b.cycle = b  # a reference cycle: only the collector can free it, frozen or not
    del b
    c = models.get(SMALL[2])
    assert models.resident() == [SMALL[0], SMALL[2]]
    assert gone() is None  # dropped and collected, not merely forgotten
    assert models.was_evicted(SMALL[1]) and not models.was_evicted(SMALL[0])
    again = models.get(SMALL[1])
    assert models.loads[SMALL[1]] == 2 and again.model_id == SMALL[1]
    assert models.resident() == [SMALL[2], SMALL[1]]
    assert c.run("I'm home.").output  # what stayed loaded still works


def test_loading_freezes_the_heap_so_full_collections_skip_it():
    gc.unfreeze()
    Resident(limit=1).get(SMALL[0])
    assert gc.get_freeze_count() > 0


def test_threads_asking_for_one_model_load_it_once():
    calls = []

    def slow_load(model_id):
        calls.append(model_id)
        time.sleep(0.1)
        return object()

    models = Resident(limit=2, loader=slow_load)
    got = []
    threads = [threading.Thread(target=lambda: got.append(models.get("m"))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert calls == ["m"] and len(got) == 8 and all(g is got[0] for g in got)


@pytest.mark.slow
def test_drop_and_clear():
    models = Resident(limit=3, loader=lambda m: object())
    models.get("a"), models.get("b")
    assert models.drop("a") and not models.drop("a")
    models.clear()
    assert models.resident() == []


def test_the_limit_comes_from_the_environment():
    assert max_models({}) == 6
    assert max_models({"ATLAS_MAX_MODELS": "2"}) == 2
    for bad in ("0", "two", "-1"):
        with pytest.raises(ValueError, match=r"ATLAS_MAX_MODELS=.* must be a whole number"):
            max_models({"ATLAS_MAX_MODELS": bad})
    with pytest.raises(ValueError, match="must be ≥ 1"):
        Resident(limit=0)


ARENAS_CHILD = """
import ctypes, sys, threading
from attention_atlas.serve.process import limit_arenas
if sys.argv[1] == "limit":
    assert limit_arenas()
gate = threading.Barrier(8)
def work():
    blocks = [bytearray(4096) for _ in range(200)]  # glibc malloc, not Python's small-object pool
    gate.wait()  # all eight alive at once, as a server's session threads are
threads = [threading.Thread(target=work) for _ in range(8)]
[t.start() for t in threads]
[t.join() for t in threads]
ctypes.CDLL("libc.so.6").malloc_stats()  # one "Arena k:" paragraph per arena, on stderr
"""


@pytest.mark.parametrize("mode", ["limit", "plain"])
def test_limit_arenas_keeps_eight_threads_in_two_malloc_arenas(mode):
    """Each thread that mallocs gets an arena of its own unless limited (what the server does
    at start): eight threads make nine arenas, or two."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    out = subprocess.run(
        [sys.executable, "-c", ARENAS_CHILD, mode], capture_output=True, text=True, env=env, timeout=60
    )
    assert out.returncode == 0, out.stderr
    arenas = out.stderr.count("Arena ")
    assert arenas <= 2 if mode == "limit" else arenas > 2, out.stderr


def test_the_kernel_cache_is_bounded_unless_the_environment_says_otherwise(monkeypatch):
    """oneDNN reads ONEDNN_PRIMITIVE_CACHE_CAPACITY at its first kernel; the server sets 64 before
    any model runs (app.py), and a value given at launch stays."""
    from attention_atlas.serve.process import KERNEL_CACHE, limit_kernel_cache

    monkeypatch.delenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY", raising=False)
    limit_kernel_cache()
    assert os.environ["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] == str(KERNEL_CACHE)
    monkeypatch.setenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "1024")
    limit_kernel_cache()
    assert os.environ["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] == "1024"


SPIN_CHILD = """
import sys
if sys.argv[1] == "passive":
    from attention_atlas.serve.process import passive_threads
    passive_threads()
import torch
torch.ones(64, 64) @ torch.ones(64, 64)  # OpenMP starts, and prints its settings (OMP_DISPLAY_ENV)
"""


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["passive", "plain"])
def test_passive_threads_stop_openmp_spinning_when_set_before_torch_loads(mode):
    """The server calls passive_threads before torch loads (app.py): libgomp then spins 0 times
    after each operation, against its default 300,000."""
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    env["OMP_DISPLAY_ENV"] = "VERBOSE"
    out = subprocess.run(
        [sys.executable, "-c", SPIN_CHILD, mode], capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 0, out.stderr
    spins = out.stderr.count("GOMP_SPINCOUNT = '0'")
    assert spins == 1 if mode == "passive" else spins == 0, out.stderr


def test_the_server_starts_with_passive_threads_unless_told_otherwise(monkeypatch):
    from attention_atlas.serve.process import launch_env

    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    assert launch_env()["OMP_WAIT_POLICY"] == "PASSIVE"
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    assert launch_env()["OMP_WAIT_POLICY"] == "ACTIVE"


def test_a_loads_time_is_kept_for_the_next_waits_hint(tmp_path, monkeypatch):
    """Issue 40 item 18: a first load (Gemma 3: 70 s of converting) waited behind "Loading the model
    (once per server)…" with no word of how long; the spinner now says how long the last load took on
    this machine, or that a first one may convert the weights. A damaged record is no record."""
    from attention_atlas.serve.resident import last_load
    from attention_atlas.ui.cached import load_hint

    monkeypatch.setenv("ATLAS_CACHE", str(tmp_path))
    models = Resident(limit=1, loader=lambda model_id: time.sleep(0.2) or object())
    assert last_load("slow-model") is None and "for the first time" in load_hint("slow-model")
    models.get("slow-model")
    assert 0.2 <= last_load("slow-model") < 10
    assert load_hint("slow-model").startswith("Loading slow-model (once per server; ")
    (tmp_path / "load_seconds.json").write_text("{not json", encoding="utf-8")
    assert last_load("slow-model") is None
