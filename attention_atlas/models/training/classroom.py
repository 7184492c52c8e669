"""The classroom run: the couplet seq2seq trained from scratch in front of a class, step by step.

The "Watch attention learn" page and ``atlas train couplet-rnn --preset classroom
--max-seconds S --out DIR`` both train through this module, with one configuration (the
``classroom`` preset): the couplet tutorial's BiLSTM + LSTM network (``couplet_rnn_recipe``'s
config and loss), small enough that the attention of a fixed probe couplet turns diagonal in
about a minute on one CPU core.

- ``couplet_data``: the project's split (``models.tasks.couplet.load_split``: no training
  line's upper line is among the held-out couplets), 5/7-character lines, one vocabulary and
  batches, built once per process and shared by every run.
- ``ClassroomTrainer``: one model, one batch at a time (``StepTrainer``, the loop's ``Trainer``
  stepped by hand), measured every ``measure_every`` steps: the probe couplet force-decoded (its
  heatmap) and the alignment on held-out couplets.
- ``ClassroomRun``: one visitor's run in a background thread: one model, or additive and dot
  racing (the one behind in training seconds steps next), with pause, resume, stop, a time
  budget and a liveness check (the page stops it when the visitor leaves).
- at most ``ATLAS_MAX_TRAININGS`` runs train at once in a process (2): the training lane of
  ``serve.lanes``; the rest wait in line and know their place.

Seconds are training seconds: wall-clock time spent in one model's training steps, measurements
excluded (a run's ``clock_seconds`` counts both models of a race and the measurements).
"""

from __future__ import annotations

import functools
import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
import torch

from attention_atlas.models.storage.bundle import Seq2SeqBundle
from attention_atlas.models.tasks.couplet import (
    DATA_PATH,
    EXAMPLE,
    VALID_SIZE,
    CoupletModel,
    build_vocab,
    forced_metrics,
    load_split,
)
from attention_atlas.models.text.metrics import alignment_accuracy
from attention_atlas.models.text.pairs import PairBatches
from attention_atlas.models.text.vocab import Vocab
from attention_atlas.models.training.couplet_rnn_recipe import CoupletRNN, CoupletTrainArgs
from attention_atlas.models.training.loop import TrainConfig, Trainer
from attention_atlas.serve import jobs
from attention_atlas.serve.lanes import Lane, trainings

MAX_SECONDS = 3600.0  # the longest time budget the command line accepts
ATTENTIONS = ("additive", "dot")


@dataclass(frozen=True)
class Preset:
    """One classroom configuration: the network's sizes, the data, the optimiser, what is measured."""

    embed: int = 64
    hidden: int = 64
    vocab_size: int = 3000  # the most frequent characters (≈ 97 % of the text); the rest read as unk
    lengths: tuple[int, ...] = (5, 7)  # plain lines of these lengths (no joined clauses)
    batch_size: int = 256
    lr: float = 5e-3
    seed: int = 0  # initial weights and data order: seed 000, as the bundled couplet models
    threads: int = 1  # torch CPU threads of one run (a trainer must not take every core)
    measure_every: int = 25  # steps between measurements (probe heatmap, held-out alignment)
    watch_pairs: int = 200  # held-out couplets measured during a run (the bench measures all)
    probe: tuple[str, str] = EXAMPLE  # the couplet whose attention is drawn


PRESETS = {"classroom": Preset()}


def preset(name: str) -> Preset:
    """The preset called ``name``, or a ``ValueError`` naming the ones there are."""
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}: choose {', '.join(sorted(PRESETS))}")
    return PRESETS[name]


# -- data ----------------------------------------------------------------------------------


@dataclass
class CoupletData:
    train: list[tuple[str, str]]
    held_out: list[tuple[str, str]]  # no training line's upper line is among them
    vocab: Vocab
    batches: PairBatches  # deterministic per epoch, shared by every run on this data

    def watch(self, n: int) -> list[tuple[str, str]]:
        return self.held_out[:n]


