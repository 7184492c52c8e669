"""Self-attention beside a convolution and a recurrent layer, as n doubles: the fitted slopes beside
the tutorial's exponents of n, and the measured crossovers beside n = d and n = k·d.

The same measurement the comparison page makes (``models.attention.complexity.measure``), with more
repeats and a larger budget, at several widths d, on the CPU and on CUDA when there is one.
Run: python -m bench.bench_complexity [--longest 4096] [--widths 32,64,128] [--rnn GRU]
"""

from __future__ import annotations

import argparse
from datetime import date

import torch

from attention_atlas.models.attention import complexity as cx
from bench.results import machine, write_section

K = 3


def devices() -> list[str]:
    return ["cpu", *(["cuda"] if torch.cuda.is_available() else [])]


def measure(d: int, longest: int, rnn: str, device: str) -> cx.Measured:
    setup = cx.Setup(
        cx.geometric_sizes(16, longest),
        d=d,
        k=K,
        rnn=rnn,
        repeats=7,
        budget=cx.Budget(seconds=4.0, bytes=4 << 30),
    )
    return cx.measure(
        setup, device, on_progress=lambda done, total, what: print(f"  {done}/{total} {what}", flush=True)
    )


def where(n: float | None) -> str:
    return "not within the sizes" if n is None else f"{n:,.0f}"


CLOCKS = {"wall": "seconds", "CPU": "cpu_seconds"}


def summary_row(result: cx.Measured, clock: str) -> str:
    d, what = result.setup.d, CLOCKS[clock]
    slopes = [cx.tail_slope(*result.series(layer, what)) for layer in cx.LAYERS]
    attention = result.series(cx.ATTENTION, what)
    vs_rnn = cx.crossover(*attention, *result.series(cx.RECURRENT, what))
    vs_conv = cx.crossover(*attention, *result.series(cx.CONVOLUTION, what))
    shown = " | ".join("—" if s is None else f"{s:.2f}" for s in slopes)
    return (
        f"| {result.device} | {d} | {clock} | {shown} | {d:,} | {where(vs_rnn)} | {K * d:,} | {where(vs_conv)} "
        f"| {len(result.skipped)} |"
    )


def medians_table(result: cx.Measured) -> list[str]:
    sizes = sorted({p.n for p in result.points})
    by = {(p.layer, p.n): p for p in result.points}
    lines = [
        f"Median ms per forward, wall clock / CPU time of the thread, {result.device}, d = {result.setup.d} "
        "(repeats done in brackets where the budget cut them; — skipped):",
        "",
        "| n | " + " | ".join(cx.LAYERS) + " | attention ÷ recurrent (wall) |",
        "| ---: | ---: | ---: | ---: | ---: |",
    ]
    for n in sizes:
        cells = []
        for layer in cx.LAYERS:
            p = by.get((layer, n))
            cut = "" if p is None or p.repeats == 7 else f" ({p.repeats})"
            cells.append("—" if p is None else f"{p.seconds * 1e3:.3g} / {p.cpu_seconds * 1e3:.3g}{cut}")
        a, r = by.get((cx.ATTENTION, n)), by.get((cx.RECURRENT, n))
        ratio = f"{a.seconds / r.seconds:.2f}×" if a and r else "—"
        lines.append(f"| {n:,} | " + " | ".join(cells) + f" | {ratio} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--longest", type=int, default=4096)
    parser.add_argument("--widths", default="32,64,128")
    parser.add_argument("--rnn", default="GRU", choices=cx.RNNS)
    args = parser.parse_args()
    widths = [int(w) for w in args.widths.split(",")]
    where_run = machine()
    results = []
    for device in devices():
        for d in widths:
            print(f"{device}, d = {d}", flush=True)
            results.append(measure(d, args.longest, args.rnn, device))
    lines = [
        f"## Self-attention, convolution, {args.rnn}: cost as n grows (bench/bench_complexity.py)",
        "",
        f"{date.today()}, {where_run}. n = 16 … {args.longest:,} doubling, k = {K}, batch 1, float32, "
        "`torch.no_grad`; the median of 7 forwards after a warm-up (fewer where 7 would pass 4 s), by the wall clock "
        "and by the CPU time of the measuring thread (`time.thread_time`: with one torch thread all the work, and "
        "blind to time spent waiting for a busy CPU). The tutorial's "
        "self-attention softmax(X Xᵀ/√d) X, `Conv1d(d, d, k)`, "
        f"`{args.rnn}(d, d)`. Slopes: least squares on log-log axes over the larger half of the sizes; the tutorial's "
        "exponents of n are 2, 1 and 1. Crossovers: the n where attention's measured time rises above the other "
        "layer's (interpolated on log-log axes), beside the tutorial's n = d (vs the recurrent layer) and n = k·d "
        "(vs the convolution).",
        "",
        f"| device | d | clock | slope: attention (2) | slope: convolution (1) | slope: {args.rnn} (1) | tutorial: n = d "
        f"| measured: attention slower than {args.rnn} from n ≈ | tutorial: n = k·d | measured: slower than the "
        "convolution from n ≈ | sizes skipped |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        *(summary_row(r, clock) for clock in CLOCKS for r in results),
        "",
    ]
    middle = [r for r in results if r.setup.d == widths[len(widths) // 2]]
    for result in middle:
        lines += [*medians_table(result), ""]
    write_section("bench_complexity", "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
