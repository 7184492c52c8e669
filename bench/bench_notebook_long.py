"""A long text in the notebook (issue 25: ``show()`` on SmolLM2 with a 4,000-token text draws the
long-input overview, with memory as on the app's long-input page).

In one fresh process, as a notebook would: SmolLM2 loaded from its package, ``show(model,
tokenizer, text)`` on 16 tokens, then on about 4,000 tokens of the long-context sample (every head's
thumbnail and one head's overview, from the captured queries and keys). Reported: the seconds of
each call, the size of the view's HTML, the process's own resident memory (anonymous pages, as
``bench_long_memory``: the mapped query and key files are the system's cache) and its peak
(ru_maxrss), each above the 16-token call.

Run: python -m bench.bench_notebook_long [--tokens 4000]
"""

from __future__ import annotations

import argparse
import time
from datetime import date

import torch

from attention_atlas.models.registry import load
from attention_atlas.notebook import show
from attention_atlas.paths import DATA
from bench.measure import own_mb, peak_mb
from bench.results import machine, write_section


def sample(tokenizer, n: int) -> str:
    """The long-context sample, repeated to ``n`` tokens (it holds about 2,000)."""
    text = (DATA / "long_context" / "tatoeba_en.txt").read_text(encoding="utf-8")
    ids = tokenizer(text)["input_ids"]
    return tokenizer.decode((ids * (n // len(ids) + 1))[:n])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=4000)
    args = parser.parse_args(argv)
    torch.set_num_threads(2)
    smollm2 = load("smollm2", torch.device("cpu"))
    model, tokenizer = smollm2.model, smollm2.tokenizer
    short = show(model, tokenizer, "The cat sat on the mat because it was tired.")
    own, peak = own_mb(), peak_mb()
    text = sample(tokenizer, args.tokens)
    t = time.perf_counter()
    view = show(model, tokenizer, text)
    seconds = time.perf_counter() - t
    html = view.to_html()
    figures = [type(s).__name__ for s in view.sections]
    lines = [
        "## A long text in the notebook (bench_notebook_long)",
        "",
        f"{date.today()}, {machine()}; SmolLM2 from its package, `show(model, tokenizer, text)` in one process "
        f"(a 16-token call first: {short.name}).",
        "",
        "| tokens | view | `show()` | HTML file | own memory above the 16-token call | peak above it |",
        "| --- | --- | --- | --- | --- | --- |",
        f"| {len(tokenizer(text)['input_ids']):,} | {view.name} ({', '.join(figures)}) | {seconds:.1f} s "
        f"| {len(html.encode()) / 1e6:.2f} MB | {own_mb() - own:+,.0f} MB | +{peak_mb() - peak:,.0f} MB |",
    ]
    print("\n".join(lines))
    write_section("bench_notebook_long", "\n".join(lines))


if __name__ == "__main__":
    main()
