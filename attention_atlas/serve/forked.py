"""Numpy work spread over the machine's cores: items computed in forked children, one BLAS thread each.

Within one process, numpy's passes (exp, sums, reductions) run on one core, and two Python threads
cannot share the work out: OpenBLAS's threads are one pool for the whole process, its size cannot be
set for one thread alone (``openblas_set_num_threads_local`` sets it for every thread in the pthreads
build numpy ships), and a pool's threads spin for a while after each product, holding the other core.
Children made by ``fork`` do not share that pool. Each inherits the parent's arrays without a copy
(a capture's memory-mapped queries and keys too), holds its BLAS to one thread (``threadpoolctl``,
safe there: a forked child has one thread), computes its share of the items and sends each result
back through a pipe. The parent yields them as they come.

- **Nothing is lost.** An item no child sent back (it raised, was killed, ran out of memory) is
  computed again in this process, where its error, if it has one, is raised as usual.
- **Where fork is not safe or not there** (anything but Linux: macOS's system libraries are not
  fork-safe), with one core, or with ``ATLAS_WORKERS=1``, the items are computed here, in turn.
- A child runs nothing but ``fn`` (no import, no output) and leaves with ``os._exit``: no exit
  handler, buffer flush or lock of the parent's other threads is touched in it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import warnings
from collections.abc import Callable, Iterable, Iterator
from multiprocessing.connection import Connection, Pipe, wait
from typing import TypeVar

from threadpoolctl import threadpool_limits  # imported here, never first in a child

WORKERS_VAR = "ATLAS_WORKERS"
MOST = 8  # children at most by default (each holds a block of work's memory)
POLL = 0.5  # s between looks at ``cancelled`` while children work

T = TypeVar("T")
R = TypeVar("R")


class WorkersError(ValueError):
    """``ATLAS_WORKERS`` is not a whole number ≥ 1."""


def can_fork() -> bool:
    return sys.platform.startswith("linux") and hasattr(os, "fork")


def workers() -> int:
    """How many children ``forked_map`` uses: ``ATLAS_WORKERS``, else the cores this process may run
    on (at most ``MOST``); 1 where fork is not offered."""
    wanted = os.environ.get(WORKERS_VAR, "").strip()
    if wanted and (not wanted.isdigit() or int(wanted) < 1):
        raise WorkersError(f"{WORKERS_VAR}={wanted!r} must be a whole number ≥ 1")
    if not can_fork():
        return 1
    return int(wanted) if wanted else min(len(os.sched_getaffinity(0)), MOST)


def forked_map(
    fn: Callable[[T], R],
    items: Iterable[T],
    n_workers: int | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> Iterator[tuple[T, R]]:
    """``(item, fn(item))`` for every item, in the order they finish, spread over ``n_workers``
    forked children (``workers()`` by default; item ``i`` goes to child ``i % n``). ``fn`` may be a
    closure: only its results are pickled. ``cancelled()``, asked every ``POLL`` seconds, ends the
    work early (children killed, nothing more yielded). Closing the iterator kills the children too."""
    items = list(items)
    n = min(workers() if n_workers is None else n_workers, len(items))
    if n <= 1 or not can_fork():
        yield from ((item, fn(item)) for item in items)
        return
    children = {}
    try:
        for first in range(n):
            try:
                reader, pid = _start(fn, items, range(first, len(items), n))
            except OSError:  # no memory or processes for another child: its items are done here
                break
            children[reader] = pid
        sent = yield from _collect(children, items, cancelled)
    finally:
        _end(children)
    if cancelled is not None and cancelled():
        return
    yield from ((items[i], fn(items[i])) for i in range(len(items)) if i not in sent)


def _start(fn, items: list, indices: range) -> tuple[Connection, int]:
    """A child that sends ``(index, fn(items[index]))`` for each of ``indices``; its pipe's reading
    end and its pid."""
    reader, writer = Pipe(duplex=False)
    with warnings.catch_warnings():  # Python 3.12+ warns of fork in a threaded process: see the docstring
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child
        try:
            reader.close()
            with threadpool_limits(limits=1, user_api="blas"):
                for i in indices:
                    writer.send((i, fn(items[i])))
        except BaseException:  # the parent computes what did not come, and raises its error there
            pass
        finally:
            os._exit(0)
    writer.close()
    return reader, pid


def _collect(children: dict, items: list, cancelled) -> Iterator:
    """Yield each ``(item, result)`` the children send until every pipe is closed; return the
    indices sent."""
    sent = set()
    while children and not (cancelled is not None and cancelled()):
        for reader in wait(list(children), timeout=POLL):
            try:
                i, result = reader.recv()
            except (EOFError, OSError):  # that child is done, or died
                _reap(children.pop(reader))
                reader.close()
                continue
            sent.add(i)
            yield items[i], result
    return sent


def _end(children: dict) -> None:
    """Kill and reap the children still there (work cancelled, or the iterator closed early)."""
    for reader, pid in children.items():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        _reap(pid)
        reader.close()
    children.clear()


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)
