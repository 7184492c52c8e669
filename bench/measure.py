"""What the benches measure with, in one place: resident memory (now, its peak while a block runs),
wall and CPU seconds of a call, their medians (alone and timed alternately), and seeded token ids."""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import torch


def rss_mb() -> float:
    """Resident memory of this process now, MB (Linux /proc; elsewhere the peak so far)."""
    try:
        pages = int(Path("/proc/self/statm").read_text(encoding="ascii").split()[1])
        return pages * resource.getpagesize() / 2**20
    except OSError:
        return peak_mb()


def peak_mb(children: bool = False) -> float:
    """The highest resident memory of this process so far, MB (Linux reports KiB); ``children``:
    the largest of its waited-for child processes' instead."""
    who = resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF
    return resource.getrusage(who).ru_maxrss / 1024


class PeakRss:
    """The highest resident memory seen while the block runs, sampled every ``every`` seconds (5 ms;
    ``read``: how it is read, MB; ``own_mb`` for anonymous memory alone)."""

    def __init__(self, read=None, every: float = 0.005):
        self.read, self.every = read or rss_mb, every

    def __enter__(self):
        self.peak, self._stop = self.read(), threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self

    def _watch(self):
        while not self._stop.wait(self.every):
            self.peak = max(self.peak, self.read())

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.read())


def peak_above(fn) -> float:
    """MB of resident memory above the start at the highest point while ``fn()`` runs."""
    base = rss_mb()
    with PeakRss() as peak:
        fn()
    return peak.peak - base


def timed(fn) -> tuple[float, float, object]:
    """Wall and CPU seconds of ``fn()``, and its result."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, out


def _medians(runs: list[tuple[float, float]]) -> tuple[float, float]:
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


def measure(fn, repeat: int) -> tuple[float, float]:
    """Median wall and CPU seconds of ``fn()`` over ``repeat`` runs."""
    return _medians([timed(fn)[:2] for _ in range(repeat)])


def paired(fn_a, fn_b, repeat: int) -> tuple[tuple[float, float], tuple[float, float]]:
    """``measure`` of two functions timed alternately, so load drift hits both alike."""
    a, b = [], []
    for _ in range(repeat):
        a.append(timed(fn_a)[:2])
        b.append(timed(fn_b)[:2])
    return _medians(a), _medians(b)


def ids_of(n: int) -> torch.Tensor:
    """``n`` token ids, the same for the same ``n`` (seeded), from the common part of a vocabulary."""
    return torch.randint(100, 40_000, (1, n), generator=torch.Generator().manual_seed(n))



def own_mb() -> float:
    """This process's own (anonymous) resident memory, MB (Linux /proc): what swapping would have
    to write out, unlike pages of mapped files, which the system can drop and read again."""
    for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) / 1024
    return rss_mb()


def children_own_mb(command: str = "") -> float:
    """The largest own (anonymous) resident memory now of this process's child processes whose
    command line holds ``command``, MB (0 with none; Linux /proc): a worker's own, without the file
    pages it maps. A child between vfork and exec still shows this process's memory: ``command``
    leaves it out."""
    most = 0.0
    for entry in Path("/proc").iterdir():
        try:
            status = (entry / "status").read_text(encoding="ascii") if entry.name.isdigit() else ""
            line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = dict(row.split(":", 1) for row in status.splitlines() if ":" in row)
        if fields.get("PPid", "").strip() == str(os.getpid()) and "RssAnon" in fields and command in line:
            most = max(most, int(fields["RssAnon"].split()[0]) / 1024)
    return most


def mapped_mb(folder: Path) -> float:
    """Resident MB of this process's mappings of files in ``folder`` (deleted ones included)."""
    total, inside = 0, False
    for line in Path("/proc/self/smaps").read_text(encoding="utf-8", errors="replace").splitlines():
        head = line.split()
        if head and "-" in head[0] and len(head) >= 5:  # a mapping's first line: range perms offset dev inode [path]
            inside = len(head) > 5 and head[5].startswith(str(folder))
        elif inside and line.startswith("Rss:"):
            total += int(head[1])
    return total / 1024


def child_json(module: str, *args) -> dict:
    """Run ``python -m module --child args…`` in a fresh process with two BLAS threads; the JSON
    object its last line prints (a benchmark's measurement, away from this process's memory)."""
    out = subprocess.run(
        [sys.executable, "-m", module, "--child", *map(str, args)],
        capture_output=True,
        text=True,
        check=True,
        env=dict(os.environ, OPENBLAS_NUM_THREADS="2"),
    )
    return json.loads(out.stdout.strip().splitlines()[-1])
