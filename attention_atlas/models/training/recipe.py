"""One training recipe for every family: ``run_training(recipe, command)``.

The steps every ``atlas train ...`` takes, in order:

1. threads, device, run folder (``cache/runs/<model id>``) and its log;
2. the data split, and the vocabulary, built once per run folder and reused on resume;
3. the model config, checked against the run folder (``--fresh`` starts over);
4. ``torch.manual_seed(seed)`` immediately before the model is built, so ``--seed`` fixes
   the initial weights (a resumed run then overwrites them with its saved state);
5. the command appended to the folder's history (``commands.txt``), so the card lists every
   phase of a resumed run;
6. ``Trainer.fit`` (``models.training.loop``), watching quick validation metrics and a stop rule;
7. the run facts, the bundle (``weights/<model id>``), then the bundle reloaded as stored
   (float16 weights upcast) and evaluated on the held-out split;
8. ``metrics.json`` and ``MODEL_CARD.md`` (templates in ``models.training.cards``).

A family is a ``Recipe`` subclass that says only what is its own: its arguments (a
``RunArgs`` dataclass), data, vocabulary, config, quick metrics and stop rule, final
evaluation and card. A new shared option (a time budget, say) is one ``RunArgs`` field (its
``atlas`` option follows from it: ``models.training.options``) and the loop's use of it; a new
data schedule is a family's ``batches``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

import torch

from attention_atlas.models.device import describe, pick_device
from attention_atlas.models.storage.atomic import atomic_write
from attention_atlas.models.storage.bundle import Seq2SeqBundle
from attention_atlas.models.text.vocab import Vocab
from attention_atlas.models.training.cards import data_words
from attention_atlas.models.training.loop import Trainer, TrainResult, make_loss
from attention_atlas.models.training.options import option
from attention_atlas.models.training.run_folder import (
    check_same_run,
    fit_logged,
    logger,
    record_command,
    run_facts,
    train_config,
)
from attention_atlas.paths import WEIGHTS, cache_dir

Vocabs = tuple[Vocab, Vocab]  # (source, target): one object twice when both sides share a table


@dataclass
class RunArgs:
    """The options every family shares; a family's dataclass adds its own and its defaults.

    Each field is a ``atlas train <family>`` option (``models.training.options``): its type,
    default and help are the option's."""

    # option() is a dataclasses.field (ruff cannot tell, RUF009, where a Path could be mutable)
    out: Path | None = option(None, "bundle folder (default weights/<model id>)")  # noqa: RUF009
    run_dir: Path | None = option(  # noqa: RUF009
        None, "training state folder, for resuming (default $ATLAS_CACHE/runs/<model id>)"
    )
    data: Path | None = option(None, "the training pairs (default: the family's corpus)")  # noqa: RUF009
    steps: int = option(3000, "batches to train for")
    batch_size: int = option(128, "pairs per batch")
    lr: float = option(1e-3, "Adam learning rate, after the warm-up where there is one")
    seed: int = option(0, "seed of the model init and the data order")
    threads: int = option(1, "torch CPU threads")
    eval_every: int = option(100, "steps between validation checks")
    save_every: int = option(100, "steps between training-state saves")
    min_steps: int = option(0, "never stop early before this step")
    decay_from: int = option(0, "from this step, lr falls linearly to lr/10 at --steps; 0: never")
    dtype: Literal["float16", "float32"] = option("float16", "stored weights (loaded as float32)")
    device: str | None = option(None, "cpu, cuda, mps (default: the device helper's choice)")
    fresh: bool = option(False, "start over, ignoring the run folder's training state")


@dataclass
class Split:
    train: list
    valid: list  # watched during training
    test: list  # the card's numbers (the couplets: the same held-out pairs as ``valid``)


@dataclass
class Evaluation:
    """What a family measured on the bundle as stored."""

    metrics: dict[str, Any]  # metrics.json "metrics": the card's tables
    examples: dict[str, str] | None = None  # metrics.json "examples" (None: the file has none)
    shown: dict[str, Any] = field(default_factory=dict)  # only on the card (an example line, heatmaps)


