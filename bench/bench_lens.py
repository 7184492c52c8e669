"""Logit lens (issue 24, item 2): SmolLM2 at 512 tokens on this CPU, beside the naive full-logit lens.

Measured in one run (issue 24's goals in brackets):
- first screen: one forward capturing every block's output, then the top 10 of every layer at the
  last 64 positions (≤ 2 s), beside its floor (issue 40, item 3: ≤ 1.15×): the same forward and
  torch's matrix product of those rows' normed states and the head's weight, timed alone, alternately;
- the whole grid: the same forward, then every layer at every position, a chunk of positions at a
  time (≤ 10 s), beside its floor likewise (≤ 1.15×);
- resident memory above the loaded model during the whole grid (sampled every 5 ms);
- the top-10 grid's payload as a page would send it: ids in 16 bits (SmolLM2's 49,152 ids fit),
  probabilities in ``viz_core.wire.pack16``'s 16 bits, both base64 in JSON, plus the text of each
  distinct id (≤ 1 MB);
- the baseline, at 128 tokens where it fits: transformers' ``output_hidden_states``, every layer
  through the norm and head at once (the full ``[layers, positions, vocab]`` logits), softmax, top 10;
  the lens at the same length beside it, timed alternately.
Wall-clock seconds depend on the machine's load (printed); CPU seconds of the process less so.

Run: python -m bench.bench_lens [--tokens 512] [--baseline-tokens 128] [--repeat 3]
"""

from __future__ import annotations

import argparse
import base64
import json
import os
from datetime import date

import numpy as np
import torch

from attention_atlas.models.analysis import lens as ln
from attention_atlas.models.registry import load
from attention_atlas.viz_core.wire import pack16
from bench.measure import ids_of, measure, paired, peak_above, timed
from bench.results import machine, write_section

CPU = torch.device("cpu")
TOP, SCREEN = 10, 64


def first_screen(model, ids) -> ln.Grid:
    n = ids.shape[1]
    return ln.top_tokens(ln.residuals(model, ids), TOP, positions=range(max(0, n - SCREEN), n))


def whole_grid(model, ids) -> ln.Grid:
    return ln.top_tokens(ln.residuals(model, ids), TOP)


def naive(model, ids) -> tuple[np.ndarray, np.ndarray]:
    """Every layer's full logits at once: the lens as a direct implementation writes it."""
    with torch.no_grad():
        out = model(input_ids=ids, output_hidden_states=True)
        states = torch.stack([h[0] for h in out.hidden_states[1:-1]])
        logits = torch.cat([model.lm_head(model.model.norm(states)), out.logits])
        top = torch.softmax(logits, -1).topk(TOP, -1)
    return top.indices.numpy(), top.values.numpy()


def payload_bytes(adapter, grid: ln.Grid) -> int:
    """The top-10 grid as JSON a page would send: 16-bit ids and probabilities, base64, and the
    text of every distinct id once."""
    distinct = np.unique(grid.top_ids)
    ids = (
        grid.top_ids.astype("<u2") if adapter.model.config.vocab_size <= 65536 else grid.top_ids.astype("<u4")
    )
    body = {
        "shape": list(grid.top_ids.shape),
        "ids": base64.b64encode(ids.tobytes()).decode(),
        "probs": base64.b64encode(pack16(grid.top_probs).tobytes()).decode(),
        "labels": {int(i): adapter.tokenizer.decode([int(i)]) for i in distinct},
    }
    return len(json.dumps(body, ensure_ascii=False).encode())


