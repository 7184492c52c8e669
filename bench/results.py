"""Write one benchmark's section of bench/RESULTS.md, leaving the other sections alone."""

from __future__ import annotations

import os
import platform
import re
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch

# Same knob as the app: on a shared 2-core machine one thread per process avoids oversubscription.
if os.environ.get("ATLAS_THREADS", "").isdigit():
    torch.set_num_threads(int(os.environ["ATLAS_THREADS"]))

RESULTS = Path(__file__).with_name("RESULTS.md")
HEADER = "# Benchmark results\n\nEach section is rewritten by the script it names; rerun it to refresh.\n"


def machine() -> str:
    """Where and under what load a result was taken (these machines are shared and noisy)."""
    return (
        f"{platform.machine()}, {os.cpu_count()} cores, {torch.get_num_threads()} torch threads, "
        f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}, "
        f"Python {platform.python_version()}, 1-min load average {os.getloadavg()[0]:.1f} at the start"
    )


def median_seconds(fn: Callable[[], object], repeat: int = 20, warmup: int = 2) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def paired_medians(
    fn_a: Callable[[], object], fn_b: Callable[[], object], repeat: int = 20
) -> tuple[float, float]:
    """Median seconds of two functions timed alternately, so load drift hits both alike."""
    fn_a(), fn_b()
    a, b = [], []
    for _ in range(repeat):
        for fn, times in ((fn_a, a), (fn_b, b)):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
    return statistics.median(a), statistics.median(b)


def write_section(name: str, body: str) -> None:
    """Replace (or append) the section between ``<!-- name -->`` markers."""
    text = RESULTS.read_text(encoding="utf-8") if RESULTS.exists() else HEADER
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    block = f"{start}\n{body.strip()}\n{end}"
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.S)
    text = pattern.sub(lambda _: block, text) if pattern.search(text) else f"{text.rstrip()}\n\n{block}\n"
    RESULTS.write_text(text, encoding="utf-8")
