"""Gemma 3 270M at long inputs (issue 26: 32,768 tokens; capture ≤ 1.3× the plain forward, one
head's overview ≤ 5 s, peak resident memory ≤ 1.5 GB above the same command on 16 tokens).

Each measurement runs in a fresh process on the same random token ids (seeded): the model's own
SDPA forward (``attn_implementation="sdpa"``, its base model: no weights kept, the baseline), and
the long-input capture (queries and keys of every layer, mapped from files in the cache from 2,048
tokens), each with the seconds of one forward and the peak resident memory above the same process
after a 16-token input (ru_maxrss), and the peak of its anonymous memory alone (RssAnon, sampled
every 5 ms: ru_maxrss also counts the pages of files mapped in, such as the weights' file, which
the system can drop and read again). The capture's process then times one head's overview (1,024²
max-pooled cells) of a global layer (5: every key) and of a local one (0: its last 512 keys).

Run: python -m bench.bench_gemma3 [--sizes 8192 32768] [--baseline-up-to 32768]  (RESULTS.md's run)
"""

from __future__ import annotations

import argparse
import json
import os
import time
from datetime import date

import torch

from bench.measure import PeakRss, child_json, own_mb, peak_mb
from bench.results import machine, write_section


def child(mode: str, n: int) -> dict:
    """One forward of ``n`` random ids in this process (``mode``: "sdpa" or "capture")."""
    from attention_atlas.models.adapters import capture as cp
    from attention_atlas.models.registry import load

    torch.set_num_threads(2)
    adapter = load("gemma3-270m", torch.device("cpu"))
    ids = torch.randint(1000, 200_000, (1, n), generator=torch.Generator().manual_seed(n))
    if mode == "sdpa":
        from transformers import AutoModelForCausalLM

        from attention_atlas.models.adapters.gemma3 import converted

        model = AutoModelForCausalLM.from_pretrained(converted()[0], attn_implementation="sdpa").eval()

        def run(x):
            with torch.no_grad():
                return model.base_model(input_ids=x).last_hidden_state.shape
    else:

        def run(x):
            return cp.capture_ids(adapter, x)  # mapped files from SPILL_FROM tokens, as the page

    run(ids[:, :16])
    base, own = peak_mb(), own_mb()
    t = time.perf_counter()
    with PeakRss(own_mb) as anonymous:
        store = run(ids)
    out = {"seconds": time.perf_counter() - t, "peak_mb": peak_mb() - base, "own_mb": anonymous.peak - own}
    if mode == "capture":
        out.update(overviews(adapter, ids, store))
    return out


def overviews(adapter, ids, store) -> dict:
    from attention_atlas.models.adapters import capture as cp
    from attention_atlas.viz_core import blockwise as bw

    n = ids.shape[1]
    cap = cp._to_capture(adapter, store, cp.encoded(adapter, ids, [False] * n, []), [])
    out = {"windows": [cap.variant(layer).window for layer in range(cap.n_layers)]}
    for name, layer in (("global", 5), ("local", 0)):
        t = time.perf_counter()
        bw.reduce_head(cap, layer, 0)
        out[name] = time.perf_counter() - t
    return out


def measure(mode: str, n: int) -> dict:
    return child_json("bench.bench_gemma3", mode, n)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[8192, 32768])
    parser.add_argument(
        "--baseline-up-to", type=int, default=8192,
        help="the SDPA baseline only up to this many tokens (at 32,768 it took 560 s and 7.3 GB here)",
    )
    parser.add_argument("--child", nargs=2, metavar=("MODE", "N"))
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child[0], int(args.child[1]))))
        return
    lines = [
        "## Gemma 3 270M at long inputs (bench_gemma3)",
        "",
        f"{date.today()}, {machine()}; random token ids, each forward in a fresh process; peaks above the same "
        "process after 16 tokens. Overview: one head max-pooled to 1,024² cells, from the captured queries and keys.",
        "",
        "| tokens | SDPA forward (baseline) | capture | ratio [≤ 1.3] | SDPA peak | capture peak [≤ 1.5 GB] "
        "| its anonymous memory | overview, global layer 5 [≤ 5 s] | overview, local layer 0 |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for n in args.sizes:
        cap = measure("capture", n)
        plain = measure("sdpa", n) if n <= args.baseline_up_to else None
        base = (
            f"{plain['seconds']:.1f} s | {cap['seconds']:.1f} s | {cap['seconds'] / plain['seconds']:.2f}× "
            f"| +{plain['peak_mb']:,.0f} MB"
            if plain
            else f"not run | {cap['seconds']:.1f} s | | "
        )
        lines.append(
            f"| {n:,} | {base} | +{cap['peak_mb']:,.0f} MB | +{cap['own_mb']:,.0f} MB "
            f"| {cap['global']:.2f} s | {cap['local']:.2f} s |"
        )
        print(lines[-1], flush=True)
    lines += ["", f"Windows per layer: {cap['windows']}. 1-min load average at the end: {os.getloadavg()[0]:.1f}."]
    write_section("bench_gemma3", "\n".join(lines))


if __name__ == "__main__":
    main()
