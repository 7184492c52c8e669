"""Corpus (issue 13): minilm over 10,000 English sentences, stored in DuckDB, locally and on Ray.

Measured in one run (issue 13's goals in brackets):
- the bare batched forward: the same length-sorted batches, tokenized and run with the attention
  weights returned and nothing done with them (the floor of any extraction);
- the end-to-end local run: extraction, statistics, top-k links, DuckDB writes, the final sort
  [≥ 200 sentences/s], and its ratio to the bare forward;
- resident memory over the local run, above the process with the model loaded [≤ 500 MB];
- the same run through a local Ray with 2 workers [≥ 0.8 × the local rate];
- the search (exBERT's query) over the 10,000-sentence store [≤ 100 ms].

Run: flock /tmp/atlas-bench.lock nice -n 5 python -m bench.bench_corpus [--texts 10000] [--no-ray]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from datetime import date
from pathlib import Path

import torch

from bench.results import machine, write_section
from models.corpus import queries
from models.corpus.extract import Options, extractor, plan
from models.corpus.inputs import sample
from models.corpus.run import run_corpus
from models.registry import load

SEARCHES = [("the", ""), ("i", ""), ("you", ""), ("to", ""), ("wa*", ""), ("the", "[CLS]"), ("tom", "")]


def rss_mb() -> float:
    with open("/proc/self/statm", encoding="ascii") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def bare_forward(adapter, texts: list[str], options: Options) -> float:
    """Seconds for tokenizing and running every batch, weights returned and dropped."""
    ex = extractor(adapter, options)
    ids = list(range(len(texts)))
    batches = plan(ex.lengths(texts), ids, options, adapter.n_layers * adapter.n_heads)
    tok, model = adapter.tokenizer, adapter.model.base_model
    start = time.perf_counter()
    for batch in batches:
        enc = tok(
            [texts[i] for i in batch], padding=True, truncation=True, max_length=512, return_tensors="pt"
        )
        with torch.inference_mode():
            model(**enc, output_attentions=True)
    return time.perf_counter() - start


def local_run(adapter, corpus, options: Options, folder: Path) -> dict:
    base = rss_mb()
    samples, stamps = [], []

    def progress(_p) -> None:
        samples.append(rss_mb())
        stamps.append(time.perf_counter())

    start = time.perf_counter()
    store = run_corpus("minilm", corpus, options, adapter=adapter, folder=folder, progress=progress)
    end = time.perf_counter()
    return {
        "store": store,
        "seconds": end - start,
        "finish": end - stamps[-1],  # after the last batch: the links sorted by head, the checkpoint
        "base": base,
        "peak": max(samples),
        "last": samples[-1],
        "quarters": [samples[min(len(samples) - 1, len(samples) * q // 4)] for q in (1, 2, 3, 4)],
    }


def ray_run(adapter, corpus, options: Options, folder: Path) -> dict:
    """The Ray run, its driver given the loaded model as the local run is (it tokenizes with it);
    the actors' start and their own model loads are counted."""
    import ray

    began = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    up = time.perf_counter() - began
    stamps = []
    start = time.perf_counter()
    store = run_corpus(
        "minilm",
        corpus,
        options,
        adapter=adapter,
        folder=folder,
        ray_address="auto",
        progress=lambda p: stamps.append((p.done, time.perf_counter())),
    )
    seconds = time.perf_counter() - start
    ray.shutdown()
    first_done, first_at = next((done, t) for done, t in stamps if done > 0)
    steady = (len(corpus.texts) - first_done) / (start + seconds - first_at)
    return {"store": store, "seconds": seconds, "init": up, "first": first_at - start, "steady": steady}


