"""Long context (issue 12): SmolLM2 at 2,048 and 8,192 tokens from captured queries and keys.

Measured in one run on the CPU with two torch threads (issue 12's goals in brackets):
- capture forward vs a plain SDPA forward of the same ids (same weights, ≤ 1.3×);
- resident memory holding the 8,192-token capture, above the same process after a 16-token one (≤ 1 GB);
- one head's overview (≤ 1024² cells, max-pooled) at 8,192 (≤ 2 s) and 2,048 (≤ 0.5 s); a 512² zoom
  window (≤ 0.3 s); the model view's payload at 8,192 (≤ 2 MB): every head's 32² max-pooled
  thumbnail as viz_core.long_figures.long_model_view (the page's and cli.py figure's), its JSON;
- all 270 heads' thumbnails and statistics at 8,192 (issue 26: ≤ 15 s; the time a page would wait),
  on worker processes (``viz_core.every_head``) with the compiled pass (``viz_core.fused``), against
  numpy's passes on them and against one process, alternated; bench/bench_long_overview.py
  times the key groups against the per-head path before on random q/k.
The chromium click-to-head time at 2,048 tokens is bench/bench_long_click.py's (the page half).

Run: python -m bench.bench_long_context [--sizes 2048 8192]
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import time
from datetime import date
from unittest.mock import patch

import numpy as np
import plotly.io as pio
import torch

from attention_atlas.models.adapters import capture as cp
from attention_atlas.models.registry import load
from attention_atlas.viz_core import blockwise as bw
from attention_atlas.viz_core import every_head as eh
from attention_atlas.viz_core import fused
from attention_atlas.viz_core import sentences as sn
from attention_atlas.viz_core.long_figures import long_model_view
from bench.measure import PeakRss, children_own_mb, ids_of, peak_mb, rss_mb, timed
from bench.results import machine, write_section

CPU = torch.device("cpu")
LAYER, HEAD = 15, 4  # "any head": one in the middle


def sdpa_twin(model):
    """The same weights on transformers' plain SDPA path (the baseline forward)."""
    twin = copy.deepcopy(model, {id(p): p for p in model.parameters()}).eval()
    twin.set_attn_implementation("sdpa")
    return twin


def capture_of(adapter, ids) -> bw.QKCapture:
    store = cp.capture_ids(adapter, ids)
    n = ids.shape[1]
    enc = cp.encoded(adapter, ids, [False] * n, list(range(n)))
    return cp._to_capture(adapter, store, enc, [])


def products_alone(cap: bw.QKCapture) -> float:
    """Seconds of nothing but every head's q·kᵀ, a row block at a time over the keys it reads (as
    the summaries multiply them): the floor under every head's thumbnail and statistics."""
    t = time.perf_counter()
    for layer in range(cap.n_layers):
        for head in range(cap.n_heads):
            q, k = cap.head_qk(layer, head)
            kt = np.ascontiguousarray(k.T)
            for start, stop in bw.row_blocks(cap.n_tokens, bw.SUMMARY_BLOCK):
                q[start:stop] @ kt[:, :stop]
    return time.perf_counter() - t


def every_head(cap: bw.QKCapture, repeat: int) -> tuple[float, float, float, float, tuple]:
    """Median seconds of every head's thumbnail and statistics on worker processes with the compiled
    pass (as the page, the command line and the notebook run them), on them with numpy's passes
    (``ATLAS_NUMBA=0``) and in this process alone, alternated; the most own memory a
    worker held (MB, sampled); the workers' result."""
    spread, passes, alone, own = [], [], [], 0.0
    for _ in range(repeat):
        with PeakRss(read=lambda: children_own_mb(eh.__name__), every=0.5) as workers:  # /proc: not free
            t, _, result = timed(lambda: eh.all_heads(cap))
        spread.append(t)
        own = max(own, workers.peak)
        with patch.dict(os.environ, {fused.NUMBA_VAR: "0"}):  # the workers inherit it
            passes.append(timed(lambda: eh.all_heads(cap))[0])
        alone.append(timed(lambda: eh.all_heads(cap, n_workers=1))[0])
    return (*(statistics.median(t) for t in (spread, passes, alone)), own, result)