@functools.lru_cache(maxsize=4)
def couplet_data(
    path: str = str(DATA_PATH),
    vocab_size: int = 3000,
    lengths: tuple[int, ...] = (5, 7),
    batch_size: int = 256,
    seed: int = 0,
    valid_size: int = VALID_SIZE,
) -> CoupletData:
    """The split, vocabulary and batches, once per process and arguments."""
    train, held_out = load_split(path, valid_size)
    train = [p for p in train if len(p[0]) in lengths]
    if not train:
        raise ValueError(f"{Path(path).name} has no training couplets of {lengths} characters")
    vocab = build_vocab(train, vocab_size)
    ids = [(vocab.encode(u), vocab.encode(low)) for u, low in train]
    batches = PairBatches(ids, bos_id=vocab.bos_id, pad_id=vocab.pad_id, batch_size=batch_size, seed=seed)
    return CoupletData(train, held_out, vocab, batches)


def data_for(p: Preset, path: str | Path = DATA_PATH, valid_size: int = VALID_SIZE) -> CoupletData:
    return couplet_data(str(path), p.vocab_size, tuple(p.lengths), p.batch_size, p.seed, valid_size)


# -- one model -----------------------------------------------------------------------------


class StepTrainer(Trainer):
    """The loop's ``Trainer`` one batch at a time: ``fit`` runs to the end, a classroom run
    pauses, measures and redraws in between. Nothing is written to disk."""

    def advance(self) -> float:
        """Train on the next batch; returns its loss."""
        r = self.result
        batches = self.epoch_batches(r.epoch)
        if self.batch_in_epoch >= len(batches):
            r.epoch, self.batch_in_epoch = r.epoch + 1, 0
            batches = self.epoch_batches(r.epoch)
        self.model.train()
        t0 = time.perf_counter()
        loss, n_tokens = self._step(batches[self.batch_in_epoch])
        r.seconds += time.perf_counter() - t0
        r.tokens, r.step, self.batch_in_epoch = r.tokens + n_tokens, r.step + 1, self.batch_in_epoch + 1
        return loss


@dataclass(frozen=True)
class Point:
    """One measurement of a run."""

    step: int
    seconds: float  # training seconds so far
    train_loss: float | None  # mean loss of the batches since the last point (None: none yet)
    valid_loss: float  # on the watched held-out couplets, force-decoded
    alignment: float  # share of their characters whose attention peaks on their own position
    probe_alignment: float


_BUILD = threading.Lock()  # torch.manual_seed is process-wide: one model is built at a time


class ClassroomTrainer:
    """One couplet model of ``attention`` (``additive`` or ``dot``) trained by ``preset``."""

    def __init__(self, attention: str, p: Preset, data: CoupletData, device: torch.device | str = "cpu"):
        self.attention, self.preset, self.data = attention, p, data
        self.device = torch.device(device)
        recipe = CoupletRNN(
            CoupletTrainArgs(attention=attention, embed=p.embed, hidden=p.hidden, seed=p.seed)
        )
        with _BUILD:
            torch.manual_seed(p.seed)
            model = recipe.model(recipe.config((data.vocab, data.vocab)))
        cfg = TrainConfig(max_steps=10**9, lr=p.lr, seed=p.seed)
        self.trainer = StepTrainer(
            model,
            cfg,
            Path("."),
            self.device,
            data.batches,
            recipe.loss(),
            log=lambda _: None,
            progress=False,
        )
        self.model = self.trainer.model
        self.runner = CoupletModel(self.model, data.vocab, self.device)
        self.history: list[Point] = []
        self.probe_weights: np.ndarray | None = None  # [lower line, upper line] at the last point
        self._losses: list[float] = []

    @property
    def step(self) -> int:
        return self.trainer.result.step

    @property
    def seconds(self) -> float:
        return self.trainer.result.seconds

    def advance(self) -> None:
        self._losses.append(self.trainer.advance())
        if self.step % self.preset.measure_every == 0:
            self.measure()

    def probe(self) -> np.ndarray:
        """The probe couplet's attention, force-decoded: [lower line, upper line]."""
        upper, lower = self.preset.probe
        self.model.eval()
        with torch.no_grad():
            return self.runner.force([list(upper)], [list(lower)])[0].weights.numpy()

    def measure(self, pairs: Sequence[tuple[str, str]] | None = None) -> Point:
        """The probe's attention and the alignment on ``pairs`` (default: the watched held-out ones)."""
        probe = self.probe()
        with torch.no_grad():
            held = forced_metrics(self.runner, pairs or self.data.watch(self.preset.watch_pairs))
        loss = round(float(np.mean(self._losses)), 4) if self._losses else None
        self._losses = []
        point = Point(
            self.step,
            round(self.seconds, 2),
            loss,
            held["valid_loss"],
            held["alignment"],
            round(alignment_accuracy([probe]), 4),
        )
        self.probe_weights = probe
        self.history.append(point)
        return point

    def train_for(self, seconds: float, stop: Callable[[], bool] = lambda: False) -> None:
        """Train until ``seconds`` training seconds in all (or ``stop()``), then measure."""
        while self.seconds < seconds and not stop():
            self.advance()
        if not self.history or self.history[-1].step != self.step:
            self.measure()

    def bundle(self, info: dict | None = None) -> Seq2SeqBundle:
        facts = {"model_id": f"classroom-{self.attention}", "preset": asdict(self.preset), **(info or {})}
        return Seq2SeqBundle(self.model.eval(), self.data.vocab, self.data.vocab, "couplet", "char", facts)


