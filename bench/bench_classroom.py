"""Watch attention learn (issue 14): how fast the classroom preset's attention turns diagonal.

Goal: with additive attention, force-decoded diagonal alignment ≥ 0.90 on the held-out couplets
(all 2,000; no training line's upper line is among them) within 120 s of training on the CPU
with two threads; the alignment at 15, 30, 60 and 120 s, dot product's beside it. The trainer
is the page's and the command line's (``models.training.classroom.ClassroomTrainer``); seconds
are training seconds (wall-clock time in training steps; measuring is not counted), and the CPU
seconds the process spent by then are reported beside them, since this machine is shared.
Run: flock /tmp/atlas-bench.lock nice -n 5 python -m bench.bench_classroom [--threads 2] [--seconds 120]
"""

from __future__ import annotations

import os

# OpenMP's worker threads spin while they wait; on this shared 2-core machine two spinning threads
# made a training step 15 times slower (0.93 CPU s instead of 0.08). Passive waiting must be set
# before torch starts its thread pool.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import json
import time
from dataclasses import asdict, replace
from datetime import date

import torch

from attention_atlas.models.training import classroom as cr
from bench.results import machine, median_seconds, write_section

MARKS = (15, 30, 60, 120)
GOAL = 0.90


def race(attention: str, p: cr.Preset, marks: tuple[float, ...], clock: str) -> list[dict]:
    """Train one model from scratch; at each mark (training seconds, CPU seconds of training with
    ``clock="cpu"``, steps with ``clock="steps"``), measure every held-out couplet."""
    data = cr.data_for(p)
    trainer = cr.ClassroomTrainer(attention, p, data)
    cpu = 0.0  # CPU seconds of the process inside training steps (all torch threads)
    rows = []
    for mark in marks:
        while {"cpu": cpu, "steps": trainer.step}.get(clock, trainer.seconds) < mark:
            c = time.process_time()
            trainer.advance()
            cpu += time.process_time() - c
        point = trainer.measure(data.held_out)
        row = {"mark": mark, "seconds": point.seconds, "cpu_seconds": round(cpu, 1), "step": point.step}
        row |= {"alignment": point.alignment, "probe": point.probe_alignment, "valid_loss": point.valid_loss}
        rows.append(row)
        print(json.dumps({"attention": attention, **rows[-1]}), flush=True)
    trainer.measure()  # warm
    page = median_seconds(trainer.measure, repeat=5, warmup=0)  # the page's measurement: watched couplets
    rows[-1]["page_measure_s"] = round(page, 3)
    return rows


def page_note(results: dict[str, list[dict]], p: cr.Preset) -> str:
    """What the page adds to the training seconds on the clock: a measurement every ``measure_every``
    steps of the watched couplets, and in a race the other model's training."""
    parts = []
    for attention, rows in results.items():
        last = rows[-1]
        extra = last["step"] / p.measure_every * last["page_measure_s"]
        parts.append(
            f"{attention}: one measurement of {p.watch_pairs} watched couplets and the probe takes"
            f" {last['page_measure_s']:.2f} s, so {last['seconds']:.0f} training seconds take about"
            f" {last['seconds'] + extra:.0f} s on the clock"
        )
    return "On the page (a measurement every " + f"{p.measure_every} steps): " + "; ".join(parts) + "."


def table(results: dict[str, list[dict]], marks: tuple[float, ...], unit: str = "s") -> str:
    head = "| attention | " + " | ".join(f"{m:,g} {unit}" for m in marks) + " |"
    lines = [head, "|" + " --- |" * (len(marks) + 1)]
    for attention, rows in results.items():
        cells = [
            f"{r['alignment']:.3f}, probe {r['probe']:.0%} (step {r['step']:,}; {r['seconds']:.0f} s,"
            f" {r['cpu_seconds']:.0f} CPU s)"
            for r in rows
        ]
        lines.append(f"| {attention} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def wall_note(results: dict[str, list[dict]], args) -> str:
    """With CPU-second marks, what the shared machine made of them in wall-clock training seconds."""
    if args.clock != "cpu":
        return ""
    last = results["additive"][-1]
    return (
        f" In wall-clock training seconds it took {last['seconds']:.0f} s here, the run getting about"
        f" {last['cpu_seconds'] / last['seconds']:.0%} of a core's time on this shared machine: the goal as"
        " stated (120 s of wall-clock training) needs a machine that gives the run its cores."
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2, help="torch CPU threads (2)")
    ap.add_argument("--seconds", type=float, default=120.0, help="the last mark (120)")
    ap.add_argument(
        "--marks", default=",".join(map(str, MARKS)), help="the marks before the last, in seconds"
    )
    ap.add_argument(
        "--clock",
        choices=["wall", "cpu", "steps"],
        default="wall",
        help="marks in training seconds, CPU seconds or steps",
    )
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    # The page also measures 200 held-out couplets every 25 steps; that changes no weight, so the
    # bench leaves it out and measures all 2,000 at each mark instead.
    page = replace(cr.PRESETS["classroom"], threads=args.threads)
    p = replace(page, measure_every=10**9)
    marks = (*(m for m in map(float, args.marks.split(",")) if m < args.seconds), args.seconds)
    where, data = machine(), cr.data_for(p)
    results = {a: race(a, p, marks, args.clock) for a in cr.ATTENTIONS}
    load_end = os.getloadavg()[0]
    unit = "steps" if args.clock == "steps" else f"{args.clock} seconds"
    final = results["additive"][-1]["alignment"]
    verdict = "met" if final >= GOAL else "NOT met"
    clock = {
        "wall": "training seconds (wall-clock time inside training steps)",
        "cpu": "CPU seconds of the process inside training steps (all threads)",
        "steps": "training steps (batches of 256 couplets): what is learned does not depend on the load",
    }[args.clock]
    body = f"""
## Watch attention learn: the classroom preset, {args.threads} thread(s), marks in {unit} (bench/bench_classroom.py)

{date.today()}, {where}, OMP_WAIT_POLICY={os.environ["OMP_WAIT_POLICY"]}; {load_end:.1f} at the end
(the machine was shared: another training run held one core under nice for part of the time, other helpers'
tests and benchmarks came and went).

Preset `classroom`: {json.dumps({k: v for k, v in asdict(p).items() if k not in ("probe", "measure_every")})}.
Trained from scratch (seed {p.seed}) on {len(data.train):,} couplets of 5 and 7 characters. Force-decoded
diagonal alignment (the share of characters whose attention peaks on their own position) on all
{len(data.held_out):,} held-out couplets (no training line's upper line among them) at each mark of
{clock}; measuring is not counted. Each cell: held-out alignment, the probe couplet's alignment (step; training seconds, CPU seconds by then).

{table(results, marks, "steps" if args.clock == "steps" else "s")}

{page_note(results, page)} The probe is the page's couplet {"→".join(p.probe)}; its alignment moves in sevenths.

Goal (additive ≥ {GOAL:.2f} within {args.seconds:g} {unit}): **{verdict}** ({final:.3f}).{wall_note(results, args)}
"""
    write_section(f"bench_classroom_{args.threads}t_{args.clock}", body)
    print(body)


if __name__ == "__main__":
    main()
