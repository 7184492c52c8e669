"""Every head's thumbnail and statistics on worker processes (``viz_core.every_head``) as the cores grow.

A SmolLM2-shaped capture of random queries and keys at ``--tokens`` (30 layers of 9 query heads on 3
key heads, head_dim 64, causal: bench_long_overview's layer, 30 times), in files of a temporary
folder mapped into memory as a long capture keeps them (``capture.mapped``); its 270 heads summarised
by ``every_head.all_heads`` in this process alone (numpy's BLAS on every core: the baseline) and on
2, 4, 8 … workers (one BLAS thread each), up to the cores this process may use, all with the
compiled pass (``viz_core.fused``); and on 2 workers with numpy's passes instead (``ATLAS_NUMBA=0``).
Every run's thumbnails are checked against the first's. Median of ``--repeat`` runs each, alternated.

Run: python -m bench.bench_every_head [--tokens 8192] [--repeat 2]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", str(len(os.sched_getaffinity(0))))  # the baseline's: every core

import argparse
import statistics
import tempfile
from pathlib import Path
from unittest.mock import patch

import numpy as np

from attention_atlas.models.adapters.capture import mapped
from attention_atlas.viz_core import blockwise as bw
from attention_atlas.viz_core import every_head as eh
from attention_atlas.viz_core import fused
from bench.bench_long_overview import LAYERS, smollm2_layer
from bench.measure import timed
from bench.results import machine, write_section


def smollm2_shaped(n: int, folder: Path) -> bw.QKCapture:
    one = smollm2_layer(n)
    q, k = mapped(one.queries[0], folder), mapped(one.keys[0], folder)
    return bw.QKCapture(
        one.model_id, [q] * LAYERS, [k] * LAYERS, one.scaling * LAYERS, True, one.tokens, one.special
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=8192)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args(argv)
    cores = len(os.sched_getaffinity(0))
    counts = [w for w in (2, 4, 8, 16, 32) if w <= cores] or [1]
    runs = {(w, compiled): [] for w in [1, *counts] for compiled in (True, False) if compiled or w == counts[0]}
    with tempfile.TemporaryDirectory() as folder:
        cap = smollm2_shaped(args.tokens, Path(folder))
        first = None
        for _ in range(args.repeat):
            for w, compiled in runs:
                with patch.dict(os.environ, {fused.NUMBA_VAR: "1" if compiled else "0"}):  # workers inherit it
                    t, _, got = timed(lambda w=w: eh.all_heads(cap, n_workers=w))
                runs[w, compiled].append(t)
                first = first or got
                np.testing.assert_allclose(got[0], first[0], rtol=1e-5, atol=2e-6)
    alone = statistics.median(runs[1, True])
    lines = [
        "## Every head's summaries on worker processes (bench_every_head)",
        "",
        f"{machine()}; {cores} cores for this process; a SmolLM2-shaped capture of random queries and keys "
        f"at {args.tokens:,} tokens in mapped files (30 layers of 9 query heads on 3 key heads), all 270 "
        f"heads' thumbnails and statistics; median of {args.repeat}, alternated; every run's thumbnails "
        "equal the first's.",
        "",
        "| where | seconds | against one process |",
        "| --- | --- | --- |",
        f"| one process (numpy's BLAS threads), the compiled pass | {alone:.1f} s | 1.00× |",
    ]
    for w, compiled in list(runs)[1:]:
        t = statistics.median(runs[w, compiled])
        how = ", the compiled pass" if compiled else ", numpy's passes (`ATLAS_NUMBA=0`)"
        lines.append(f"| {w} worker processes, one BLAS thread each{how} | {t:.1f} s | {alone / t:.2f}× |")
    print("\n".join(lines), flush=True)
    write_section("bench_every_head", "\n".join(lines))


if __name__ == "__main__":
    main()
