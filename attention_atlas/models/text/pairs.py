"""Parallel text for seq2seq tasks: reading pairs, a fixed held-out split, padded batches.

Shared by every seq2seq task (couplets: characters, no eos; translation: words, with eos).
A batch's target comes in two shifted copies for teacher forcing::

    target      y1 y2 y3            (add_eos: y1 y2 y3 <eos>)
    tgt_in   <bos> y1 y2            what the decoder reads
    tgt_out     y1 y2 y3            what it must predict
"""

from __future__ import annotations

import gzip
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from attention_atlas.paths import DATA

# The training corpora, each beside its SOURCE.md (licence, provenance)
# so that a clone anywhere can train and check the model cards.
CORPORA = DATA

Tensor = torch.Tensor


def read_pairs(path: str | Path) -> list[tuple[str, str]]:
    """``source<TAB>target`` lines of a UTF-8 text file (``.gz`` read transparently)."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    pairs = []
    with opener(path, "rt", encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line:
                continue
            parts = line.split("\t")
            if len(parts) < 2:
                raise ValueError(f"{path.name} line {n} has no tab between source and target")
            pairs.append((parts[0], parts[1]))
    return pairs


def split_pairs(
    pairs: Sequence[tuple[str, str]], n_held_out: int, seed: int = 0
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """``(train, held_out)``: ``n_held_out`` pairs drawn by a seeded shuffle.

    Training pairs whose source also appears in the held-out set are dropped, so a
    held-out source is never seen in training, even with another target.
    """
    order = list(range(len(pairs)))
    random.Random(seed).shuffle(order)
    held = [pairs[i] for i in order[:n_held_out]]
    held_sources = {s for s, _ in held}
    train = [pairs[i] for i in order[n_held_out:] if pairs[i][0] not in held_sources]
    return train, held


@dataclass
class Batch:
    src: Tensor  # [batch, key] token ids, padded
    src_lens: Tensor  # [batch]
    tgt_in: Tensor  # [batch, query] starts with bos
    tgt_out: Tensor  # [batch, query] padded with pad_id (ignored by the loss)
    tgt_lens: Tensor  # [batch]

    @property
    def n_target_tokens(self) -> int:
        return int(self.tgt_lens.sum())

    def to(self, device) -> Batch:
        return Batch(
            *(
                t.to(device, non_blocking=True)
                for t in (self.src, self.src_lens, self.tgt_in, self.tgt_out, self.tgt_lens)
            )
        )


def pad(seqs: Sequence[Sequence[int]], pad_id: int = 0) -> tuple[Tensor, Tensor]:
    """``(ids [batch, longest], lengths [batch])``."""
    lens = torch.tensor([len(s) for s in seqs], dtype=torch.long)
    out = torch.full((len(seqs), int(lens.max()) if len(seqs) else 0), pad_id, dtype=torch.long)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = torch.as_tensor(list(s), dtype=torch.long)
    return out, lens


def make_batch(
    src: Sequence[Sequence[int]],
    tgt: Sequence[Sequence[int]],
    *,
    bos_id: int,
    eos_id: int | None = None,
    pad_id: int = 0,
) -> Batch:
    """Pad sources and targets; ``eos_id`` given: targets end with eos."""
    outs = [[*t, eos_id] if eos_id is not None else list(t) for t in tgt]
    ins = [[bos_id, *o[:-1]] for o in outs]
    s, s_lens = pad(src, pad_id)
    t_in, t_lens = pad(ins, pad_id)
    t_out, _ = pad(outs, pad_id)
    return Batch(s, s_lens, t_in, t_out, t_lens)


def bucketed_batches(
    lengths: Sequence[int], batch_size: int, rng: random.Random, pool_batches: int = 50
) -> list[list[int]]:
    """Index lists of shuffled batches whose members have similar lengths (less padding).

    Shuffle, cut into pools of ``pool_batches`` batches, sort each pool by length, cut it
    into batches, then shuffle the batches.
    """
    order = list(range(len(lengths)))
    rng.shuffle(order)
    batches = []
    pool = batch_size * pool_batches
    for start in range(0, len(order), pool):
        chunk = sorted(order[start : start + pool], key=lambda i: lengths[i])
        batches += [chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size)]
    rng.shuffle(batches)
    return batches


class PairBatches:
    """Deterministic padded batches per epoch: ``batches(epoch)`` is the same list on every call.

    ``examples(epoch)`` gives ``(source ids, target ids)`` pairs; a task may override it to
    vary them per epoch (couplets join some lines). Batches group similar lengths.
    """

    def __init__(
        self,
        ids: Sequence[tuple[list[int], list[int]]],
        *,
        bos_id: int,
        eos_id: int | None = None,
        pad_id: int = 0,
        batch_size: int = 128,
        seed: int = 0,
    ):
        self.ids, self.batch_size, self.seed = list(ids), batch_size, seed
        self.bos_id, self.eos_id, self.pad_id = bos_id, eos_id, pad_id
        self._cache: tuple[int, list[Batch]] | None = None

    def examples(self, epoch: int) -> list[tuple[list[int], list[int]]]:
        return self.ids

    def __call__(self, epoch: int) -> list[Batch]:
        if self._cache and self._cache[0] == epoch:
            return self._cache[1]
        examples = self.examples(epoch)
        rng = random.Random(self.seed * 7_919 + epoch)
        groups = bucketed_batches([len(s) for s, _ in examples], self.batch_size, rng)
        batches = [
            make_batch(
                [examples[i][0] for i in g],
                [examples[i][1] for i in g],
                bos_id=self.bos_id,
                eos_id=self.eos_id,
                pad_id=self.pad_id,
            )
            for g in groups
        ]
        self._cache = (epoch, batches)
        return batches
