"""serve.forked: numpy work in forked children, one BLAS thread each, nothing lost."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from attention_atlas.serve import forked as fk

pytestmark = pytest.mark.skipif(not fk.can_fork(), reason="children are forked on Linux only")
PARENT = os.getpid()


def children() -> set[int]:
    """This process's live children (zombies left out), read from /proc."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == os.getpid() and fields[0] != "Z":
                found.add(int(entry.name))
    return found


def blas_threads() -> list[int]:
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


def test_every_item_comes_back_computed_in_children_with_one_blas_thread():
    before = blas_threads()
    data = np.random.default_rng(0).standard_normal((6, 200, 200))
    got = dict(fk.forked_map(lambda i: (os.getpid(), blas_threads(), data[i] @ data[i].T), range(6), 3))
    assert sorted(got) == list(range(6))
    pids = {pid for pid, _, _ in got.values()}
    assert len(pids) == 3 and PARENT not in pids
    assert all(threads == [1] * len(before) for _, threads, _ in got.values())
    for i, (_, _, product) in got.items():
        np.testing.assert_allclose(product, data[i] @ data[i].T, rtol=1e-12)
    assert blas_threads() == before  # the parent's pool is as it was
    assert not children()


def test_an_item_whose_child_dies_is_computed_here():
    def dies_in_child_on_two(i):
        if i == 2 and os.getpid() != PARENT:
            os.kill(os.getpid(), signal.SIGKILL)  # as the kernel's OOM killer would
        return i * i, os.getpid()

    got = dict(fk.forked_map(dies_in_child_on_two, range(5), 2))
    assert {i: v[0] for i, v in got.items()} == {i: i * i for i in range(5)}
    assert got[2][1] == PARENT and got[1][1] != PARENT
    assert not children()


def test_an_error_is_raised_here_as_itself():
    def fails_on_three(i):
        if i == 3:
            raise KeyError(f"no item {i}")
        return i

    with pytest.raises(KeyError, match="no item 3"):
        list(fk.forked_map(fails_on_three, range(4), 2))
    assert not children()


def test_cancelled_work_ends_with_its_children():
    start = time.monotonic()
    got = list(fk.forked_map(lambda i: time.sleep(30), range(2), 2, cancelled=lambda: time.monotonic() > start + 1))
    assert got == [] and time.monotonic() - start < 10
    assert not children()


def test_an_iterator_closed_early_kills_its_children():
    pairs = fk.forked_map(lambda i: i if i == 0 else time.sleep(30), range(2), 2)
    assert next(pairs) == (0, 0)
    pairs.close()
    assert not children()


def test_one_worker_or_no_fork_computes_here_in_turn(monkeypatch):
    assert list(fk.forked_map(lambda i: (i, os.getpid()), range(3), 1)) == [(i, (i, PARENT)) for i in range(3)]
    monkeypatch.setattr(fk, "can_fork", lambda: False)
    assert fk.workers() == 1
    assert [pid for _, (_, pid) in fk.forked_map(lambda i: (i, os.getpid()), range(3), 4)] == [PARENT] * 3


@pytest.mark.parametrize("value", ["0", "-2", "two", "1.5"])
def test_workers_from_the_environment(monkeypatch, value):
    monkeypatch.setenv(fk.WORKERS_VAR, "3")
    assert fk.workers() == 3
    monkeypatch.setenv(fk.WORKERS_VAR, value)
    with pytest.raises(fk.WorkersError, match=f"ATLAS_WORKERS='{value}' must be a whole number"):
        fk.workers()
    monkeypatch.delenv(fk.WORKERS_VAR)
    assert 1 <= fk.workers() <= min(fk.MOST, len(os.sched_getaffinity(0)))


def test_results_too_large_for_a_pipe_buffer_and_empty_work():
    assert list(fk.forked_map(len, [], 2)) == []
    got = dict(fk.forked_map(lambda i: np.full(2_000_000, i, dtype=np.float32), range(3), 2))
    assert all(float(v.sum()) == 2_000_000 * i for i, v in got.items())
    assert not children()
