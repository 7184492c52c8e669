"""Corpus (issue 13): minilm over 10,000 English sentences, stored in DuckDB, locally and on Ray.

Measured in one run (issue 13's goals in brackets):
- the bare batched forward: the same length-sorted batches, tokenized and run with the attention
  weights returned and nothing done with them (the floor of any extraction);
- the end-to-end local run: extraction, statistics, top-k links, DuckDB writes, the final sort
  [≥ 200 sentences/s], and its ratio to the bare forward;
- resident memory over the local run, above the process with the model loaded [≤ 500 MB];
- the same run through a local Ray with 2 workers [≥ 0.8 × the local rate]; the local and Ray
  runs alternate ``--repeat`` times and the median of the pairs' ratios is reported, with the
  CPU-seconds each run cost the whole machine and the fixed start no Ray run can avoid (a fresh
  Python importing what each of Ray Data's worker processes imports);
- the search (exBERT's query) over the 10,000-sentence store [≤ 100 ms].

Run: flock /tmp/atlas-bench.lock nice -n 5 python -m bench.bench_corpus [--texts 10000] [--repeat 3] [--no-ray]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

import torch

from attention_atlas.models.corpus import queries
from attention_atlas.models.corpus.extract import Options, extractor
from attention_atlas.models.corpus.inputs import sample
from attention_atlas.models.corpus.ray_run import traced
from attention_atlas.models.corpus.run import planned, run_corpus
from attention_atlas.models.registry import load
from bench.measure import rss_mb
from bench.results import machine, write_section

SEARCHES = [("the", ""), ("i", ""), ("you", ""), ("to", ""), ("wa*", ""), ("the", "[CLS]"), ("tom", "")]


ROOT = Path(__file__).resolve().parent.parent
# What a fresh Python spends on each import a Ray worker process makes before its first batch.
FLOORS = {
    "python": "pass",
    "ray": "import ray",
    "ray_data": "import ray, ray.data",
    "graph": "import sys; from attention_atlas.models.corpus.ray_run import load_graph; load_graph(open(sys.argv[1], 'rb').read())",
    "model": "import torch; from attention_atlas.models.registry import load; load('minilm', torch.device('cpu'))",
}


def machine_cpu() -> float:
    """CPU-seconds the whole machine has spent so far (every process: Ray's workers included)."""
    with open("/proc/stat", encoding="ascii") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (sum(v) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")


def child_cpu(code: str, *args: str) -> float:
    """CPU-seconds of a fresh Python running ``code`` (the median of three)."""
    times = []
    for _ in range(3):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, check=True, capture_output=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        times.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return statistics.median(times)


def floors(adapter, corpus, options: Options) -> dict[str, float]:
    """CPU-seconds of: the driver tracing minilm's graph and checking it (``ray_run.traced``), a
    model actor loading that graph (torch only) or else the model (torch and transformers), and
    one process's ``import ray.data``."""
    ex = extractor(adapter, options)
    ids = list(range(len(corpus.texts)))
    batches = planned(ex, corpus.texts, ids, options)
    start = time.process_time()
    graph = traced(ex, batches, corpus.texts)
    trace = time.process_time() - start
    with tempfile.NamedTemporaryFile(suffix=".pt") as f:
        f.write(graph)
        f.flush()
        cpu = {name: child_cpu(code, f.name) for name, code in FLOORS.items()}
    return {
        "trace": trace,
        "graph": cpu["graph"] - cpu["python"],
        "model": cpu["model"] - cpu["python"],
        "ray_data": cpu["ray_data"] - cpu["ray"],
    }


def bare_forward(adapter, texts: list[str], options: Options) -> float:
    """Seconds for tokenizing and running every batch, weights returned and dropped."""
    ex = extractor(adapter, options)
    ids = list(range(len(texts)))
    batches = planned(ex, texts, ids, options)
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

    cpu, start = machine_cpu(), time.perf_counter()
    store = run_corpus("minilm", corpus, options, adapter=adapter, folder=folder, progress=progress)
    end = time.perf_counter()
    return {
        "store": store,
        "seconds": end - start,
        "cpu": machine_cpu() - cpu,
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
    cpu, start = machine_cpu(), time.perf_counter()
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
    cpu = machine_cpu() - cpu
    ray.shutdown()
    first_done, first_at = next((done, t) for done, t in stamps if done > 0)
    steady = (len(corpus.texts) - first_done) / (start + seconds - first_at)
    return {
        "store": store, "seconds": seconds, "cpu": cpu, "init": up, "first": first_at - start, "steady": steady,
    }  # fmt: skip


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


def closed(run: dict) -> dict:
    run["store"].close()
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3, help="local and Ray runs, alternated")
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
        local = local_run(adapter, corpus, options, Path(tmp) / "local0")
        print(f"local {n / local['seconds']:.0f}/s", flush=True)
        after = bare_forward(adapter, corpus.texts, options)  # again: the load drifts over minutes
        print(f"bare forward again {n / after:.0f}/s", flush=True)
        first, median, hits = search_times(local["store"])
        size = sum(p.stat().st_size for p in (Path(tmp) / "local0").glob("*.duckdb")) / 2**20
        links = local["store"].con.execute("SELECT count(*) FROM links").fetchone()[0]
        locals_, rays = [closed(local)], []
        for i in range(0 if args.no_ray else args.repeat):
            if i:
                locals_.append(closed(local_run(adapter, corpus, options, Path(tmp) / f"local{i}")))
            rays.append(closed(ray_run(adapter, corpus, options, Path(tmp) / f"ray{i}")))
            print(
                f"pair {i + 1}: local {n / locals_[i]['seconds']:.0f}/s, ray {n / rays[i]['seconds']:.0f}/s",
                flush=True,
            )
    floor = floors(adapter, corpus, options) if rays else None
    write_section(
        "bench_corpus",
        report(
            where, load_start, n, (before, after), locals_, rays, floor, (first, median, hits, size, links)
        ),
    )


def _median(runs: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def report(where, load_start, n, bare, locals_, rays, floor, search) -> str:
    before, after = bare
    first, median, hits, size, links = search
    local = locals_[0]
    bare = (before + after) / 2
    bare_rate = n / bare
    local_s = _median(locals_, "seconds")
    local_rate = n / local_s
    rows = [
        "| run | seconds | sentences/s | vs bare forward (mean) |",
        "| --- | --- | --- | --- |",
        f"| bare batched forward before the local run (weights returned, unused) | {before:.1f} | {n / before:.0f} | |",
        f"| bare batched forward after it | {after:.1f} | {n / after:.0f} | |",
        f"| bare batched forward, mean of the two | {bare:.1f} | {bare_rate:.0f} | 1.00× |",
        f"| local end to end [≥ 200/s], median of {len(locals_)} ({_list(locals_)} s) | {local_s:.1f} | "
        f"{local_rate:.0f} | {local_rate / bare_rate:.2f}× |",
    ]
    if rays:
        ray_s = _median(rays, "seconds")
        ratios = [lo["seconds"] / r["seconds"] for lo, r in zip(locals_, rays, strict=True)]
        rows.append(
            f"| local Ray, 2 workers [≥ 0.8 × local], median of {len(rays)} ({_list(rays)} s) | {ray_s:.1f} | "
            f"{n / ray_s:.0f} | {n / ray_s / bare_rate:.2f}× (**{statistics.median(ratios):.2f}× local**: the "
            f"median of the pairs' ratios {', '.join(f'{r:.2f}' for r in ratios)}) |"
        )
    load_end = os.getloadavg()[0]
    return f"""## Corpus (bench/bench_corpus.py)

{date.today()}, {where}; 1-min load average {load_end:.1f} at the end (the machine may be shared with
other jobs that come and go: compare the ratios, taken in the same run). minilm
on the CPU over {n:,} distinct English sentences of the translation corpus (sample `english`,
seed 0), length-sorted batches of up to 128, top-3 links. The local and Ray runs alternate.

{chr(10).join(rows)}

Resident memory over the first local run, above the process with the model loaded [≤ 500 MB]: at a quarter,
half, three quarters and the end of the batches {", ".join(f"{q - local['base']:,.0f}" for q in local["quarters"])} MB,
{local["peak"] - local["base"]:,.0f} MB at the peak (DuckDB's buffers are capped at 256 MB; the weights of a batch
are reduced and dropped as it finishes). The store: {size:,.1f} MB
on disk, {links:,} token × layer × head links; sorting them by head once the last batch was in took
{local["finish"]:.1f} s of the local run.{_ray_note(n, locals_, rays, floor)}

Search (tokens {", ".join(t + (" → " + to if to else "") for t, to in SEARCHES)}, random heads):
first query {first:.0f} ms, median of the next {3 * len(SEARCHES) - 1} {median:.0f} ms [≤ 100 ms]; the first
found {hits} hits (50 at most are returned). Load average {load_start:.1f} when the run started.
"""


def _list(runs: list[dict]) -> str:
    return ", ".join(f"{r['seconds']:.1f}" for r in runs)


def _ray_note(n: int, locals_: list[dict], rays: list[dict], floor: dict | None) -> str:
    if not rays:
        return " Ray: not run (--no-ray)."
    local_s, local_cpu = _median(locals_, "seconds"), _median(locals_, "cpu")
    ray_cpu = _median(rays, "cpu")
    fixed = floor["trace"] + 2 * floor["graph"] + 6 * floor["ray_data"]
    return f"""

Ray: `ray.init(num_cpus=2)` took {_median(rays, "init"):.1f} s (not counted). CPU-seconds the whole
machine spent during a run (medians): local {local_cpu:.1f} ({local_cpu / local_s:.2f} cores busy on
average), Ray {ray_cpu:.1f} ({ray_cpu / _median(rays, "seconds"):.2f} cores busy): with both cores busy the
Ray run's wall time is its CPU time over two. The first batch came back {_median(rays, "first"):.1f} s after
the call; from then on Ray ran {_median(rays, "steady"):.0f} texts/s
({_median(rays, "steady") / (n / local_s):.2f}× the local run's rate over its whole run). What every Ray
run pays before its first batch: the driver traces minilm's attention to a TorchScript graph and
checks it bit for bit ({floor["trace"]:.1f} CPU-s, timed in the bench); in fresh Pythons, each model actor imports
torch and loads that graph ({floor["graph"]:.1f} CPU-s; importing transformers and loading minilm instead,
as an actor does for a model that does not trace, costs {floor["model"]:.1f}); each of Ray Data's five worker
processes (the two model actors and three helper actors: stats, autoscaling, actor locations) and the
driver import `ray.data` ({floor["ray_data"]:.1f} CPU-s each): {fixed:.1f} CPU-s in all, {fixed / 2:.1f} s of both cores,
{fixed / 2 / local_s:.0%} of the local run's wall time."""


if __name__ == "__main__":
    main()
