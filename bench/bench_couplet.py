"""Couplet models: attention-extraction overhead, training throughput, batch extraction rate,
and alignment on lines of one to three clauses.

Goals (issue 3): extracting attention costs ≤ 20 % over plain greedy decoding of the same
inputs (measured side by side, interleaved, in one run); ``cli.py extract --input-file``
handles ≥ 50 seven-character lines/s; training characters/s on this CPU.
Goals (issue 16), on the clause validation split (``models.tasks.couplet_clauses``): alignment
≥ 0.95 on single-clause 5/7-character lines and ≥ 0.85 on multi-clause lines, 100 % right
length and punctuation; each bundled model beside an earlier bundle of the same id, measured
in the same run, when ``--before DIR`` holds ``DIR/<id>/model.safetensors``.
Run: python -m bench.bench_couplet [--threads 1] [--quick] [--before DIR] [--clauses-only]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

import torch

from attention_atlas.models.registry import load
from attention_atlas.models.tasks.couplet import CoupletBatches, load_split
from attention_atlas.models.tasks.couplet_clauses import bucket, clause_report, validation_lines
from attention_atlas.models.training.loop import loss_fn
from bench.results import machine, write_section

ROOT = Path(__file__).resolve().parent.parent

MODELS = ("couplet-rnn-additive", "couplet-rnn-dot")
CLAUSE_MODELS = (*MODELS, "couplet-transformer")


def interleaved(fns: dict, repeat: int) -> dict[str, float]:
    """Median seconds of each function, run in turns so that machine load hits all alike."""
    times = {k: [] for k in fns}
    for fn in fns.values():
        fn()  # warm-up
    for _ in range(repeat):
        for name, fn in fns.items():
            t = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t)
    return {k: statistics.median(v) for k, v in times.items()}


def extraction(adapter, lines: list[str], repeat: int) -> dict[str, float]:
    cm = adapter.runner
    chars = [list(x) for x in lines]
    items = [(x, None) for x in lines]

    def plain():  # greedy search → strings; the weights come along (the decoder needs them anyway)
        return [cm.text(d) for d in cm.generate(chars)]

    def records():  # what the page and the CLI get: checked AttentionRecords with notices
        return adapter.run_batch(items)

    def records_json():  # … and serialised as extract --json prints them
        return [json.dumps(r.to_json(adapter), ensure_ascii=False) for r in records()]

    return interleaved({"plain": plain, "records": records, "records_json": records_json}, repeat)


def training_rate(attention_id: str, train_pairs, vocab, steps: int) -> float:
    """Median target characters/s over ``steps`` real batches of 128 (a fresh copy of the model)."""
    adapter = load(attention_id, torch.device("cpu"))
    model = type(adapter.bundle.model)(adapter.bundle.model.config)
    model.load_state_dict(adapter.bundle.model.state_dict())
    model.train()
    opt = torch.optim.Adam(model.parameters(), 1e-3)
    batches = CoupletBatches(train_pairs[:20_000], vocab, 128, seed=0)(1)  # the full mix of lines
    rates = []
    for i, batch in enumerate(batches[: steps + 2]):
        t = time.perf_counter()
        loss, n = loss_fn(model, batch)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if i >= 2:  # warm-up
            rates.append(n / (time.perf_counter() - t))
    return statistics.median(rates)


def cli_rate(model_id: str, lines: list[str]) -> tuple[float, float]:
    """(lines/s including process start, seconds) of ``cli.py extract --input-file``."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "lines.txt"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        t = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "cli.py", "extract", "--model", model_id, "--input-file", str(path), "--json"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        seconds = time.perf_counter() - t
    assert len(done.stdout.splitlines()) == len(lines)
    return len(lines) / seconds, seconds


def clause_adapter(model_id: str, before: Path | None):
    """The bundled model, or (``before`` given) the earlier bundle kept at ``before/<id>``."""
    if before is None:
        return load(model_id, torch.device("cpu"))
    from attention_atlas.models.adapters.couplet_rnn import CoupletRNNAdapter
    from attention_atlas.models.adapters.couplet_transformer import CoupletTransformerAdapter

    cls = CoupletTransformerAdapter if model_id == "couplet-transformer" else CoupletRNNAdapter
    return cls(model_id, before / model_id / "model.safetensors", torch.device("cpu"))


def clause_rows(valid_pairs, before: Path | None, quick: bool) -> tuple[list, list]:
    """(lines, [(model id, "before"|"now", report)]) on the clause validation split."""
    lines = validation_lines(valid_pairs)
    if quick:
        lines = lines[::10]
    rows = []
    for model_id in CLAUSE_MODELS:
        folders = ([("before", before)] if before and (before / model_id).is_dir() else []) + [("now", None)]
        for which, folder in folders:
            t = time.perf_counter()
            report = clause_report(clause_adapter(model_id, folder).runner, lines)
            rows.append((model_id, which, report))
            print(model_id, which, json.dumps(report, ensure_ascii=False), f"{time.perf_counter() - t:.0f} s")
    return lines, rows