def untrained_probe(attention: str, p: Preset) -> np.ndarray:
    """The probe's attention at step 0: the first frame of every run of ``p`` (the same seed, so
    the same initial weights), before anything is learned."""
    return ClassroomTrainer(attention, p, data_for(p)).probe()


# -- one visitor's run -----------------------------------------------------------------------

WAITING, LOADING, TRAINING, PAUSED, DONE, STOPPED, FAILED = (
    "waiting",
    "loading",
    "training",
    "paused",
    "done",
    "stopped",
    "failed",
)
_STATES = {jobs.STARTING: LOADING, jobs.RUNNING: TRAINING, jobs.NEW: WAITING}  # the job's words → the page's


@dataclass
class Snapshot:
    """What a page draws: a consistent copy of a run's state."""

    state: str
    position: int | None  # place in line while waiting
    max_seconds: float
    histories: dict[str, list[Point]] = field(default_factory=dict)
    probes: dict[str, np.ndarray] = field(default_factory=dict)
    message: str = ""
    clock_seconds: float = 0.0  # wall-clock time of training and measuring so far (a race: both models)

    @property
    def live(self) -> bool:
        return self.state in (WAITING, LOADING, TRAINING, PAUSED)


class ClassroomRun:
    """A background training of one or two models (a race), owned by whoever started it: a
    ``serve.jobs.Job`` in the process's training lane (``serve.lanes.trainings()``, or ``pool``).

    ``alive()`` is asked about once a second; when it answers False the run stops (the page
    passes one that knows whether its visitor is still there).
    """

    def __init__(
        self,
        attentions: Sequence[str] = ("additive",),
        p: Preset = PRESETS["classroom"],
        max_seconds: float = 120.0,
        data: Callable[[], CoupletData] | None = None,
        alive: Callable[[], bool] = lambda: True,
        pool: Lane | None = None,
        device: torch.device | str = "cpu",
    ):
        bad = [a for a in attentions if a not in ATTENTIONS]
        if bad or not attentions:
            raise ValueError(f"attention must be among {ATTENTIONS}, got {list(attentions)}")
        self.attentions, self.preset, self.max_seconds = tuple(attentions), p, float(max_seconds)
        self._data = data or (lambda: data_for(p))
        self.device = device
        self.trainers: dict[str, ClassroomTrainer] = {}
        self.clock_seconds = 0.0  # wall-clock time inside the job's steps: no waiting, loading or pause
        self._lock = threading.Lock()
        self.job = jobs.Job(
            self._step, name="classroom-run", setup=self._load, lane=pool or trainings(), alive=alive
        )

    # -- control (any thread) -------------------------------------------------------------
    def start(self) -> ClassroomRun:
        self.job.start()
        return self

    def pause(self) -> None:
        self.job.pause()

    def resume(self) -> None:
        self.job.resume()

    def stop(self, wait: float | None = None) -> None:
        self.job.stop(wait)

    @property
    def paused(self) -> bool:
        return self.job.paused

    @property
    def thread(self):
        return self.job.thread

    def snapshot(self) -> Snapshot:
        state = self.job.status
        with self._lock:
            return Snapshot(
                _STATES.get(state, state),
                self.job.position() if state == jobs.WAITING else None,
                self.max_seconds,
                {a: list(t.history) for a, t in self.trainers.items()},
                {a: t.probe_weights for a, t in self.trainers.items() if t.probe_weights is not None},
                self.job.message,
                self.clock_seconds,
            )

    # -- the job's parts -------------------------------------------------------------------
    def _load(self) -> None:
        torch.set_num_threads(self.preset.threads)  # this thread's torch threads only
        data = self._data()
        trainers = {a: ClassroomTrainer(a, self.preset, data, self.device) for a in self.attentions}
        for t in trainers.values():
            t.measure()  # the untrained attention: the first frame of the film
        with self._lock:
            self.trainers = trainers

    def _step(self) -> str | None:
        t0 = time.perf_counter()
        try:
            return self._advance()
        finally:
            self.clock_seconds += time.perf_counter() - t0

    def _advance(self) -> str | None:
        behind = min(self.trainers.values(), key=lambda t: t.seconds)
        if behind.seconds >= self.max_seconds:
            for t in self.trainers.values():
                if t.history[-1].step != t.step:
                    t.measure()
            return f"{self.max_seconds:g} s of training done"
        with self._lock:
            behind.advance()
        return None