class Recipe:
    """What one family supplies to ``run_training``. Subclasses set the class facts and hooks."""

    model_id: str  # a class attribute, or a property of the arguments
    unit: ClassVar[str] = "chars"  # what the loop counts and the card reports per second
    task: ClassVar[str] = "couplet"
    tokenizer: ClassVar[str] = "char"
    bundle_class: ClassVar[type] = Seq2SeqBundle
    # (quick metric, option): stop once the metric reaches the option's value (None: no target)
    stop_on: ClassVar[tuple[str, str] | None] = None

    def __init__(self, args: RunArgs):
        self.args = args
        self.out = Path(args.out or WEIGHTS / self.model_id)
        self.run_dir = Path(args.run_dir or cache_dir() / "runs" / self.model_id)

    # -- data and model --------------------------------------------------------------------
    def split(self) -> Split:
        raise NotImplementedError

    def held_out(self, split: Split) -> str:
        """How the held-out pairs were drawn, for the card's data line."""
        raise NotImplementedError

    def vocabs(self, train: list) -> Vocabs:
        raise NotImplementedError

    def config(self, vocabs: Vocabs) -> Any:
        raise NotImplementedError

    def model(self, cfg) -> torch.nn.Module:
        return self.bundle_class.model_class(cfg)

    def batches(self, train: list, vocabs: Vocabs) -> Callable[[int], list]:
        raise NotImplementedError

    def loss(self):
        return make_loss()

    def train_config(self):
        return train_config(self.args)

    # -- watching and judging --------------------------------------------------------------
    def watch(self, model, vocabs: Vocabs, device, valid: list) -> dict:
        """Quick validation metrics, every ``eval_every`` steps."""
        raise NotImplementedError

    def stop(self, metrics: dict) -> bool:
        if self.stop_on is None:
            return False
        metric, option = self.stop_on
        target = getattr(self.args, option)
        return target is not None and metrics[metric] >= target

    def facts(self, result: TrainResult, split: Split, batches) -> dict:
        """The family's lines of the card's training facts (``epochs`` first)."""
        return {"epochs": round(result.step * self.args.batch_size / max(1, len(split.train)), 2)}

    def evaluate(self, bundle, split: Split, device) -> Evaluation:
        raise NotImplementedError

    def card(self, bundle, info: dict, ev: Evaluation) -> str:
        raise NotImplementedError


def run_training(recipe: Recipe, command: str = "") -> dict:
    """Train (or resume) ``recipe``'s model, bundle it, evaluate the bundle; returns its metrics."""
    device, log = open_run(recipe)
    split = recipe.split()
    vocabs = stored_vocabs(
        recipe.run_dir / "vocab.json", lambda: recipe.vocabs(split.train), recipe.args.fresh
    )
    model = fresh_model(recipe, vocabs)
    commands = record_command(recipe.run_dir, command, recipe.args.fresh)  # once the config is accepted
    log(f"{_sizes(split)}; {_vocab_sizes(vocabs)}; {model.n_parameters():,} parameters")

    batches = recipe.batches(split.train, vocabs)
    trainer = Trainer(
        model,
        recipe.train_config(),
        recipe.run_dir,
        device,
        batches,
        recipe.loss(),
        lambda m: recipe.watch(m, vocabs, device, split.valid),
        recipe.stop,
        log=log,
    )
    result = fit_logged(trainer, log, recipe.unit)
    info = {
        "model_id": recipe.model_id,
        "data": data_words(recipe.args.data, len(split.train), recipe.held_out(split)),
        "command": command,
        "commands": commands,  # every invocation on this run folder, in order (resumes included)
        **run_numbers(recipe, result, split, batches, device),
    }
    metrics = bundle_and_report(recipe, model, vocabs, info, result.history, split, device)
    log(json.dumps(metrics, ensure_ascii=False))
    return metrics