def clause_section(lines, rows, before: Path | None) -> str:
    """bench/RESULTS.md's section on lines of one to three clauses."""
    buckets = list(dict.fromkeys(bucket(len(x.upper)) for x in sorted(lines, key=lambda x: len(x.upper))))
    head = " | ".join(f"{b} chars" for b in buckets)
    body = [
        "## Couplet lines of one to three clauses (issue 16)",
        "",
        f"`python -m bench.bench_couplet{f' --before {before}' if before else ''}` — {date.today().isoformat()}, "
        f"{machine()}. The clause validation split (models/tasks/couplet_clauses.py): {len(lines):,} lines "
        "built only from the 2,000 held-out couplets (each as a 5/7-character line, long single clauses "
        'of 8–12 characters, lines of two and three clauses joined by "，"). Force-decoded diagonal '
        "alignment (the Transformer: the layer its card shows, heads averaged); right length and "
        "punctuation of greedy generation. `before`: the previous bundle of the id (git HEAD before the "
        "retraining), measured in the same run.",
        "",
        f"| model | bundle | {head} | 1 clause | 2 clauses | 3 clauses | single 5/7 | multi-clause "
        "| right length | right punctuation |",
        "| --- | --- | " + "--- | " * (len(buckets) + 7),
    ]
    for model_id, which, r in rows:
        cells = [f"{r['by_length'][b]['alignment']:.3f}" for b in buckets]
        cells += [f"{r['by_clauses'][k]['alignment']:.3f}" for k in ("1", "2", "3")]
        cells += [f"**{r['alignment_single_5_7']:.3f}**", f"**{r['alignment_multi']:.3f}**"]
        cells += [f"{r['length_correct']:.2%}", f"{r['punctuation_correct']:.2%}"]
        body.append(f"| {model_id} | {which} | " + " | ".join(cells) + " |")
    counts = ", ".join(f"{b}: {sum(bucket(len(x.upper)) == b for x in lines):,}" for b in buckets)
    body += [
        "",
        f"Lines per length bucket: {counts}. Goals: single 5/7 ≥ 0.95, multi-clause ≥ 0.85, "
        "100 % right length and punctuation (the search enforces both).",
    ]
    return "\n".join(body)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="fewer repeats (a smoke test)")
    ap.add_argument("--before", type=Path, help="folder of earlier bundles, DIR/<id>/model.safetensors")
    ap.add_argument("--clauses-only", action="store_true", help="only the clause alignment section")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    repeat, n_lines, steps = (3, 256, 5) if args.quick else (9, 1000, 20)

    train_pairs, valid_pairs = load_split()
    lines, rows = clause_rows(valid_pairs, args.before, args.quick)
    section = clause_section(lines, rows, args.before)
    write_section("couplet_clauses", section)
    print(section)
    if args.clauses_only:
        return
    sevens = [u for u, _ in valid_pairs if len(u) == 7][:n_lines]
    rows = []
    for model_id in MODELS:
        adapter = load(model_id, torch.device("cpu"))
        ex = extraction(adapter, sevens, repeat)
        train_cps = training_rate(model_id, train_pairs, adapter.vocab, steps)
        cli_lps, cli_s = cli_rate(model_id, sevens)
        rows.append((model_id, ex, train_cps, cli_lps, cli_s))
        print(
            model_id,
            json.dumps({k: round(v, 4) for k, v in ex.items()}),
            f"train {train_cps:,.0f} chars/s, cli {cli_lps:,.0f} lines/s",
            flush=True,
        )

    n = len(sevens)
    body = [
        "## Couplet RNNs (issue 3)",
        "",
        f"`python -m bench.bench_couplet` — {date.today().isoformat()}, {machine()}. "
        f"{n} held-out 7-character upper lines, batched 256 at a time, greedy; medians of "
        f"{repeat} interleaved runs. Training: median of {steps} steps of 128 pairs.",
        "",
        "| model | plain greedy | extraction (records) | ratio | + JSON lines | ratio | in-process lines/s "
        "| `extract --input-file` lines/s (incl. start-up) | training chars/s |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for model_id, ex, train_cps, cli_lps, cli_s in rows:
        body.append(
            f"| {model_id} | {ex['plain'] * 1e3:.0f} ms | {ex['records'] * 1e3:.0f} ms | "
            f"{ex['records'] / ex['plain']:.2f} | {ex['records_json'] * 1e3:.0f} ms | "
            f"{ex['records_json'] / ex['plain']:.2f} | {n / ex['records_json']:,.0f} | "
            f"{cli_lps:,.0f} ({n} lines in {cli_s:.1f} s) | {train_cps:,.0f} |"
        )
    body += [
        "",
        "Goals: extraction ≤ 1.20 × plain greedy; `extract --input-file` ≥ 50 lines/s. "
        "Plain greedy already computes the weights (each step's context needs them); extraction "
        "adds the checked `AttentionRecord`s, notices and metadata, and `+ JSON` the serialisation.",
    ]
    write_section("couplet", "\n".join(body))
    print("\n".join(body))


if __name__ == "__main__":
    main()
