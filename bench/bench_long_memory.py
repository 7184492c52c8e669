"""Where a long capture's queries and keys live (issue 26): in the process's memory, or in unnamed
files in the cache folder mapped into it (``models.adapters.capture.mapped``, the default from
``SPILL_FROM`` tokens).

SmolLM2 on the sample text (data/long_context, repeated to length) at 2,048 and 8,192 tokens, each
mode in a fresh process of its own, two torch threads. For each: the process's own (anonymous)
resident memory above the loaded model right after the capture, the mapped files' resident pages
after the views below read them, and the views' seconds (one head's overview, a 512² zoom window,
a head by sentence, and one layer's thumbnails and statistics: 9 heads). The weights must be the
same either way: each child prints a checksum of its overview, and the run fails if they differ.

Run: python -m bench.bench_long_memory [--sizes 2048 8192]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from datetime import date

import numpy as np
import torch

from attention_atlas.models.adapters import capture as cp
from attention_atlas.models.registry import load
from attention_atlas.ui.long_cached import SAMPLE
from attention_atlas.viz_core import blockwise as bw
from attention_atlas.viz_core import sentences as sn
from bench.measure import mapped_mb, own_mb, timed
from bench.results import machine, write_section

LAYER, HEAD = 15, 4


def sample_ids(adapter, n: int) -> torch.Tensor:
    """The first ``n`` tokens of the sample text, repeated as often as needed."""
    ids = adapter.tokenizer(SAMPLE.read_text(encoding="utf-8"), return_tensors="pt")["input_ids"]
    return ids.repeat(1, -(-n // ids.shape[1]))[:, :n]


def child(n: int, spill: bool) -> dict:
    """One mode at one length, in this process: what ``main`` tabulates."""
    torch.set_num_threads(2)
    adapter = load("smollm2", torch.device("cpu"))
    ids = sample_ids(adapter, n)
    base = own_mb()
    with torch.no_grad():
        t_cap, _, store = timed(lambda: cp.capture_ids(adapter, ids, spill=spill))
    enc = cp.encoded(adapter, ids, [False] * n, list(range(n)))
    cap = cp._to_capture(adapter, store, enc, [])
    held = own_mb()
    t_over, _, red = timed(lambda: bw.reduce_head(cap, LAYER, HEAD))
    side = min(512, n // 2)
    box = ((n // 2, n // 2 + side), (n // 2 - side, n // 2))
    t_zoom, _, _ = timed(lambda: bw.window(cap, LAYER, HEAD, *box))
    parts = sn.spans(cap.tokens, "sentence")
    t_sent, _, _ = timed(lambda: sn.by_span(cap, LAYER, HEAD, parts))
    t_layer, _, _ = timed(lambda: bw.layer_summary(cap, LAYER, 32))  # as the page's background summaries
    return dict(
        capture=t_cap,
        anon=held - base,
        file=mapped_mb(cp.spill_dir()),
        qk=cap.nbytes / 2**20,
        overview=t_over,
        zoom=t_zoom,
        sentence=t_sent,
        layer=t_layer,
        sentences=len(parts),
        checksum=float(np.float64(red.values).sum()),
        mapped=isinstance(cap.queries[0], np.memmap),
    )


def run_child(n: int, spill: bool) -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "bench.bench_long_memory", "--child", str(n), "--spill", str(int(spill))],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def row(n: int, mode: str, r: dict, ram: dict) -> str:
    return (
        f"| {n:,} | {mode} | {r['capture']:.1f} s | {r['anon']:,.0f} MB | {r['file']:,.0f} MB | "
        f"{r['overview']:.2f} s ({r['overview'] / ram['overview']:.2f}×) | {r['zoom'] * 1000:.0f} ms | "
        f"{r['sentence']:.2f} s | {r['layer']:.2f} s ({r['layer'] / ram['layer']:.2f}×) |"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2048, 8192])
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--spill", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, bool(args.spill))))
        return
    started = machine()
    lines = [
        "## Where a long capture's queries and keys live (bench_long_memory)",
        "",
        f"{date.today()}, {started}; smollm2 on the CPU, two threads, the sample text repeated to length, "
        "each mode in a fresh process, one timing each. Memory: the process's own (anonymous) resident "
        "memory above the loaded model right after the capture, and the mapped files' resident pages "
        "after the views read them (the system's file cache: dropped, not swapped, when memory is short).",
        "",
        "| tokens | queries and keys | capture | own memory | mapped pages | overview | zoom 512² "
        "| a head by sentence | a layer's 9 thumbnails |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for n in args.sizes:
        ram, mapped = run_child(n, False), run_child(n, True)
        if ram["checksum"] != mapped["checksum"] or not mapped["mapped"] or ram["mapped"]:
            raise SystemExit(f"{n} tokens: the two modes differ: {ram} vs {mapped}")
        lines += [row(n, f"in memory ({ram['qk']:,.0f} MB)", ram, ram), row(n, "mapped files", mapped, ram)]
        print("\n".join(lines[-2:]), flush=True)
    lines += ["", "Both modes' overviews are the same numbers (checked: equal checksums in each run)."]
    write_section("bench_long_memory", "\n".join(lines))


if __name__ == "__main__":
    main()