def forward_ratio(adapter, plain, n: int) -> tuple[float, float, bw.QKCapture, float]:
    """Seconds of the capture and of the plain forward, the capture, and the resident memory
    right after the capture (before the plain forward's activations come and go)."""
    ids = ids_of(n)
    with torch.no_grad():
        t_cap, _, cap = timed(lambda: capture_of(adapter, ids))
        held = rss_mb()
        t_plain, _, _ = timed(lambda: plain.base_model(input_ids=ids))
    return t_cap, t_plain, cap, held


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2048, 8192])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=2, help="pairs of every-head summaries timed")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", str(args.threads))
    started = machine()
    adapter = load("smollm2", CPU)
    plain = sdpa_twin(adapter.model)
    with torch.no_grad():
        capture_of(adapter, ids_of(16)), plain.base_model(input_ids=ids_of(16))  # warm both paths
    base_rss = rss_mb()
    lines = [
        "## Long context (bench_long_context)",
        "",
        f"{date.today()}, {started}; smollm2 on the CPU, random token ids, one timing each.",
        "",
        "| tokens | capture forward | plain SDPA forward | ratio [≤ 1.3] | overview (1024² max) | zoom 512² "
        "| a head by sentence [≤ 1 s at 8,192] |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    caps = {}
    for n in args.sizes:
        t_cap, t_plain, cap, held = forward_ratio(adapter, plain, n)
        t_over, _, red = timed(lambda cap=cap: bw.reduce_head(cap, LAYER, HEAD))
        side = min(512, n // 2)  # a window below the diagonal: queries [n/2, n/2 + side), keys before them
        box = ((n // 2, n // 2 + side), (n // 2 - side, n // 2))
        t_zoom, _, _ = timed(lambda cap=cap, box=box: bw.window(cap, LAYER, HEAD, *box))
        parts = sn.spans(cap.tokens, "sentence")
        t_sent, _, _ = timed(lambda cap=cap, parts=parts: sn.by_span(cap, LAYER, HEAD, parts))
        lines.append(
            f"| {n:,} | {t_cap:.2f} s | {t_plain:.2f} s | {t_cap / t_plain:.2f}× | "
            f"{t_over:.2f} s ({red.values.shape[0]}² cells) | {t_zoom * 1000:.0f} ms | "
            f"{t_sent:.2f} s ({len(parts)} sentences) |"
        )
        caps = {n: (cap, held)}  # keep only the latest capture alive (its memory is what is measured)
        print(lines[-1], flush=True)
    n, (cap, held) = next(iter(caps.items()))
    lines += [
        "",
        f"Resident memory holding the {n:,}-token capture ({cap.nbytes / 2**20:,.0f} MB of float32 q/k): "
        f"{held - base_rss:,.0f} MB above the same process after a 16-token input [≤ 1,024 MB] "
        f"({held:,.0f} MB right after the capture, {base_rss:,.0f} MB then; capture returns the forward's "
        f"freed activations with malloc_trim above 1,024 tokens; peak RSS of the whole run {peak_mb():,.0f} MB, "
        "during the forwards).",
    ]
    print(lines[-1], flush=True)
    t_all, t_passes, t_one, own, (thumbs, table) = every_head(cap, args.repeat)
    t_products = products_alone(cap)
    payload = len(pio.to_json(long_model_view(thumbs), validate=False).encode())
    lines += [
        "",
        f"Model view at {n:,} tokens: {thumbs.shape[0]} × {thumbs.shape[1]} heads, {thumbs.shape[-1]}² max-pooled "
        f"thumbnails, payload {payload / 2**20:.2f} MB [≤ 2 MB] (the Plotly JSON, model_view's uint8 tile "
        f"encoding). Every head's thumbnail and statistics took **{t_all:.1f} s** [≤ 15 s] on "
        f"{eh.workers()} worker processes (`viz_core.every_head`, one BLAS thread each, the capture's "
        f"files mapped, the compiled pass of `viz_core.fused`; each worker's own memory at most {own:,.0f} "
        f"MB), against {t_passes:.1f} s on the same workers with numpy's passes (`ATLAS_NUMBA=0`: "
        f"{t_passes / t_all:.2f}×) and {t_one:.1f} s in one process (numpy's two BLAS threads, "
        f"the compiled pass: {t_one / t_all:.2f}×) in the same run (medians of {args.repeat}, "
        "alternated); nothing but their q·kᵀ products, block by block "
        f"as the summaries multiply them, in one process, took {t_products:.0f} s. Patterns: "
        + ", ".join(
            f"{p} {sum(r['pattern'] == p for r in table)}" for p in sorted({r["pattern"] for r in table})
        )
        + ".",
        "",
        "The browser's click-to-head time at 2,048 tokens: bench_long_click (below).",
    ]
    print("\n".join(lines[-4:]), flush=True)
    write_section("bench_long_context", "\n".join(lines))


if __name__ == "__main__":
    main()