def floor(model, ids, positions: range):
    """The lens's own matrix products, timed alone: the forward, then torch's product of the rows'
    normed states (every layer at ``positions``) and the head's weight, the whole vocabulary a chunk
    of positions at a time: nothing of the lens's own (no norm, top-K, log-sum-exp or copy)."""
    stream = ln.residuals(model, ids)
    normed = stream.readout.normed(stream.states[1:, positions]).detach()
    weight, step = stream.readout.head.weight, ln.chunk_size(stream, False)

    def run() -> None:
        ln.residuals(model, ids)
        with torch.no_grad():
            for i in range(0, normed.shape[1], step):
                torch.nn.functional.linear(normed[:, i : i + step], weight)

    return run


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--tokens", type=int, default=512)
    p.add_argument("--baseline-tokens", type=int, default=128)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args(argv)
    where = machine()
    adapter = load("smollm2", CPU)
    model = adapter.model
    t_find, _, _ = timed(lambda: ln.readout(model))
    ids, short = ids_of(args.tokens), ids_of(args.baseline_tokens)
    n, m = args.tokens, args.baseline_tokens
    first_screen(model, ids)  # warm: kernels, allocator
    forward = measure(lambda: ln.residuals(model, ids), args.repeat)
    screen, screen_floor = paired(
        lambda: first_screen(model, ids), floor(model, ids, range(max(0, n - SCREEN), n)), args.repeat
    )
    grid_t, grid_floor = paired(lambda: whole_grid(model, ids), floor(model, ids, range(n)), args.repeat)
    grid = whole_grid(model, ids)
    mem_lens = peak_above(lambda: whole_grid(model, ids))
    size = payload_bytes(adapter, grid)
    lens_short, naive_short = paired(
        lambda: whole_grid(model, short), lambda: naive(model, short), args.repeat
    )
    mem_lens_short = peak_above(lambda: whole_grid(model, short))
    mem_naive_short = peak_above(lambda: naive(model, short))
    ok = np.allclose(whole_grid(model, short).top_probs, naive(model, short)[1], atol=1e-5)
    end_load = os.getloadavg()[0]
    unembed = 2 * 30 * n * model.config.hidden_size * model.config.vocab_size
    lines = [
        f"## Logit lens (bench_lens.py, {date.today()})",
        "",
        f"SmolLM2-135M (30 layers, 49,152-token vocabulary), float32 on the CPU; {where}; "
        f"1-min load average {end_load:.1f} at the end. Medians of {args.repeat}; wall-clock seconds "
        "(CPU seconds of the process in brackets: on a free machine with 2 threads, wall ≈ CPU / 2).",
        "",
        "| what | wall s | CPU s | goal |",
        "| --- | ---: | ---: | --- |",
        f"| finding and checking the readout (once per model, a {ln.PROBE}-token probe) | {t_find:.2f} | | |",
        f"| first screen at {n} tokens: forward + last {SCREEN} positions × 30 layers, top {TOP} "
        f"| {screen[0]:.2f} | {screen[1]:.2f} | ≤ 2 s |",
        f"| its floor: the forward and torch's matrix product of those rows and the head, alone "
        f"| {screen_floor[0]:.2f} | {screen_floor[1]:.2f} | |",
        f"| first screen / its floor | {screen[0] / screen_floor[0]:.2f}× | {screen[1] / screen_floor[1]:.2f}× "
        "| ≤ 1.15× |",
        f"| whole grid at {n} tokens: forward + {n} positions × 30 layers, top {TOP} "
        f"| {grid_t[0]:.2f} | {grid_t[1]:.2f} | ≤ 10 s |",
        f"| its floor: the forward and the product of every row and the head, alone "
        f"| {grid_floor[0]:.2f} | {grid_floor[1]:.2f} | |",
        f"| whole grid / its floor | {grid_t[0] / grid_floor[0]:.2f}× | {grid_t[1] / grid_floor[1]:.2f}× "
        "| ≤ 1.15× |",
        f"| the forward at {n} tokens alone, every block's output kept | {forward[0]:.2f} | {forward[1]:.2f} | |",
        f"| lens, whole grid at {m} tokens | {lens_short[0]:.2f} | {lens_short[1]:.2f} | |",
        f"| baseline at {m} tokens: full [30, {m}, 49,152] logits, softmax, top {TOP} "
        f"| {naive_short[0]:.2f} | {naive_short[1]:.2f} | |",
        "",
        f"- Memory above the loaded model (peak resident, sampled every 5 ms): the lens's whole grid at {n} "
        f"tokens {mem_lens:,.0f} MB; at {m} tokens the lens {mem_lens_short:,.0f} MB, the baseline "
        f"{mem_naive_short:,.0f} MB (its logits alone are {30 * m * 49152 * 4 / 2**20:,.0f} MB; at {n} tokens "
        f"they would be {30 * n * 49152 * 4 / 2**30:.1f} GB, with the softmax twice that).",
        f"- The unembedding of the whole grid ({unembed / 1e12:.2f} TFLOP) ran at "
        f"{unembed / (grid_t[0] - forward[0]) / 1e9:.0f} GFLOP/s of wall time in the lens, and torch's product "
        f"alone (the floor less the forward) at {unembed / (grid_floor[0] - forward[0]) / 1e9:.0f} GFLOP/s.",
        f"- Lens / baseline at {m} tokens: {lens_short[0] / naive_short[0]:.2f}× the wall time; the same top-10 "
        f"probabilities to 1e-5: {'yes' if ok else 'NO'}.",
        f"- Payload of the top-{TOP} grid at {n} tokens (16-bit ids and probabilities, base64 JSON, each "
        f"distinct id's text once): {size / 1e6:.2f} MB (goal ≤ 1 MB).",
        f"- Chunk: {ln.chunk_size(ln.residuals(model, short), False)} positions × 30 rows through the head "
        f"together, {ln.VOCAB_BLOCK:,} vocabulary entries at a time "
        f"({ln.ROWS * ln.VOCAB_BLOCK * 4 / 2**20:.1f} MB of logits at most).",
    ]
    print("\n".join(lines))
    write_section("bench_lens", "\n".join(lines))


if __name__ == "__main__":
    main()
