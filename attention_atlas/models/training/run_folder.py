"""The run folder of a training command: its log, its config, the commands that built it.

Shared by every ``atlas train ...`` family, so each keeps only its data, its
evaluation and its model card.
"""

from __future__ import annotations

import datetime as dt
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

from attention_atlas.models.storage.atomic import atomic_write
from attention_atlas.models.storage.checkpoint import read_meta


def record_command(run_dir: Path, command: str, fresh: bool) -> list[str]:
    """Append this invocation to the run folder's history, so a card lists every phase."""
    path = run_dir / "commands.txt"
    old = [] if fresh or not path.is_file() else path.read_text(encoding="utf-8").splitlines()
    state = run_dir / "train_state.safetensors"
    if command and state.is_file() and not fresh:
        command = f"{command}  # from step {read_meta(state)['step']}"
    lines = (
        [*old, command]
        if command and (not old or old[-1].split("  #")[0] != command.split("  #")[0])
        else old
    )
    atomic_write(path, "".join(f"{x}\n" for x in lines))
    return lines


def check_same_run(path: Path, cfg: Any, fresh: bool) -> None:
    """A run folder belongs to one architecture; resuming with another would be a silent mix."""
    if path.is_file() and not fresh:
        old = json.loads(path.read_text(encoding="utf-8"))
        if old != cfg.to_dict():
            changed = sorted(k for k in old if old[k] != cfg.to_dict().get(k))
            raise ValueError(
                f"{path.parent} holds a run with another config ({', '.join(changed)}); "
                f"use --fresh or another --run-dir"
            )
    atomic_write(path, json.dumps(cfg.to_dict(), indent=2) + "\n")


def logger(path: Path):
    def log(msg: str) -> None:
        stamp = dt.datetime.now().strftime("%H:%M:%S")
        print(f"[{stamp}] {msg}", file=sys.stderr, flush=True)
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"[{stamp}] {msg}\n")

    return log


def fit_logged(trainer, log, unit: str):
    """Run (or resume) ``trainer`` and log how it ended; returns its ``TrainResult``."""
    t0 = time.time()
    result = trainer.fit()
    log(
        f"stopped: {result.stopped}; {result.step} steps in {result.seconds:.0f} s of training "
        f"({result.tokens_per_s:,.0f} {unit}/s); this session {time.time() - t0:.0f} s"
    )
    return result


def run_facts(result, device) -> dict:
    """What every model card says about where and how long a run trained."""
    import torch

    from attention_atlas.models.device import describe

    return {
        "train_seconds": round(result.seconds, 1),
        "device": describe(device),
        "cpu": platform.processor() or platform.machine(),
        "torch": torch.__version__,
        "date": dt.date.today().isoformat(),
        "stopped": result.stopped,
    }


def train_config(args, **extra):
    """The loop's settings from a training command's arguments (same names; ``steps`` is ``max_steps``)."""
    from attention_atlas.models.training.loop import TrainConfig

    names = ("lr", "seed", "eval_every", "save_every", "min_steps", "decay_from")
    given = {k: getattr(args, k) for k in names if hasattr(args, k)}
    return TrainConfig(max_steps=args.steps, **given, **extra)
