"""Generation with attention (issue 24, item 1): SmolLM2, greedy, against transformers' own generate.

Both continue the same prompt by the same number of new tokens with the key-value cache, on the
same loaded model (eager attention, float32, CPU), timed alternately (``bench.results.paired_medians``:
one warm-up of each, then ``--repeat`` pairs), so load drift hits both alike:
- ours: ``models.analysis.generate.generate`` from text, the whole path the command line runs: encode, one
  forward of the prompt but its last token, one forward per new token with ``output_attentions``
  (each step's row of every layer and head kept), the ``[layers, heads, new, all]`` array and the labels;
- baseline: ``model.generate(ids, max_new_tokens=N, do_sample=False)``, no attention asked for.
The goal is ours ≤ 1.3× the baseline at 256 new tokens. The continuations are checked equal.

Run: python -m bench.bench_generate [--new 256] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
from datetime import date

import torch

from attention_atlas.models.analysis import generate as g
from attention_atlas.models.registry import load
from bench.results import machine, paired_medians, write_section

CPU = torch.device("cpu")
PROMPT = "Once upon a time, in a small village by the sea, there lived an old fisherman who"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--new", type=int, default=256)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args(argv)
    where = machine()
    adapter = load("smollm2", CPU)
    model, ids = adapter.model, adapter.encode(PROMPT).ids
    ones = torch.ones_like(ids)

    last = {}  # each side's latest output, checked equal after the timing

    def ours():
        last["ours"] = g.generate(adapter, PROMPT, max_new_tokens=args.new)

    def baseline():
        with torch.no_grad():
            last["plain"] = model.generate(ids, attention_mask=ones, max_new_tokens=args.new, do_sample=False)

    t_ours, t_base = paired_medians(ours, baseline, repeat=args.repeat)
    done, plain = last["ours"], last["plain"]
    same = done.ids.tolist() == plain[0].tolist()
    new = len(done.ids) - done.prompt_len
    end_load = os.getloadavg()[0]
    lines = [
        f"## Generation with attention (bench_generate.py, {date.today()})",
        "",
        f"SmolLM2-135M (30 layers × 9 heads), eager attention, float32 on the CPU; {where}; "
        f"1-min load average {end_load:.1f} at the end. A {done.prompt_len}-token prompt, greedy, "
        f"{new} new tokens; medians of {args.repeat} runs of each, alternated, after one warm-up of each.",
        "",
        "| what | wall s | ms per new token | goal |",
        "| --- | ---: | ---: | --- |",
        f"| transformers' `model.generate` (key-value cache, no attention) | {t_base:.2f} "
        f"| {1000 * t_base / new:.0f} | baseline |",
        f"| `models.analysis.generate.generate`: every step's attention row, every layer and head, kept "
        f"| {t_ours:.2f} | {1000 * t_ours / new:.0f} | |",
        f"| ratio | {t_ours / t_base:.2f}× | | ≤ 1.3× |",
        "",
        f"- The same {new} tokens as transformers' generate: {'yes' if same else 'NO'}.",
        f"- The attention kept: {list(done.attention.shape)} float32, "
        f"{done.attention.nbytes / 2**20:,.0f} MB.",
    ]
    print("\n".join(lines))
    write_section("bench_generate", "\n".join(lines))


if __name__ == "__main__":
    main()
