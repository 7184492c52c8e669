"""Every head's thumbnail and statistics of a capture (``blockwise.layer_summary``, a layer at a
time), here in turn or spread over worker processes, one a core.

Why processes: within one, numpy's passes (exp, sums, reductions) run on one core between BLAS
calls, and two threads cannot share the work out. OpenBLAS's threads are one pool per process, its
size cannot be set for one thread alone (``openblas_set_num_threads_local`` sets it for all in the
pthreads build numpy ships), and after each product its threads spin a while, holding the other core.

- **Started, not forked.** The workers are new interpreters (``subprocess``: vfork and exec), so
  nothing of this process's threads and locks goes with them. A fork would not be safe here: OpenBLAS
  shuts its threads down before every fork, under whatever product another thread has in flight (a
  server thread's SVD was seen spinning for good after one).
- **No copy of the queries and keys.** A long capture keeps them in files of the cache folder mapped
  into memory (``models.adapters.capture.mapped``, which keeps each file open on its array); the
  workers get those files' descriptors and map the same pages of the system's file cache. A capture
  held in memory (below ``SPILL_FROM`` tokens, or a folder that could not take it) is summarised here.
- Each worker holds its BLAS to one thread (``OPENBLAS_NUM_THREADS=1`` in its environment), reads
  its request (the layers it does and what the capture is besides its arrays) on stdin, and sends
  each layer's summary back through a pipe as soon as it is done. Layer ``i`` of ``n`` goes to worker
  ``i % n``, so the first layers come first.
- **Nothing is lost.** A layer no worker sent back (it failed, was killed, ran out of memory) is
  computed here, where its error, if it has one, is raised as usual.

``python -m attention_atlas.viz_core.every_head`` is a worker's entry point.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import pickle
import site
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator
from multiprocessing.connection import wait
from pathlib import Path

import numpy as np

from attention_atlas.viz_core import blockwise as bw

WORKERS_VAR = "ATLAS_WORKERS"
MOST = 8  # workers at most by default (each holds a block of work's memory)
POLL = 0.5  # s between looks at ``cancelled`` while the workers work
ONE_THREAD = {name: "1" for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])  # where ``attention_atlas`` is, for the workers

Summary = tuple[np.ndarray, list[dict]]  # one layer's thumbnails [heads, t, t] and table rows


class WorkersError(ValueError):
    """``ATLAS_WORKERS`` is not a whole number ≥ 1."""


def workers() -> int:
    """How many worker processes: ``ATLAS_WORKERS``, else the cores this process may run on (at most
    ``MOST``)."""
    wanted = os.environ.get(WORKERS_VAR, "").strip()
    if wanted and (not wanted.isdigit() or int(wanted) < 1):
        raise WorkersError(f"{WORKERS_VAR}={wanted!r} must be a whole number ≥ 1")
    if wanted:
        return int(wanted)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return min(cores, MOST)


def all_heads(
    cap: bw.QKCapture, thumb: int = 32, block: int = bw.SUMMARY_BLOCK, progress=None, n_workers: int | None = None
) -> tuple[np.ndarray, list[dict]]:
    """Every head: max-pooled thumbnails ``[layers, heads, ≤thumb, ≤thumb]`` and ``head_table``'s rows
    (a list of dicts, layer by layer; ``pandas.DataFrame(rows)`` is the table), on ``n_workers``
    processes (``workers()`` by default). ``progress(layer, head)`` after each head."""
    side = min(cap.n_tokens, thumb)
    thumbs = np.zeros((cap.n_layers, cap.n_heads, side, side), dtype=np.float32)
    tables = {}
    for layer, (tiles, rows) in layer_summaries(cap, range(cap.n_layers), thumb, block, n_workers):
        thumbs[layer], tables[layer] = tiles, rows
        if progress:
            for head in range(cap.n_heads):
                progress(layer, head)
    return thumbs, [row for layer in sorted(tables) for row in tables[layer]]


def layer_summaries(
    cap: bw.QKCapture,
    layers: Iterable[int],
    thumb: int = 32,
    block: int = bw.SUMMARY_BLOCK,
    n_workers: int | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> Iterator[tuple[int, Summary]]:
    """``(layer, layer_summary(cap, layer, thumb, block))`` for each of ``layers``, in the order they
    are done, on ``n_workers`` processes where the capture lives in files, else here in turn.
    ``cancelled()``, asked every ``POLL`` seconds, ends the work early (the workers killed, nothing
    more yielded). Closing the iterator kills the workers too."""
    layers, cancelled = list(layers), cancelled or (lambda: False)
    n = min(workers() if n_workers is None else n_workers, len(layers))
    files = _descriptors(cap)
    sent: set[int] = set()
    if n > 1 and files is not None:
        running = []
        try:
            for first in range(n):
                try:
                    running.append(_start(cap, files, layers[first::n], thumb, block))
                except OSError:  # no memory or processes for another worker: its layers are done here
                    break
            yield from _collect(running, sent, cancelled)
        finally:
            _end(running)
    for layer in layers:
        if layer not in sent and not cancelled():
            yield layer, bw.layer_summary(cap, layer, thumb, block)


def _descriptors(cap: bw.QKCapture) -> list[int] | None:
    """Each layer's queries' and keys' file descriptor, in order; None unless every array is a whole
    file mapped from offset 0 and kept open on it (``capture.mapped``), or where descriptors cannot
    be handed on (anything but POSIX)."""
    if os.name != "posix":
        return None
    fds = []
    for a in _arrays(cap):
        file = getattr(a, "file", None)
        if not isinstance(a, np.memmap) or file is None or file.closed or a.offset:
            return None
        fds.append(file.fileno())
    return fds


def _start(cap: bw.QKCapture, fds: list[int], layers: list[int], thumb: int, block: int):
    """A worker for ``layers``: its process, and the reading end of the pipe its summaries come by."""
    reader, writer = os.pipe()
    request = {
        "arrays": [(fd, a.dtype.str, a.shape) for fd, a in zip(fds, _arrays(cap), strict=True)],
        "capture": {
            "model_id": cap.model_id,
            "scaling": cap.scaling,
            "causal": cap.causal,
            "special": cap.special,
            "variants": cap.variants,
            "n_tokens": cap.n_tokens,
        },
        "layers": layers,
        "thumb": thumb,
        "block": block,
        "out": writer,
    }
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", __name__], stdin=subprocess.PIPE, pass_fds=[*fds, writer], env=_environment()
        )
    finally:
        os.close(writer)
    with contextlib.suppress(BrokenPipeError):  # a worker that died at once: its layers are done here
        proc.stdin.write(pickle.dumps(request))
    with contextlib.suppress(BrokenPipeError):
        proc.stdin.close()
    return proc, os.fdopen(reader, "rb")


def _environment() -> dict[str, str]:
    """A worker's environment: this one, BLAS held to one thread, and this package's folder first on
    ``PYTHONPATH`` unless it is a site folder (an installed package: found there as here; a site
    folder first would put its modules before the standard library's)."""
    env = {**os.environ, **ONE_THREAD}
    sites = {os.path.realpath(p) for p in [*site.getsitepackages(), site.getusersitepackages()]}
    if os.path.realpath(PACKAGE_ROOT) not in sites:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_ROOT, os.environ.get("PYTHONPATH")) if p)
    return env


