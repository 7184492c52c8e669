"""Activation patching (issue 39): SmolLM2 on a 16-token prompt pair, all five kinds, on this CPU.

Measured in one run (issue 39's goals in brackets):
- ours (``patching_of``): the patched runs batched, each starting at the block and the position where
  it first differs from the cached run (≤ 20 s), median of ``--repeat``;
- the naive way in the same run: one full forward of the model per patched run (the residual stream,
  an attention or feed-forward output patched by a hook on the model's own module; a head's output or
  pattern by the same attention function ours uses, on a full forward of batch 1) (ours ≤ 0.5× its
  time), and the largest difference between the two's effects;
- memory above the loaded model while ours runs at 64 tokens (≤ 1 GB), sampled every 5 ms: a pair of
  random ids differing at token 48 (a batch's rows × positions are capped at ``TOKEN_ROWS`` whatever
  the pair, so an earlier difference makes more batches, not larger ones).
The pair differs early (the subject, tokens 1–3), the harder case for starting at a position: a
pair that differs near the end (the IOI name) starts most runs later still.

Run: python -m bench.bench_patching [--repeat 3] [--naive-repeat 1] [--naive-every 1]
"""

from __future__ import annotations

import argparse
import os
import statistics
from datetime import date

import numpy as np
import torch

from attention_atlas.models.analysis import patching as pt
from attention_atlas.models.registry import load
from attention_atlas.serve.process import trim
from bench.measure import ids_of, peak_above, timed
from bench.results import machine, write_section

CPU = torch.device("cpu")
CLEAN = "The Eiffel Tower, the famous old landmark, is located in the city of"
CORRUPT = "The Colosseum, the famous old landmark, is located in the city of"
ANSWER, WRONG = " Paris", " Rome"


def _first(out):
    return out[0] if isinstance(out, tuple) else out


@torch.no_grad()
def naive(model, clean: torch.Tensor, corrupt: torch.Tensor, pair: tuple[int, int], every: int = 1):
    """Denoising, one full forward of the corrupted prompt per patched run (every ``every``-th run of
    the list, the rest NaN): ``(effects, runs made, runs in all)``."""
    found = pt.plan(model)
    runs = {w: pt._record(found, ids, pair) for w, ids in (("clean", clean), ("corrupt", corrupt))}
    source = runs["clean"]
    blocks = pt.lens_mod.find_blocks(model)
    inside = lambda block, twin_module: next(  # noqa: E731 - the model's module where the twin has it
        m for name, m in block.named_modules() if name == _name(found, twin_module)
    )

    def ld(logits):
        return float(logits[0, -1, pair[0]] - logits[0, -1, pair[1]])

    def run_with(module, hook, pre=False):
        handle = module.register_forward_pre_hook(hook) if pre else module.register_forward_hook(hook)
        try:
            return ld(model(input_ids=corrupt, use_cache=False).logits)
        finally:
            handle.remove()

    def at(p, value):
        def hook(m, a, out):
            y = _first(out).clone()
            y[0, p] = value
            return (y, *out[1:]) if isinstance(out, tuple) else y

        return hook

    def resid_at(p, value):
        def hook(m, a):
            x = a[0].clone()
            x[0, p] = value
            return (x, *a[1:])

        return hook

    def twin_run(kind, k, h):  # a full forward of the twin, batch 1, one head's output or pattern patched
        state = pt._Pass()
        values = source.heads[k][:, h] if kind == "heads" else source.pattern[k][h]
        state.edits[(kind, k)].append((0, h, torch.arange(values.shape[0]), values))
        token = pt._STATE.set(state)
        try:
            last = []
            hook = found.blocks[-1].register_forward_hook(lambda m, a, o: last.append(_first(o)[:, -1]))
            getattr(found.twin, "base_model", found.twin)(input_ids=corrupt, use_cache=False)
            hook.remove()
        finally:
            pt._STATE.reset(token)
        return float(pt._metric(found, last[0], pair)[0])

    n, layers = clean.shape[1], len(blocks)
    runs_of: list = []  # (kind, cell, the run): every patched run, in order
    for k, block in enumerate(blocks):
        attn, ffn = inside(block, found.attention[k]), inside(block, found.ffn[k])
        for p in range(n):
            runs_of.append(("resid", (k, p), lambda b=block, p=p, k=k: run_with(b, resid_at(p, source.resid[k][p]), pre=True)))
            runs_of.append(("attn_out", (k, p), lambda m=attn, p=p, k=k: run_with(m, at(p, source.attn_out[k][p]))))
            runs_of.append(("mlp_out", (k, p), lambda m=ffn, p=p, k=k: run_with(m, at(p, source.mlp_out[k][p]))))
        for h in range(found.heads):
            runs_of.append(("heads", (k, h), lambda k=k, h=h: twin_run("heads", k, h)))
            runs_of.append(("pattern", (k, h), lambda k=k, h=h: twin_run("pattern", k, h)))
    picked = runs_of[::every]
    raw = {k: np.full((layers, n), np.nan) for k in pt.KINDS[:3]}
    raw |= {k: np.full((layers, found.heads), np.nan) for k in pt.KINDS[3:]}
    for kind, cell, run in picked:
        raw[kind][cell] = run()
    m_clean, m_corrupt = runs["clean"].metric, runs["corrupt"].metric
    effects = {k: pt.normalise(v, m_clean, m_corrupt, "denoise") for k, v in raw.items()}
    return effects, len(picked), len(runs_of)


