"""Every head's thumbnail and statistics of a long input (issue 26: all 270 SmolLM2 heads at 8,192
tokens ≤ 15 s, 45 s before): the per-head path before (``old_head_summary`` below, a copy of what
``blockwise.head_summary`` was: every row block's normalised weights through ``head_stats.row_sums``
and the thumbnail's max pooling) against ``blockwise.layer_summary`` (the query heads that share a
key head together, statistics from the logits), timed alternately in one run.

A SmolLM2-shaped capture of random float32 queries and keys (one layer of 9 query heads on 3 key
heads, head_dim 64, causal; standard normal × 0.5): the seconds of one layer (wall, and CPU of all
threads: steadier on a shared machine), median of ``--repeat`` runs each, times 30 for all 270 heads (every SmolLM2 layer has this shape, so a layer's time is
the model's thirtieth). Both paths must give the same numbers: the run fails if a thumbnail differs
by more than 1e-6 or a statistic by more than 1e-5 relative (1e-6 absolute).

Run: OPENBLAS_NUM_THREADS=2 python -m bench.bench_long_overview [--sizes 2048 8192] [--repeat 3]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "2")  # before numpy loads OpenBLAS

import argparse

import numpy as np

from attention_atlas.viz_core import blockwise as bw
from attention_atlas.viz_core import head_stats as hs
from bench.measure import paired
from bench.results import machine, write_section

HEADS, KEY_HEADS, DIM, LAYERS = 9, 3, 64, 30  # SmolLM2-135M


def smollm2_layer(n: int, seed: int = 0) -> bw.QKCapture:
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((HEADS, n, DIM), dtype=np.float32) * 0.5
    k = rng.standard_normal((KEY_HEADS, n, DIM), dtype=np.float32) * 0.5
    special = [i == 0 for i in range(n)]
    return bw.QKCapture("smollm2-shaped", [q], [k], [DIM**-0.5], True, ["x"] * n, special)


# -- the per-head path before key groups (a copy, for the timing and the check) ---------------------


def old_rows(q, k, scaling, causal, start, stop):
    """``blockwise.rows`` before (a plain layer): the mask built over the whole block."""
    width = min(stop, k.shape[0]) if causal else k.shape[0]
    scores = q[start:stop] @ k[:width].T
    scores *= np.float32(scaling)
    if causal:
        keys, queries = np.arange(width)[None, :], np.arange(start, stop)[:, None]
        scores[keys > queries] = -np.inf
    scores -= scores.max(-1, keepdims=True)
    np.exp(scores, out=scores)
    scores /= scores.sum(-1, keepdims=True)
    out = np.zeros((stop - start, k.shape[0]), dtype=np.float32)
    out[:, :width] = scores
    return out


def old_head_summary(cap: bw.QKCapture, layer: int, head: int, thumb: int = 32) -> tuple[np.ndarray, dict]:
    n = cap.n_tokens
    pooler, sums = bw._Pooler(n, thumb, "max"), np.zeros(len(hs.STATISTICS))
    q, k = cap.head_qk(layer, head)
    for start, stop in bw.row_blocks(n):
        part = old_rows(q, k, cap.scaling[layer], cap.causal, start, stop)
        pooler.add(start, bw._pool(part, pooler.cols, "max", axis=1))
        sums += hs.row_sums(part, start, cap.special)
    return pooler.result().values, {"layer": layer, "head": head, **hs.head_row(hs.finish(sums, n, n))}


def old_layer(cap: bw.QKCapture) -> tuple[np.ndarray, list[dict]]:
    heads = [old_head_summary(cap, 0, h) for h in range(cap.n_heads)]
    return np.stack([t for t, _ in heads]), [r for _, r in heads]


def differences(old, new) -> tuple[float, float]:
    """The largest thumbnail difference and the largest statistic difference beyond tolerance
    (|a − b| / max(1e-5 |b|, 1e-6): at most 1 when equal to float32 rounding)."""
    (t_old, r_old), (t_new, r_new) = old, new
    worst = max(
        abs(a[name] - b[name]) / max(1e-5 * abs(a[name]), 1e-6)
        for a, b in zip(r_old, r_new, strict=True)
        for name in hs.NAMES
    )
    assert [a["pattern"] for a in r_old] == [b["pattern"] for b in r_new]
    return float(np.abs(t_old - t_new).max()), worst


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2048, 8192])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    lines = [
        "## Every head's thumbnail and statistics of a long input (bench_long_overview)",
        "",
        f"{machine()}; one SmolLM2-shaped layer of random queries and keys (9 query heads on 3 key heads, "
        f"head_dim 64, causal), median of {args.repeat}, the two paths alternating; × {LAYERS} for SmolLM2's 270 heads.",
        "",
        "| tokens | per head (before), a layer | key groups (now), a layer | ratio | 270 heads before → now | CPU ratio | same numbers |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for n in args.sizes:
        lines.append(row(n, args.repeat))
        print(lines[-1], flush=True)
    write_section("bench_long_overview", "\n".join(lines))


def row(n: int, repeat: int) -> str:
    """One size's table row: both paths checked equal, then timed alternately."""
    cap = smollm2_layer(n)
    thumb, stats = differences(old_layer(cap), bw.layer_summary(cap, 0))
    if thumb > 1e-6 or stats > 1:
        raise SystemExit(f"{n} tokens: the paths differ (thumbnails by {thumb:.2e}, statistics {stats:.2f}×)")
    (old, old_cpu), (new, new_cpu) = paired(
        lambda: old_layer(cap), lambda: bw.layer_summary(cap, 0), repeat
    )
    return (
        f"| {n:,} | {old:.2f} s | {new:.2f} s | {old / new:.1f}× | {old * LAYERS:.0f} s → {new * LAYERS:.0f} s "
        f"| {old_cpu / new_cpu:.1f}× | thumbnails within {thumb:.1e}, statistics at {stats:.2f} of the tolerance |"
    )

if __name__ == "__main__":
    main()
