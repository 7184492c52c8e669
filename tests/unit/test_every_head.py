"""viz_core.every_head: every head's summaries on worker processes that map the capture's files."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from attention_atlas.models.adapters.capture import mapped
from attention_atlas.ui import long_cached as lc
from attention_atlas.viz_core import blockwise as bw
from attention_atlas.viz_core import every_head as eh
from tests.unit.test_blockwise import SIX, random_capture

pytestmark = pytest.mark.skipif(os.name != "posix", reason="workers read the capture's files by descriptor")


def in_files(cap: bw.QKCapture, folder: Path) -> bw.QKCapture:
    """``cap`` with its queries and keys in files mapped into memory, as a long capture keeps them."""
    queries, keys = ([mapped(a, folder) for a in arrays] for arrays in (cap.queries, cap.keys))
    return bw.QKCapture(
        cap.model_id, queries, keys, cap.scaling, cap.causal, cap.tokens, cap.special, variants=cap.variants
    )


BEFORE: set[int] = set()


@pytest.fixture(autouse=True)
def earlier_children():
    """The children this process had before the test: not the test's to end."""
    BEFORE.clear()
    BEFORE.update(children())
    yield


def children() -> set[int]:
    """This process's live children (zombies left out), from /proc, less those it had already (the
    CLI tests' fork server, which a test earlier on this worker may have started)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == os.getpid() and fields[0] != "Z":
                found.add(int(entry.name))
    return found - BEFORE


def no_summaries_here(monkeypatch):
    """Any layer summarised in this process fails: what comes back came from the workers."""

    def here(*args, **kwargs):
        raise AssertionError("summarised in the parent")

    monkeypatch.setattr(bw, "layer_summary", here)


@pytest.fixture
def capture(tmp_path):
    variant = SIX["all"]  # a window, softcapping, sinks and ALiBi: everything the request must carry
    cap = random_capture(n=150, layers=5, heads=6, kv=2, dim=16)
    return in_files(
        bw.QKCapture("t", cap.queries, cap.keys, [0.3] * 5, True, cap.tokens, cap.special, variants=[variant] * 5),
        tmp_path,
    )


@pytest.mark.slow
def test_workers_map_the_files_and_give_every_layer_as_here(capture, monkeypatch):
    want = eh.all_heads(capture, thumb=16, block=32, n_workers=1)
    no_summaries_here(monkeypatch)
    seen = []
    got = eh.all_heads(capture, thumb=16, block=32, progress=lambda *lh: seen.append(lh), n_workers=3)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
    assert [(r["layer"], r["head"], r["pattern"]) for r in got[1]] == [
        (r["layer"], r["head"], r["pattern"]) for r in want[1]
    ]
    assert sorted(seen) == [(layer, head) for layer in range(5) for head in range(6)]
    assert not children()


@pytest.mark.slow  # over 3.5 s here: make test runs it, make check does not
def test_a_layer_whose_worker_dies_is_summarised_here(capture, monkeypatch):
    started = eh._start

    def dies(*args):
        proc, reader = started(*args)
        if 1 in args[2]:  # the worker with layer 1 is killed, as the kernel's OOM killer would
            proc.kill()
        return proc, reader

    monkeypatch.setattr(eh, "_start", dies)
    got = dict(eh.layer_summaries(capture, range(5), 16, 32, n_workers=2))
    assert sorted(got) == list(range(5))
    for layer in (1, 3):
        np.testing.assert_allclose(got[layer][0], bw.layer_summary(capture, layer, 16, 32)[0], rtol=1e-6)
    assert not children()


@pytest.mark.slow  # about 3 s
def test_cancelled_work_and_a_closed_iterator_end_their_workers(capture):
    assert list(eh.layer_summaries(capture, range(5), n_workers=2, cancelled=lambda: True)) == []
    pairs = eh.layer_summaries(capture, range(5), n_workers=2)
    layer, _ = next(pairs)
    assert layer in range(5)
    pairs.close()
    assert not children()


def test_a_capture_held_in_memory_is_summarised_here(monkeypatch):
    cap = random_capture()
    monkeypatch.setattr(eh, "_start", lambda *a: pytest.fail("a worker started for arrays with no file"))
    assert eh._descriptors(cap) is None
    assert [layer for layer, _ in eh.layer_summaries(cap, range(2), n_workers=4)] == [0, 1]


@pytest.mark.slow  # over 3.5 s here: make test runs it, make check does not
def test_background_summaries_of_a_capture_in_files_come_from_workers(capture, monkeypatch):
    want = eh.all_heads(capture, n_workers=1)
    no_summaries_here(monkeypatch)
    monkeypatch.setenv(eh.WORKERS_VAR, "2")
    summaries = lc.Summaries(capture)
    summaries.ask()
    summaries.job.thread.join(60)
    assert summaries.complete and summaries.error is None
    np.testing.assert_allclose(summaries.snapshot()[0], want[0], rtol=1e-6)
    assert summaries.snapshot()[1]["layer"].tolist() == [r["layer"] for r in want[1]]


@pytest.mark.parametrize("value", ["0", "-2", "two", "1.5"])
def test_workers_from_the_environment(monkeypatch, value):
    monkeypatch.setenv(eh.WORKERS_VAR, "3")
    assert eh.workers() == 3
    monkeypatch.setenv(eh.WORKERS_VAR, value)
    with pytest.raises(eh.WorkersError, match=f"ATLAS_WORKERS='{value}' must be a whole number"):
        eh.workers()
    monkeypatch.delenv(eh.WORKERS_VAR)
    assert 1 <= eh.workers() <= eh.MOST


def test_a_worker_finds_this_package_without_a_site_folder_before_the_standard_library(monkeypatch):
    import site

    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    env = eh._environment()
    assert env["OPENBLAS_NUM_THREADS"] == "1"
    assert env["PYTHONPATH"] == os.pathsep.join([eh.PACKAGE_ROOT, "/elsewhere"])  # a checkout: first
    monkeypatch.setattr(eh, "PACKAGE_ROOT", site.getsitepackages()[0])  # an installed wheel: as it was
    assert eh._environment()["PYTHONPATH"] == "/elsewhere"
