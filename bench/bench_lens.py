"""Logit lens (issue 24, item 2): SmolLM2 at 512 tokens on this CPU, beside the naive full-logit lens.

Measured in one run (issue 24's goals in brackets):
- first screen: one forward capturing every block's output, then the top 10 of every layer at the
  last 64 positions (≤ 2 s);
- the whole grid: the same forward, then every layer at every position, a chunk of positions at a
  time (≤ 10 s);
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


def plain_product(model, rows: int, repeat: int) -> float:
    """GFLOP/s of torch's own ``[rows, d] × [d, vocab]`` float32 product on this CPU (median of ``repeat``)."""
    w = model.get_output_embeddings().weight.detach().float()
    x = torch.randn(rows, w.shape[1])
    with torch.no_grad():
        torch.nn.functional.linear(x, w)  # warm
        wall, _ = measure(lambda: torch.nn.functional.linear(x, w), repeat)
    return 2 * rows * w.shape[0] * w.shape[1] / wall / 1e9


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
    first_screen(model, ids)  # warm: kernels, allocator
    forward = measure(lambda: ln.residuals(model, ids), args.repeat)
    screen = measure(lambda: first_screen(model, ids), args.repeat)
    grid_t = measure(lambda: whole_grid(model, ids), args.repeat)
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
    n, m = args.tokens, args.baseline_tokens
    unembed = 2 * 30 * n * model.config.hidden_size * model.config.vocab_size
    ceiling = plain_product(model, ln.chunk_size(ln.residuals(model, short), False) * 31, args.repeat)
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
        f"| whole grid at {n} tokens: forward + {n} positions × 30 layers, top {TOP} "
        f"| {grid_t[0]:.2f} | {grid_t[1]:.2f} | ≤ 10 s |",
        f"| of which the forward at {n} tokens, every block's output kept | {forward[0]:.2f} | {forward[1]:.2f} | |",
        f"| lens, whole grid at {m} tokens | {lens_short[0]:.2f} | {lens_short[1]:.2f} | |",
        f"| baseline at {m} tokens: full [30, {m}, 49,152] logits, softmax, top {TOP} "
        f"| {naive_short[0]:.2f} | {naive_short[1]:.2f} | |",
        "",
        f"- Memory above the loaded model (peak resident, sampled every 5 ms): the lens's whole grid at {n} "
        f"tokens {mem_lens:,.0f} MB; at {m} tokens the lens {mem_lens_short:,.0f} MB, the baseline "
        f"{mem_naive_short:,.0f} MB (its logits alone are {30 * m * 49152 * 4 / 2**20:,.0f} MB; at {n} tokens "
        f"they would be {30 * n * 49152 * 4 / 2**30:.1f} GB, with the softmax twice that).",
        f"- The unembedding of the whole grid ({unembed / 1e12:.2f} TFLOP) ran at "
        f"{unembed / (grid_t[0] - forward[0]) / 1e9:.0f} GFLOP/s of wall time "
        f"({unembed / (grid_t[1] - forward[1]) / 1e9:.0f} per CPU second). This CPU's plain matrix product of one "
        f"chunk's shape (the baseline of the goals: nothing but torch's matmul) ran at {ceiling:.0f} GFLOP/s in "
        f"the same run: at that rate the unembedding alone takes {unembed / ceiling / 1e9:.1f} s, the first "
        f"screen's {unembed * SCREEN / n / ceiling / 1e9:.1f} s.",
        f"- Lens / baseline at {m} tokens: {lens_short[0] / naive_short[0]:.2f}× the wall time; the same top-10 "
        f"probabilities to 1e-5: {'yes' if ok else 'NO'}.",
        f"- Payload of the top-{TOP} grid at {n} tokens (16-bit ids and probabilities, base64 JSON, each "
        f"distinct id's text once): {size / 1e6:.2f} MB (goal ≤ 1 MB).",
        f"- Chunk: {ln.chunk_size(ln.residuals(model, short), False)} positions × 31 rows of 49,152 logits at a time "
        f"(≤ {ln.MAX_FLOATS * 4 / 2**20:.0f} MB).",
    ]
    print("\n".join(lines))
    write_section("bench_lens", "\n".join(lines))


if __name__ == "__main__":
    main()