def _name(found, twin_module) -> str:
    """A twin module's name inside its block."""
    for block in found.blocks:
        for name, m in block.named_modules():
            if m is twin_module:
                return name
    raise LookupError("not in a block")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--naive-repeat", type=int, default=1)
    p.add_argument(
        "--naive-every", type=int, default=1,
        help="run every N-th patched run the naive way and scale its time to all (1: all of them)",
    )  # fmt: skip
    args = p.parse_args(argv)
    where = machine()
    adapter = load("smollm2", CPU)
    model = adapter.model
    t_plan, _, _ = timed(lambda: pt.plan(model, "smollm2"))
    answer, wrong = pt.single_token(adapter, ANSWER), pt.single_token(adapter, WRONG)
    clean, corrupt = adapter.encode(CLEAN), adapter.encode(CORRUPT)
    n = clean.ids.shape[1]
    assert n == corrupt.ids.shape[1] == 16, (n, corrupt.ids.shape)

    def ours():
        return pt.patching_of(model, clean.ids, corrupt.ids, answer, wrong)

    got = ours()  # warm
    ours_runs = [timed(ours)[:2] for _ in range(args.repeat)]
    ours_wall, ours_cpu = (statistics.median(r[i] for r in ours_runs) for i in (0, 1))
    print(f"ours: {ours_wall:.2f} s wall, {ours_cpu:.2f} s CPU (runs {ours_runs})", flush=True)

    long_clean = ids_of(64)
    long_corrupt = long_clean.clone()
    long_corrupt[0, 48] = 3000  # one difference: the runs carry positions 48–63, each chunk capped at TOKEN_ROWS
    with torch.no_grad():
        d = model(input_ids=long_clean).logits[0, -1] - model(input_ids=long_corrupt).logits[0, -1]
    pair64 = (int(d.argmax()), int(d.argmin()))
    trim()
    t64 = []
    mem = peak_above(lambda: t64.append(timed(lambda: pt.patching_of(model, long_clean, long_corrupt, *pair64))[0]))
    print(f"64 tokens: {t64[0]:.2f} s, {mem:.0f} MB above the loaded model", flush=True)

    naive_runs = []
    for _ in range(args.naive_repeat):
        wall, cpu, (want, made, total) = timed(
            lambda: naive(model, clean.ids, corrupt.ids, (answer, wrong), args.naive_every)
        )
        naive_runs.append((wall * total / made, cpu * total / made))
        print(f"naive: {made} of {total} runs in {wall:.2f} s wall, {cpu:.2f} s CPU", flush=True)
    naive_wall, naive_cpu = (statistics.median(r[i] for r in naive_runs) for i in (0, 1))
    diff = max(float(np.nanmax(np.abs(got[k] - want[k]))) for k in pt.KINDS)
    patched = sum(got[k].size for k in pt.KINDS)
    scaled = "" if made == total else f", {made} of the {total} runs made (every {args.naive_every}th), the time scaled to all"
    end_load = os.getloadavg()[0]
    p_clean, p_corrupt = got["probs_clean"], got["probs_corrupt"]
    lines = [
        f"## Activation patching (bench_patching.py, {date.today()})",
        "",
        f"SmolLM2-135M (30 layers, 9 heads), float32 on the CPU; {where}; 1-min load average {end_load:.1f} at"
        f" the end. Denoising {CORRUPT!r} with {CLEAN!r} ({n} tokens each, differing at tokens 1–3),"
        f" {ANSWER!r} against {WRONG!r}: probabilities clean {p_clean[0]:.3f} / {p_clean[1]:.3f}, corrupted"
        f" {p_corrupt[0]:.3f} / {p_corrupt[1]:.3f}. All five kinds: {patched:,} patched runs (resid, attn_out,"
        f" mlp_out at 30 × {n}, heads and pattern at 30 × 9). Wall seconds, CPU seconds of the process beside"
        " them.",
        "",
        "| what | wall s | CPU s | goal |",
        "| --- | ---: | ---: | --- |",
        f"| finding and checking the plan (once per model, a {pt.PROBE}-token probe) | {t_plan:.2f} | | |",
        f"| ours: batched, each run from its block and position (median of {args.repeat}) | {ours_wall:.2f} |"
        f" {ours_cpu:.2f} | ≤ 20 s |",
        f"| naive: one full forward per patched run (median of {args.naive_repeat}{scaled}) | {naive_wall:.2f} |"
        f" {naive_cpu:.2f} | |",
        f"| ours at 64 tokens (one difference, at token 48), once | {t64[0]:.2f} | | |",
        "",
        f"- Ratio ours / naive: {ours_wall / naive_wall:.3f}× wall, {ours_cpu / naive_cpu:.3f}× CPU (goal ≤ 0.5×);"
        f" largest difference between the two's effects (on the runs made both ways) {diff:.1e} (equal to 1e-4:"
        f" {'yes' if diff < 1e-4 else 'NO'}).",
        f"- Memory above the loaded model (peak resident, sampled every 5 ms) at 64 tokens: {mem:,.0f} MB"
        " (goal ≤ 1 GB).",
    ]
    print("\n".join(lines))
    write_section("bench_patching", "\n".join(lines))


if __name__ == "__main__":
    main()