# -- the command line ------------------------------------------------------------------------


def train_preset(
    name: str,
    attention: str,
    max_seconds: float,
    out: str | Path,
    seed: int | None = None,
    threads: int | None = None,
    device: str | None = None,
    data: str | Path = DATA_PATH,
    log: Callable[[str], None] = print,
) -> dict:
    """``atlas train couplet-rnn --preset NAME --max-seconds S --out DIR``: train one model as the
    page does, then write ``DIR/model.safetensors`` (what ``extract --checkpoint`` reads, with
    ``config.json`` and ``vocab.json`` beside it) and ``DIR/metrics.json`` (the measurements)."""
    from attention_atlas.models.device import pick_device

    p = preset(name)
    check_seconds(max_seconds)
    if attention not in ATTENTIONS:
        raise ValueError(f"--attention must be one of {list(ATTENTIONS)}, got {attention!r}")
    p = replace(p, seed=p.seed if seed is None else seed, threads=p.threads if threads is None else threads)
    if p.threads < 1:
        raise ValueError(f"--threads must be at least 1, got {p.threads}")
    torch.set_num_threads(p.threads)
    dev = pick_device(device)
    t0 = time.perf_counter()
    trainer = ClassroomTrainer(attention, p, data_for(p, data), dev)
    trainer.measure()
    log(json.dumps(asdict(trainer.history[-1])))
    while trainer.seconds < max_seconds:
        trainer.train_for(min(max_seconds, trainer.seconds + 15))
        log(json.dumps(asdict(trainer.history[-1])))
    final = trainer.measure(trainer.data.held_out)  # every held-out couplet
    info = {
        "command": f"train couplet-rnn --preset {name} --max-seconds {max_seconds:g}",
        "steps": trainer.step,
    }
    out = Path(out)
    trainer.bundle(info).save_dir(out)
    report = {
        "preset": name,
        "attention": attention,
        "steps": trainer.step,
        "training_seconds": round(trainer.seconds, 1),
        "wall_seconds": round(time.perf_counter() - t0, 1),
        "held_out_pairs": len(trainer.data.held_out),
        "alignment": final.alignment,
        "valid_loss": final.valid_loss,
        "probe_alignment": final.probe_alignment,
        "history": [asdict(x) for x in trainer.history],
    }
    (out / "metrics.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return {k: v for k, v in report.items() if k != "history"}


def check_seconds(seconds: float) -> None:
    if not (0 < seconds <= MAX_SECONDS):  # also refuses nan
        raise ValueError(f"--max-seconds must be more than 0 and at most {MAX_SECONDS:g}, got {seconds:g}")
