"""Contribution graph (issue 24, item 3): SmolLM2 at 512 tokens on this CPU, beside the LLM
Transparency Tool's formulation.

Measured in one run (issue 24's goals in brackets):
- ``contributions_of`` at 512 tokens: one forward of the twin capturing each layer's probabilities
  and values, then every layer's per-head, per-token contributions (≤ 20 s), and resident memory
  above the loaded model while it runs, sampled every 5 ms (≤ 1 GB);
- the baseline, at a length where it fits: the LLM Transparency Tool's formulation written here, the
  full ``[tokens, tokens, heads, d_model]`` tensor of parts per layer and its L1 distances to the
  residual (``get_contributions_with_one_off_part``, future positions counted as parts), from the
  same captured forward; ours with ``count_future=True`` beside it, timed alternately, and the two
  checked equal to 1e-4.
Wall-clock seconds depend on the machine's load (printed); CPU seconds of the process less so.

Run: python -m bench.bench_contributions [--tokens 512] [--baseline-tokens 128] [--repeat 1]
(``ATLAS_THREADS=1`` as the app runs on this shared machine: with two torch threads under a load
above the core count, each of the many small per-head operations waits for both threads.)
"""

from __future__ import annotations

import argparse
import os
from datetime import date

import numpy as np
import torch

from attention_atlas.models.analysis import contributions as cb
from attention_atlas.models.registry import load
from attention_atlas.serve.process import trim
from bench.measure import ids_of, paired, peak_above, timed
from bench.results import machine, write_section

CPU = torch.device("cpu")


def ours(model, ids) -> cb.Contributions:
    return cb.contributions_of(model, ids, count_future=True)


def llm_transparency_tool(model, ids) -> np.ndarray:
    """``attn [layers, heads, n, n]`` as the LLM Transparency Tool computes it: the full tensor of parts."""
    found = cb.plan(model)
    seen, probs, values = cb._capture(found, ids)
    out = []
    for layer in found.layers:
        x_in = seen[("in", layer.block)].float()
        mid = x_in + seen[("attn", layer.attention)].float()
        parts, _ = cb.head_parts(layer.out_proj, values[layer.attention], found.heads)
        a = probs[layer.attention].float()
        decomposed = a.permute(1, 2, 0)[..., None] * parts.permute(1, 0, 2)[None]  # [n, n, H, D]
        flat = torch.cat([decomposed.permute(1, 2, 0, 3).flatten(0, 1), x_in[None]])  # [n·H + 1, n, D]
        distance = (flat - mid[None]).abs().sum(-1)
        raw = (mid.abs().sum(-1)[None] - distance).clamp_min(cb.EPS)
        norm = raw / raw.sum(0, keepdim=True)
        n, heads = a.shape[1], a.shape[0]
        out.append(norm[:-1].unflatten(0, (n, heads)).permute(1, 2, 0).numpy())  # [H, i, j]
        del decomposed, flat, distance, raw
    return np.stack(out)


def fresh_peak(fn) -> float:
    """Peak resident memory above the start while ``fn`` runs, after freed memory went back (glibc
    would otherwise hand a later run the heap an earlier one left, and it would read as 0 MB)."""
    trim()
    return peak_above(fn)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--tokens", type=int, default=512)
    p.add_argument("--baseline-tokens", type=int, default=128)
    p.add_argument("--repeat", type=int, default=1)
    args = p.parse_args(argv)
    where = machine()
    adapter = load("smollm2", CPU)
    model = adapter.model
    t_plan, _, _ = timed(lambda: cb.plan(model, "smollm2"))
    ids, short = ids_of(args.tokens), ids_of(args.baseline_tokens)
    mem = fresh_peak(lambda: cb.contributions_of(model, ids))
    mem_ours = fresh_peak(lambda: ours(model, short))
    mem_tool = fresh_peak(lambda: llm_transparency_tool(model, short))
    full = [timed(lambda: cb.contributions_of(model, ids))[:2] for _ in range(args.repeat)]
    wall, cpu = (float(np.median([r[k] for r in full])) for k in (0, 1))
    forward, _, _ = timed(lambda: cb._capture(cb.plan(model), ids))
    (ours_t, ours_cpu), (tool_t, tool_cpu) = paired(
        lambda: ours(model, short), lambda: llm_transparency_tool(model, short), args.repeat
    )
    diff = float(np.abs(ours(model, short).attn - llm_transparency_tool(model, short)).max())
    end_load = os.getloadavg()[0]
    n, m, d = args.tokens, args.baseline_tokens, model.config.hidden_size
    heads = model.config.num_attention_heads
    lines = [
        f"## Contribution graph (bench_contributions.py, {date.today()})",
        "",
        f"SmolLM2-135M (30 layers, {heads} heads, d_model {d}), float32 on the CPU; {where}; "
        f"1-min load average {end_load:.1f} at the end. Medians of {args.repeat}; wall-clock seconds "
        "(CPU seconds of the process beside them: with one torch thread, wall ≈ CPU on a free machine, with two about CPU / 2).",
        "",
        "| what | wall s | CPU s | goal |",
        "| --- | ---: | ---: | --- |",
        f"| finding and checking the plan (once per model, a {cb.PROBE}-token probe) | {t_plan:.2f} | | |",
        f"| contributions at {n} tokens: forward + every layer, head and token | {wall:.2f} | {cpu:.2f} | ≤ 20 s |",
        f"| of which the forward capturing probabilities and values | {forward:.2f} | | |",
        f"| ours at {m} tokens (count_future, as the tool counts) | {ours_t:.2f} | {ours_cpu:.2f} | |",
        f"| the LLM Transparency Tool's formulation at {m} tokens | {tool_t:.2f} | {tool_cpu:.2f} | |",
        "",
        f"- Memory above the loaded model (peak resident, sampled every 5 ms): ours at {n} tokens "
        f"{mem:,.0f} MB (goal ≤ 1 GB); at {m} tokens ours {mem_ours:,.0f} MB, the tool's formulation "
        f"{mem_tool:,.0f} MB (its parts tensor alone {m * m * heads * d * 4 / 2**20:,.0f} MB a layer; at {n} tokens "
        f"it would be {n * n * heads * d * 4 / 2**30:.1f} GB a layer).",
        f"- Ratios at {m} tokens, tool / ours: time {tool_t / ours_t:.1f}×, memory {mem_tool / max(mem_ours, 1):.1f}×; "
        f"largest difference of attn {diff:.1e} (equal to 1e-4: {'yes' if diff < 1e-4 else 'NO'}).",
    ]
    print("\n".join(lines))
    write_section("bench_contributions", "\n".join(lines))


if __name__ == "__main__":
    main()
