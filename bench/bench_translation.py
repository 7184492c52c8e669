"""The Bahdanau tutorial's question: what does swapping additive for scaled dot-product attention cost in training?

Same data, same budget: every variant trains on the same batches, in the same order, for
the same number of steps, from its own seeded initialisation. Steps of the variants run in
turns in one process (so machine load hits all alike) and each step is timed; peak memory
is measured per variant in a fresh subprocess. Writes attention_atlas/data/translation_cost.json (the
Translation page shows it) and its section of bench/RESULTS.md.

Also: ``cli.py extract --input-file`` lines/s for the bundled models (goal ≥ 50 short
sentences/s, process start included).

Run: python -m bench.bench_translation [--steps 300] [--threads 1]
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import time
from datetime import date

import torch

from attention_atlas.models.device import pick_device
from attention_atlas.models.nets.rnn_seq2seq import Seq2Seq, Seq2SeqConfig
from attention_atlas.models.tasks.translation import (
    Translator,
    batches,
    bleu,
    build_vocabs,
    cost_setup,
    cost_summary,
    load_split,
    quick_metrics,
)
from attention_atlas.models.training.loop import loss_fn
from attention_atlas.paths import DATA, WEIGHTS
from bench.bench_couplet import cli_rate
from bench.measure import rss_mb
from bench.results import machine, write_section

OUT = DATA / "translation_cost.json"  # the Translation page shows it
VARIANTS = {  # name: (rnn, attention)
    "GRU + additive": ("gru", "additive"),
    "GRU + scaled dot": ("gru", "scaled_dot"),
    "LSTM + scaled dot": ("lstm", "scaled_dot"),
}


def build(rnn: str, attention: str, src_vocab, tgt_vocab, seed: int = 0) -> Seq2Seq:
    torch.manual_seed(seed)
    cfg = Seq2SeqConfig(len(src_vocab), len(tgt_vocab), 256, 256, rnn=rnn, attention=attention, dropout=0.2)
    return Seq2Seq(cfg)


def train_step(model, opt, batch, device, probe=None) -> tuple[float, int]:
    """One Adam step; ``probe()`` is called where memory peaks (after forward, after backward)."""
    model.train()
    loss, n = loss_fn(model, batch.to(device))
    if probe:
        probe()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    if probe:
        probe()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    return float(loss.detach()), n


def peak_memory(name: str, steps: int) -> dict:
    """Memory of one variant's training, measured in a fresh process (see ``memory_child``)."""
    out = subprocess.run(
        [sys.executable, "-m", "bench.bench_translation", "--memory-of", name, "--steps", str(steps)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def memory_child(name: str, steps: int) -> None:
    """Resident memory sampled at each step's peaks, above the process with its data loaded."""
    split = load_split()
    src, tgt = build_vocabs(split.train)
    data = batches(split.train, src, tgt)(0)[:steps]
    del split
    gc.collect()
    device = pick_device()
    base = rss_mb()
    model = build(*VARIANTS[name], src, tgt).to(device)
    opt = torch.optim.Adam(model.parameters(), 2e-3)
    samples = [rss_mb()]
    for batch in data:
        train_step(model, opt, batch, device, probe=lambda: samples.append(rss_mb()))
        samples.append(rss_mb())
    cuda = torch.cuda.max_memory_allocated() / 2**20 if device.type == "cuda" else None
    print(json.dumps({"training_mb": round(max(samples) - base, 1), "cuda_mb": cuda}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=300, help="training steps per variant (the budget)")
    ap.add_argument("--eval-every", type=int, default=50)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--memory-of", help=argparse.SUPPRESS)
    ap.add_argument(
        "--report-only", action="store_true", help="rewrite the words and RESULTS.md from the JSON"
    )
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.memory_of:
        memory_child(args.memory_of, min(args.steps, 30))
        return
    if args.report_only:
        result = json.loads(OUT.read_text(encoding="utf-8"))
        result["summary"] = cost_summary(result["table"])
        OUT.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        write_section("translation", report(result))
        return

    split = load_split()
    src, tgt = build_vocabs(split.train)
    data = batches(split.train, src, tgt)(0)  # one epoch's batches, the same for every variant
    device = pick_device()
    models = {n: build(*v, src, tgt).to(device) for n, v in VARIANTS.items()}
    opts = {n: torch.optim.Adam(m.parameters(), 2e-3) for n, m in models.items()}
    log = {n: {"steps": [], "loss": [], "seconds": [], "eval_steps": [], "bleu": []} for n in models}
    for step, batch in enumerate(data[: args.steps], 1):
        for name in models:  # in turns: the same batch, then the next variant
            t = time.perf_counter()
            loss, _ = train_step(models[name], opts[name], batch, device)
            log[name]["seconds"].append(time.perf_counter() - t)
            log[name]["steps"].append(step)
            log[name]["loss"].append(round(loss, 4))
        if step % args.eval_every == 0 or step == args.steps:
            for name, m in models.items():
                m.eval()
                with torch.no_grad():
                    log[name]["eval_steps"].append(step)
                    log[name]["bleu"].append(
                        quick_metrics(Translator(m, src, tgt, device), split.valid)["bleu"]
                    )
            print(
                step,
                {n: (log[n]["loss"][-1], log[n]["bleu"][-1]) for n in models},
                file=sys.stderr,
                flush=True,
            )

    test_src = [en for en, _ in split.test]
    refs = [[" ".join(fr)] for _, fr in split.test]
    base = statistics.median(log["GRU + additive"]["seconds"][10:])
    table, variants = [], []
    for name, m in models.items():
        tr = Translator(m.eval(), src, tgt, device)
        with torch.no_grad():
            test_bleu = bleu([tr.text(d) for d in tr.generate(test_src)], refs)["bleu"]
        per_step = statistics.median(log[name]["seconds"][10:])
        mem = peak_memory(name, args.steps)
        table.append(
            {
                "variant": name,
                "parameters": sum(p.numel() for p in m.parameters()),
                "vocabulary": len(tgt),
                "attention parameters": sum(p.numel() for p in m.decoder.attention.parameters()),
                "median s / step": round(per_step, 4),
                "× GRU + additive": round(per_step / base, 2),
                "s / epoch (est.)": round(per_step * len(data), 1),
                "training memory MB": mem["cuda_mb"] or mem["training_mb"],
                f"loss, last 50 of {args.steps} steps": round(statistics.mean(log[name]["loss"][-50:]), 3),
                "valid BLEU": log[name]["bleu"][-1],
                "test BLEU": test_bleu,
            }
        )
        variants.append({"name": name, **log[name]})
    setup = {
        "steps": args.steps,
        "pairs": 128,
        "batches": len(data),
        "device": device.type.upper(),
        "machine": machine(),
        "date": date.today().isoformat(),
    }
    sentences = [" ".join(en) for en, _ in split.test[:500]]
    rates = {
        mid: round(cli_rate(mid, sentences)[0], 1)
        for mid in ("translate-gru-additive", "translate-lstm-dot")
        if (WEIGHTS / mid / "model.safetensors").is_file()
    }
    result = {
        "setup": setup,
        "table": table,
        "variants": variants,
        "summary": cost_summary(table),
        "extract_lines_per_s": rates,
    }
    OUT.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    write_section("translation", report(result))
    print(report(result))


def report(result: dict) -> str:
    cols = list(result["table"][0])
    lines = [
        "## Translation: additive vs scaled dot-product training cost (bench/bench_translation.py)",
        "",
        cost_setup(result["setup"]),
        "",
        "| " + " | ".join(cols) + " |",
        "|" + " --- |" * len(cols),
    ]
    for r in result["table"]:
        lines.append(
            "| " + " | ".join(f"{r[c]:,}" if isinstance(r[c], int) else str(r[c]) for c in cols) + " |"
        )
    lines += ["", result["summary"], ""]
    rates = (
        ", ".join(f"{m} {r:,.0f}" for m, r in result["extract_lines_per_s"].items()) or "no bundled weights"
    )
    lines.append(
        f"`cli.py extract --input-file` on 500 test sentences, JSON Lines, process start included "
        f"(goal ≥ 50 lines/s): {rates} lines/s."
    )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