def open_run(recipe: Recipe):
    """Threads, device, the run folder and its log; returns ``(device, log)``."""
    args = recipe.args
    torch.set_num_threads(args.threads)
    recipe.run_dir.mkdir(parents=True, exist_ok=True)
    device = pick_device(args.device)
    log = logger(recipe.run_dir / "train.log")
    log(f"{recipe.model_id}: device {describe(device)}, data {args.data}")
    return device, log


def run_numbers(recipe: Recipe, result: TrainResult, split: Split, batches, device) -> dict:
    """How long and how the run trained: the card's training facts."""
    args = recipe.args
    return {
        "steps": result.step,
        **recipe.facts(result, split, batches),
        f"{recipe.unit}_per_s": round(result.tokens_per_s, 1),
        "batch_size": args.batch_size,
        "lr": args.lr,
        "decay_from": args.decay_from,
        "threads": args.threads,
        "stored_dtype": args.dtype,
        **run_facts(result, device),
    }


def stored_vocabs(path: Path, build: Callable[[], Vocabs], fresh: bool) -> Vocabs:
    """Built once per run folder, so a resumed run keeps its ids (one table when both sides share it)."""
    if path.is_file() and not fresh:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text)
        if "src" in data:
            return Vocab(data["src"]), Vocab(data["tgt"])
        shared = Vocab.from_json(text)
        return shared, shared
    src, tgt = build()
    if src is tgt:
        text = src.to_json()
    else:
        text = json.dumps({"src": src.tokens, "tgt": tgt.tokens}, ensure_ascii=False)
    atomic_write(path, text)
    return src, tgt


def fresh_model(recipe: Recipe, vocabs: Vocabs) -> torch.nn.Module:
    """The model of the run folder's config, its initial weights fixed by ``--seed``."""
    cfg = recipe.config(vocabs)
    check_same_run(recipe.run_dir / "model_config.json", cfg, recipe.args.fresh)
    if recipe.args.fresh:
        (recipe.run_dir / "train_state.safetensors").unlink(missing_ok=True)
    torch.manual_seed(recipe.args.seed)  # the initial weights (a resumed run overwrites them)
    return recipe.model(cfg)


def bundle_and_report(recipe: Recipe, model, vocabs: Vocabs, info: dict, history, split, device) -> dict:
    """Save the bundle, reload it as stored, evaluate it; write metrics.json and MODEL_CARD.md."""
    out, dtype = recipe.out, recipe.args.dtype
    src, tgt = vocabs
    recipe.bundle_class(model.eval(), src, tgt, recipe.task, recipe.tokenizer, info).save_dir(
        out, dtype=dtype
    )
    # The card's numbers come from the file as bundled (float16 weights upcast on load).
    loaded = recipe.bundle_class.load(out, device)
    ev = recipe.evaluate(loaded, split, device)
    ev.metrics["size_mb"] = round((out / "model.safetensors").stat().st_size / 1e6, 2)
    ev.metrics["parameters"] = model.n_parameters()
    examples = {} if ev.examples is None else {"examples": ev.examples}
    # ``loaded.info``: the facts as stored, with what ``evaluate`` added (the Transformer's best layer)
    full = {"metrics": ev.metrics, **examples, "training": loaded.info, "history": history}
    atomic_write(out / "metrics.json", json.dumps(full, indent=2, ensure_ascii=False) + "\n")
    atomic_write(out / "MODEL_CARD.md", recipe.card(loaded, loaded.info, ev))
    return ev.metrics


def _sizes(split: Split) -> str:
    if split.test is split.valid:
        return f"{len(split.train):,} training pairs, {len(split.valid):,} held out"
    return f"{len(split.train):,} training pairs, {len(split.valid):,} validation, {len(split.test):,} test"


def _vocab_sizes(vocabs: Vocabs) -> str:
    src, tgt = vocabs
    return f"vocabulary {len(src):,}" if src is tgt else f"vocabularies {len(src):,} / {len(tgt):,}"
