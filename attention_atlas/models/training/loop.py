"""One training loop for every family trained here (couplet RNNs, couplet Transformer, translation).

The task supplies three functions; the loop does the rest (device, mixed precision on
CUDA, gradient clipping, progress bar with loss and tokens/s, periodic evaluation,
early stop, resumable checkpoints)::

    trainer = Trainer(model, TrainConfig(max_steps=3000), run_dir, device,
                      epoch_batches=lambda epoch: [...Batch...],  # deterministic per epoch
                      loss_fn=lambda model, batch: (loss, n_target_tokens),
                      evaluate=lambda model: {"alignment": 0.93},
                      should_stop=lambda metrics: metrics["alignment"] >= 0.95)
    result = trainer.fit()  # resumes from run_dir/train_state.safetensors when present

The training state (weights, Adam moments, step, position in the epoch, history) is one
safetensors file plus JSON metadata, written atomically every ``save_every`` steps, so a
run that is cut off loses at most that many steps.
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from attention_atlas.models.device import autocast
from attention_atlas.models.storage.checkpoint import (
    load_checkpoint,
    load_unique_state,
    save_checkpoint,
    unique_state,
)

STATE_FILE = "train_state.safetensors"
STATE_FORMAT = "attention-atlas/train-state"


@dataclass
class TrainConfig:
    max_steps: int = 3000
    lr: float = 1e-3
    clip_norm: float = 1.0  # RNNs now and then meet a batch with a huge gradient; clipping tames it
    seed: int = 0
    eval_every: int = 100
    save_every: int = 100
    min_steps: int = 0  # no early stop before this many steps
    weight_decay: float = 0.0
    warmup_steps: int = 0  # linear learning-rate warm-up from lr/warmup_steps to lr (Transformers)
    decay_from: int = 0  # from this step, lr falls linearly to lr × final_lr_ratio at max_steps (0: never)
    final_lr_ratio: float = 0.1

    def lr_at(self, step: int) -> float:
        """The learning rate of 0-based ``step``: warm-up, plateau, optional linear decay."""
        lr = self.lr
        if self.warmup_steps:
            lr *= min(1.0, (step + 1) / self.warmup_steps)
        if self.decay_from and step >= self.decay_from and self.max_steps > self.decay_from:
            done = min(1.0, (step - self.decay_from) / (self.max_steps - self.decay_from))
            lr *= 1 - (1 - self.final_lr_ratio) * done
        return lr


@dataclass
class TrainResult:
    step: int
    epoch: int
    seconds: float  # time spent in training steps (evaluation excluded), over all resumes
    tokens: int  # target tokens seen
    history: list[dict[str, Any]] = field(default_factory=list)
    stopped: str = ""  # why the loop ended

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds if self.seconds else 0.0


class Trainer:
    def __init__(
        self,
        model: nn.Module,
        cfg: TrainConfig,
        run_dir: str | Path,
        device: torch.device,
        epoch_batches: Callable[[int], list],
        loss_fn: Callable[[nn.Module, Any], tuple[torch.Tensor, int]],
        evaluate: Callable[[nn.Module], dict[str, float]] | None = None,
        should_stop: Callable[[dict[str, float]], bool] | None = None,
        log: Callable[[str], None] | None = None,
        progress: bool = True,
    ):
        self.model, self.cfg, self.device = model.to(device), cfg, device
        self.run_dir = Path(run_dir)
        self.epoch_batches, self.loss_fn = epoch_batches, loss_fn
        self.evaluate, self.should_stop = evaluate, should_stop
        self.log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
        self.progress = progress
        self.optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        self.scaler = torch.amp.GradScaler("cuda", enabled=device.type == "cuda")
        self.result = TrainResult(step=0, epoch=0, seconds=0.0, tokens=0)
        self.batch_in_epoch = 0

    # -- checkpoints -------------------------------------------------------------------
    @property
    def state_path(self) -> Path:
        return self.run_dir / STATE_FILE

    def save_state(self) -> Path:
        tensors = {f"model.{k}": v for k, v in unique_state(self.model).items()}
        optim_tensors, optim_meta = _flatten_optimizer(self.optimizer.state_dict())
        tensors.update(optim_tensors)
        tensors["rng.torch"] = torch.get_rng_state()
        r = self.result
        meta = {
            "format": STATE_FORMAT,
            "train_config": asdict(self.cfg),
            "step": r.step,
            "epoch": r.epoch,
            "batch_in_epoch": self.batch_in_epoch,
            "seconds": r.seconds,
            "tokens": r.tokens,
            "history": r.history,
            "optimizer": optim_meta,
            "scaler": self.scaler.state_dict(),
        }
        return save_checkpoint(self.state_path, tensors, meta)

    def load_state(self) -> bool:
        if not self.state_path.is_file():
            return False
        tensors, meta = load_checkpoint(self.state_path, upcast=False)
        if meta["format"] != STATE_FORMAT:
            raise ValueError(f"{self.state_path} is not a training state ({meta['format']})")
        model_sd = {k[len("model.") :]: v for k, v in tensors.items() if k.startswith("model.")}
        load_unique_state(self.model, model_sd)
        self.optimizer.load_state_dict(_unflatten_optimizer(tensors, meta["optimizer"]))
        if meta.get("scaler"):
            self.scaler.load_state_dict(meta["scaler"])
        torch.set_rng_state(tensors["rng.torch"])
        self.result = TrainResult(
            step=meta["step"],
            epoch=meta["epoch"],
            seconds=meta["seconds"],
            tokens=meta["tokens"],
            history=meta["history"],
        )
        self.batch_in_epoch = meta["batch_in_epoch"]
        return True

    # -- the loop ----------------------------------------------------------------------
    def fit(self, resume: bool = True) -> TrainResult:
        cfg = self.cfg
        if resume and self.load_state():
            self.log(f"resumed from {self.state_path} at step {self.result.step} (epoch {self.result.epoch})")
        else:
            torch.manual_seed(cfg.seed)
        r = self.result  # after loading: load_state replaces it
        if r.step >= cfg.max_steps:
            r.stopped = f"max_steps {cfg.max_steps} reached"  # earlier; this call only re-bundles
            return r
        bar = _progress(cfg.max_steps, r.step, self.progress)
        smooth_loss = None
        self.model.train()
        try:
            while r.step < cfg.max_steps:
                batches = self.epoch_batches(r.epoch)
                while self.batch_in_epoch < len(batches) and r.step < cfg.max_steps:
                    t0 = time.perf_counter()
                    loss, n_tokens = self._step(batches[self.batch_in_epoch])
                    r.seconds += time.perf_counter() - t0
                    r.tokens += n_tokens
                    r.step += 1
                    self.batch_in_epoch += 1
                    smooth_loss = loss if smooth_loss is None else 0.98 * smooth_loss + 0.02 * loss
                    bar.update(1)
                    bar.set_postfix(loss=f"{smooth_loss:.3f}", tok_s=f"{r.tokens_per_s:,.0f}", refresh=False)
                    if not math.isfinite(loss):
                        raise FloatingPointError(f"loss became {loss} at step {r.step}")
                    stop = self._maybe_evaluate(smooth_loss)
                    if r.step % cfg.save_every == 0 or stop or r.step == cfg.max_steps:
                        self.save_state()
                    if stop:
                        r.stopped = f"target reached at step {r.step}"
                        return r
                if self.batch_in_epoch >= len(batches):
                    r.epoch += 1
                    self.batch_in_epoch = 0
            r.stopped = f"max_steps {cfg.max_steps} reached"
            return r
        finally:
            bar.close()
            self.model.eval()

    def _step(self, batch) -> tuple[float, int]:
        batch = batch.to(self.device)
        with autocast(self.device):
            loss, n_tokens = self.loss_fn(self.model, batch)
        self.optimizer.zero_grad(set_to_none=True)
        # Set every step: a resumed optimizer would otherwise keep the lr it was saved with.
        for group in self.optimizer.param_groups:
            group["lr"] = self.cfg.lr_at(self.result.step)
        self.scaler.scale(loss).backward()
        if self.cfg.clip_norm:
            self.scaler.unscale_(self.optimizer)
            nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.clip_norm)
        self.scaler.step(self.optimizer)
        self.scaler.update()
        return float(loss.detach()), int(n_tokens)

    def _maybe_evaluate(self, train_loss: float) -> bool:
        r = self.result
        if not self.evaluate or r.step % self.cfg.eval_every:
            return False
        self.model.eval()
        with torch.no_grad():
            metrics = self.evaluate(self.model)
        self.model.train()
        row = {
            "step": r.step,
            "train_loss": round(train_loss, 4),
            "seconds": round(r.seconds, 1),
            "tokens_per_s": round(r.tokens_per_s, 1),
            **metrics,
        }
        r.history.append(row)
        self.log(json.dumps(row, ensure_ascii=False))
        return bool(self.should_stop and r.step >= self.cfg.min_steps and self.should_stop(metrics))


def masked_cross_entropy(
    logits: torch.Tensor, target: torch.Tensor, pad_id: int = 0
) -> tuple[torch.Tensor, int]:
    """Mean token loss over non-padding targets; ``logits`` ``[batch, query, vocab]``."""
    n = int((target != pad_id).sum())
    loss = nn.functional.cross_entropy(
        logits.float().reshape(-1, logits.shape[-1]), target.reshape(-1), ignore_index=pad_id
    )
    return loss, n


def loss_fn(model: nn.Module, batch, teacher_forcing: float = 1.0) -> tuple[torch.Tensor, int]:
    # Only the RNN decoder can feed back its own guesses; the Transformer always sees the gold prefix.
    extra = {"teacher_forcing": teacher_forcing} if teacher_forcing < 1 else {}
    logits, _ = model(batch.src, batch.src_lens, batch.tgt_in, **extra)
    return masked_cross_entropy(logits, batch.tgt_out, pad_id=0)


def make_loss(teacher_forcing: float = 1.0):
    """``loss_fn`` with a teacher-forcing ratio, for the trainer."""
    return lambda model, batch: loss_fn(model, batch, teacher_forcing)


def _progress(total: int, initial: int, enabled: bool):
    from tqdm import tqdm

    # In a log file (nohup) a redraw every 10 s is plenty.
    interactive = sys.stderr.isatty()
    return tqdm(
        total=total,
        initial=initial,
        disable=not enabled,
        unit="step",
        mininterval=0.5 if interactive else 10,
        file=sys.stderr,
        dynamic_ncols=interactive,
    )


def _flatten_optimizer(sd: dict) -> tuple[dict[str, torch.Tensor], dict]:
    tensors, state_meta = {}, {}
    for idx, st in sd["state"].items():
        for key, value in st.items():
            if torch.is_tensor(value):
                tensors[f"optim.{idx}.{key}"] = value
            else:
                state_meta.setdefault(str(idx), {})[key] = value
    return tensors, {"param_groups": sd["param_groups"], "state": state_meta}


def _unflatten_optimizer(tensors: dict[str, torch.Tensor], meta: dict) -> dict:
    state: dict[int, dict] = {}
    for name, value in tensors.items():
        if name.startswith("optim."):
            _, idx, key = name.split(".", 2)
            state.setdefault(int(idx), {})[key] = value
    for idx, extra in meta["state"].items():
        state.setdefault(int(idx), {}).update(extra)
    return {"state": state, "param_groups": meta["param_groups"]}
