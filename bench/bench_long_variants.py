"""Long context for attention variants (issue 26): the capture of a windowed, softcapped and sink
model beside the model's own eager forward of the same ids.

Tiny random causal LMs (hidden 64, 8 query heads on 2 key heads of 16, 4 layers, window 256) of
Mistral (every layer windowed), Gemma 2 (local and global layers, logit softcapping: not SDPA) and
gpt-oss (local and global layers, sink logits: not SDPA), each opened as the page opens a model.
Each measurement runs in a fresh process: seconds of one forward, and its peak resident memory
above the same process after a 16-token input (ru_maxrss). Baseline: the model's own eager forward
(``attn_implementation="eager"``, no weights returned) of the same ids. Then, at 32,768 tokens,
Mistral's capture with the window's ``[n, n]`` mask made whole and checked (as it was), beside the
mask function checked a block of rows at a time and no mask made (as it is).

Run: python -m bench.bench_long_variants [--tokens 4096] [--long 32768]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import tempfile
import time
from datetime import date

import torch

from bench.measure import child_json, peak_mb
from bench.results import machine, write_section

SIZES = dict(
    vocab_size=30522,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=4,
    num_attention_heads=8,
    num_key_value_heads=2,
    head_dim=16,
    sliding_window=256,
    max_position_embeddings=32768,
)
ARCHS = {  # harness.tiny_variants' architectures, with these options over its own
    "mistral": {},
    "gemma2": dict(attn_logit_softcapping=50.0),
    "gpt_oss": dict(num_local_experts=2, num_experts_per_tok=1),
}



def adapter_of(arch: str):
    from attention_atlas.models.adapters.hf import HFAdapter
    from harness.tiny_variants import tiny_variant
    from tests.support import hf_folder

    model = tiny_variant(arch, **SIZES, **ARCHS[arch])  # larger than the tests', with a 32k context
    adapter = HFAdapter(arch, hf_folder(model, pathlib.Path(tempfile.mkdtemp())), torch.device("cpu"))
    adapter.tokenizer.model_max_length = SIZES["max_position_embeddings"]
    return adapter


def child(arch: str, mode: str, n: int) -> dict:
    """One forward of ``n`` random ids in this process: seconds and peak memory above 16 tokens."""
    from attention_atlas.models.adapters import capture as cp

    torch.set_num_threads(2)
    adapter = adapter_of(arch)
    ids = torch.randint(1000, 30000, (1, n), generator=torch.Generator().manual_seed(n))

    if mode == "whole-mask":  # the capture as it was: the window's [n, n] mask made, then checked
        cp._window_of = lambda *a: False

    def run(x):
        with torch.no_grad():
            if mode == "eager":
                return adapter.model.base_model(input_ids=x)
            return cp.capture_ids(adapter, x)

    run(ids[:, :16])
    base = peak_mb()
    t = time.perf_counter()
    store = run(ids)
    took = time.perf_counter() - t
    windows = [v.window for *_, v in store.values()] if mode != "eager" else []
    return {"seconds": took, "peak_mb": peak_mb() - base, "windows": windows}


def measure(arch: str, mode: str, n: int) -> dict:
    return child_json("bench.bench_long_variants", arch, mode, n)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=4096)
    parser.add_argument("--long", type=int, default=32768, help="tokens of the window-mask comparison")
    parser.add_argument("--child", nargs=3, metavar=("ARCH", "MODE", "N"))
    args = parser.parse_args(argv)
    if args.child:
        arch, mode, n = args.child
        print(json.dumps(child(arch, mode, int(n))))
        return
    n, started = args.tokens, machine()
    lines = [
        "## Long context for attention variants (bench_long_variants)",
        "",
        f"{date.today()}, {started}; {n:,} random token ids, one forward each in a fresh process.",
        "",
        "| model | windows per layer | eager forward | capture | ratio | eager peak | capture peak |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for arch in ARCHS:
        eager, cap = measure(arch, "eager", n), measure(arch, "capture", n)
        lines.append(
            f"| {arch} | {cap['windows']} | {eager['seconds']:.2f} s | {cap['seconds']:.2f} s | "
            f"{cap['seconds'] / eager['seconds']:.2f}× | +{eager['peak_mb']:,.0f} MB | +{cap['peak_mb']:,.0f} MB |"
        )
        print(lines[-1], flush=True)
    lines += [
        "",
        f"At {args.long:,} tokens (eager cannot: its weights alone would be {4 * 8 * args.long**2 / 2**30:,.0f} GB "
        "a layer), the capture of mistral with its window's mask made whole and checked (as before) and "
        "with the mask function checked a block of rows at a time, no mask made:",
        "",
        "| mistral | capture | peak |",
        "| --- | --- | --- |",
    ]
    for mode, name in (("whole-mask", "[n, n] window mask"), ("capture", "mask function checked by blocks")):
        got = measure("mistral", mode, args.long)
        lines.append(f"| {name} | {got['seconds']:.2f} s | +{got['peak_mb']:,.0f} MB |")
        print(lines[-1], flush=True)
    lines += ["", f"1-min load average at the end: {os.getloadavg()[0]:.1f}."]
    write_section("bench_long_variants", "\n".join(lines))


if __name__ == "__main__":
    main()