def _arrays(cap: bw.QKCapture) -> list[np.ndarray]:
    return [x for pair in zip(cap.queries, cap.keys, strict=True) for x in pair]


def _collect(running: list, sent: set[int], cancelled) -> Iterator[tuple[int, Summary]]:
    """Yield each ``(layer, summary)`` the workers send, noting it in ``sent``, until every pipe has
    closed or ``cancelled()``."""
    open_ = {reader: proc for proc, reader in running}
    while open_ and not cancelled():
        for reader in wait(list(open_), timeout=POLL):
            try:
                layer, summary = pickle.load(reader)
            except Exception:  # EOF: that worker is done, or died mid-message
                open_.pop(reader).wait()
                continue
            sent.add(layer)
            yield layer, summary


def _end(running: list) -> None:
    """Kill the workers still at it (work cancelled, or the iterator closed early) and close the pipes."""
    for proc, reader in running:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        reader.close()


# -- the worker --------------------------------------------------------------------------------------


def _mapped(fd: int, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    """The array in the file ``fd`` (from offset 0), mapped read-only: the parent's pages, no copy."""
    size = int(np.prod(shape)) * np.dtype(dtype).itemsize
    return np.frombuffer(mmap.mmap(fd, size, access=mmap.ACCESS_READ), dtype=dtype).reshape(shape)


def _capture(request: dict) -> bw.QKCapture:
    arrays = [_mapped(*spec) for spec in request["arrays"]]
    c = request["capture"]
    return bw.QKCapture(
        c["model_id"],
        arrays[0::2],
        arrays[1::2],
        c["scaling"],
        c["causal"],
        [""] * c["n_tokens"],
        c["special"],
        variants=c["variants"],
    )


def _serve() -> None:
    """A worker: read the request on stdin, send each of its layers' summary as soon as it is done."""
    request = pickle.load(sys.stdin.buffer)
    cap = _capture(request)
    with os.fdopen(request["out"], "wb") as out:
        for layer in request["layers"]:
            pickle.dump((layer, bw.layer_summary(cap, layer, request["thumb"], request["block"])), out)
            out.flush()


if __name__ == "__main__":
    _serve()