def search_times(store) -> tuple[float, float, int]:
    """(first query's ms, median ms over the rest, hits of the first) on random heads."""
    gen = torch.Generator().manual_seed(0)
    times, hits = [], None
    for i in range(3 * len(SEARCHES)):
        token, to = SEARCHES[i % len(SEARCHES)]
        layer, head = (int(x) for x in torch.randint(0, 6, (1,), generator=gen).tolist() + torch.randint(
            0, 12, (1,), generator=gen).tolist())  # fmt: skip
        t = time.perf_counter()
        found = queries.search(store, layer, head, token, to)
        times.append((time.perf_counter() - t) * 1000)
        hits = len(found) if hits is None else hits
    return times[0], statistics.median(times[1:]), hits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=10_000)
    parser.add_argument("--no-ray", action="store_true")
    args = parser.parse_args()
    load_start = os.getloadavg()[0]
    where = machine()
    corpus = sample("english", args.texts)
    options = Options()
    adapter = load("minilm", torch.device("cpu"))
    n = len(corpus.texts)
    before = bare_forward(adapter, corpus.texts, options)
    print(f"bare forward {n / before:.0f}/s", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-corpus-") as tmp:
        local = local_run(adapter, corpus, options, Path(tmp) / "local")
        print(f"local {n / local['seconds']:.0f}/s", flush=True)
        after = bare_forward(adapter, corpus.texts, options)  # again: the load drifts over minutes
        bare = (before, after)
        print(f"bare forward again {n / after:.0f}/s", flush=True)
        first, median, hits = search_times(local["store"])
        size = sum(p.stat().st_size for p in (Path(tmp) / "local").glob("*.duckdb")) / 2**20
        links = local["store"].con.execute("SELECT count(*) FROM links").fetchone()[0]
        local["store"].close()
        ray = None if args.no_ray else ray_run(adapter, corpus, options, Path(tmp) / "ray")
        if ray:
            print(f"ray {n / ray['seconds']:.0f}/s", flush=True)
            ray["store"].close()
    write_section(
        "bench_corpus", report(where, load_start, n, bare, local, ray, first, median, hits, size, links)
    )


def report(where, load_start, n, bare, local, ray, first, median, hits, size, links) -> str:
    before, after = bare
    bare = (before + after) / 2
    local_rate, bare_rate = n / local["seconds"], n / bare
    rows = [
        "| run | seconds | sentences/s | vs bare forward (mean) |",
        "| --- | --- | --- | --- |",
        f"| bare batched forward before the local run (weights returned, unused) | {before:.1f} | {n / before:.0f} | |",
        f"| bare batched forward after it | {after:.1f} | {n / after:.0f} | |",
        f"| bare batched forward, mean of the two | {bare:.1f} | {bare_rate:.0f} | 1.00× |",
        f"| local end to end [≥ 200/s] | {local['seconds']:.1f} | {local_rate:.0f} | {local_rate / bare_rate:.2f}× |",
    ]
    if ray:
        rate = n / ray["seconds"]
        rows.append(
            f"| local Ray, 2 workers [≥ 0.8 × local] | {ray['seconds']:.1f} | {rate:.0f} | "
            f"{rate / bare_rate:.2f}× ({rate / local_rate:.2f}× local) |"
        )
    load_end = os.getloadavg()[0]
    ray_note = (
        f" Ray: `ray.init(num_cpus=2)` took {ray['init']:.1f} s (not counted); the Ray time counts "
        f"starting two actors that each import torch and transformers and load minilm: the first batch "
        f"came back {ray['first']:.1f} s after the call; from then on Ray ran {ray['steady']:.0f} texts/s "
        f"({ray['steady'] / (n / local['seconds']):.2f}× the local run's rate over its whole run)."
        if ray
        else " Ray: not run (--no-ray)."
    )
    return f"""## Corpus (bench/bench_corpus.py)

{date.today()}, {where}; 1-min load average {load_end:.1f} at the end (the machine may be shared with
other jobs that come and go: compare the ratios, taken in the same run). minilm
on the CPU over {n:,} distinct English sentences of the translation corpus (sample `english`,
seed 0), length-sorted batches of up to 128, top-3 links.

{chr(10).join(rows)}

Resident memory over the local run, above the process with the model loaded [≤ 500 MB]: at a quarter,
half, three quarters and the end of the batches {", ".join(f"{q - local['base']:,.0f}" for q in local["quarters"])} MB,
{local["peak"] - local["base"]:,.0f} MB at the peak (DuckDB's buffers are capped at 256 MB; the weights of a batch
are reduced and dropped as it finishes). The store: {size:,.1f} MB
on disk, {links:,} token × layer × head links; sorting them by head once the last batch was in took
{local["finish"]:.1f} s of the local run.{ray_note}

Search (tokens {", ".join(t + (" → " + to if to else "") for t, to in SEARCHES)}, random heads):
first query {first:.0f} ms, median of the next {3 * len(SEARCHES) - 1} {median:.0f} ms [≤ 100 ms]; the first
found {hits} hits (50 at most are returned). Load average {load_start:.1f} when the run started.
"""


if __name__ == "__main__":
    main()
