"""Couplets (对联, the couplet tutorial): upper line → lower line, one character per token.

The couplet rule: the lower line has exactly the upper line's length, and punctuation of
the upper line (，。、；！？) stands at the same places in the lower line. The search
enforces it (``constraints``); the model never has to learn it.

    >>> prepare_line("  两个 黄鹂, 鸣翠柳 ").chars
    ['两', '个', '黄', '鹂', '，', '鸣', '翠', '柳']
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from models.nets.rnn_seq2seq import Seq2Seq
from models.text.metrics import alignment_accuracy, char_bleu_detail, copy_rate
from models.text.pairs import CORPORA, PairBatches, read_pairs, split_pairs
from models.text.runner import Seq2SeqRunner
from models.text.search import Constraints, Decoded
from models.text.vocab import Vocab

PUNCTUATION = "，。、；！？"
_ASCII_PUNCTUATION = str.maketrans({",": "，", ".": "。", ";": "；", "!": "！", "?": "？"})
MAX_CHARS = 32  # longer input is truncated with a notice
DATA_PATH = CORPORA / "couplets" / "tang_couplets.tsv.gz"
VALID_SIZE = 2000  # held out by a seeded shuffle (SPLIT_SEED), never trained on
SPLIT_SEED = 0
CHECK_SIZE = 200  # the first held-out pairs: a quick check that a bundle reproduces its card
EXAMPLE = ("两个黄鹂鸣翠柳", "一行白鹭上青天")


@dataclass
class Line:
    """One line as the model reads it: a list of characters, plus what changed on the way."""

    chars: list[str]
    notices: list[str] = field(default_factory=list)
    truncated: bool = False

    @property
    def text(self) -> str:
        return "".join(self.chars)

    @property
    def tokens(self) -> list[str]:
        return self.chars


def prepare_line(text: str | None, what: str = "upper line") -> Line:
    """Clean a typed line: drop whitespace, use Chinese punctuation, cut at ``MAX_CHARS``.

    Empty input raises ``ValueError``; anything else (Latin, digits, emoji) goes through and
    becomes ``<unk>`` later if the vocabulary lacks it.
    """
    raw = "" if text is None else str(text)
    if not raw.strip():
        raise ValueError(f"the {what} is empty: type Chinese characters, e.g. {EXAMPLE[0]}")
    notices = []
    kept = "".join(ch for ch in raw.strip() if not ch.isspace())
    if len(kept) < len(raw.strip()):
        notices.append(f"Spaces in the {what} were removed: one character is one token.")
    kept = kept.translate(_ASCII_PUNCTUATION)
    truncated = len(kept) > MAX_CHARS
    if truncated:
        notices.append(f"The {what} has {len(kept)} characters; only the first {MAX_CHARS} are used.")
        kept = kept[:MAX_CHARS]
    return Line(list(kept), notices, truncated)


def unknown_notice(chars: Sequence[str], vocab: Vocab, what: str = "upper line") -> str | None:
    missing = vocab.unknown(chars)
    if not missing:
        return None
    shown = "".join(missing[:12]) + ("…" if len(missing) > 12 else "")
    return (
        f"{len(missing)} character(s) of the {what} are not in the model's vocabulary "
        f"({shown}); the model reads them as <unk>."
    )


def constraints_for(lines: Sequence[Sequence[str]], vocab: Vocab, device=None) -> Constraints:
    """Exact lengths; the upper line's punctuation forced in place and banned elsewhere."""
    lengths = torch.tensor([len(x) for x in lines], dtype=torch.long)
    forced = torch.full((len(lines), int(lengths.max())), -1, dtype=torch.long)
    for i, chars in enumerate(lines):
        for j, ch in enumerate(chars):
            if ch in PUNCTUATION:
                forced[i, j] = vocab.index[ch]
    punct_ids = [vocab.index[p] for p in PUNCTUATION if p in vocab]
    banned = tuple(vocab.special_ids() + punct_ids)
    return Constraints(lengths.to(device), forced.to(device), banned)


class CoupletModel(Seq2SeqRunner):
    """A couplet model with its one character vocabulary; the search keeps the couplet rule."""

    def __init__(
        self, model: Seq2Seq, vocab: Vocab, device: torch.device | str = "cpu", batch_size: int = 256
    ):
        super().__init__(model, vocab, vocab, device, batch_size)
        self.vocab = vocab

    def constraints(self, lines: Sequence[Sequence[str]]) -> Constraints:
        return constraints_for(lines, self.vocab, self.device)

    def text(self, d: Decoded) -> str:
        return "".join(self.tokens(d))


# -- data for training ---------------------------------------------------------------------


def load_split(
    path: str | Path = DATA_PATH, n_valid: int = VALID_SIZE
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    pairs = read_pairs(path)
    bad = [p for p in pairs if len(p[0]) != len(p[1])]
    if bad:
        raise ValueError(f"{len(bad)} couplets have lines of different lengths, e.g. {bad[0]}")
    return split_pairs(pairs, n_valid, SPLIT_SEED)


def build_vocab(train: Sequence[tuple[str, str]], max_size: int = 6000) -> Vocab:
    """Characters of both lines by frequency, capped (the rest become unk); punctuation reserved."""
    return Vocab.build((u + low for u, low in train), max_size=max_size, reserved=PUNCTUATION)


class CoupletBatches(PairBatches):
    """Training batches of couplets, shuffled anew each epoch.

    With probability ``join_prob`` an example joins 2–3 training couplets with punctuation
    (上联1，上联2 → 下联1，下联2), so that the model also meets punctuation and lines longer
    than seven characters, as typed on the page.
    """

    def __init__(
        self,
        train: Sequence[tuple[str, str]],
        vocab: Vocab,
        batch_size: int = 128,
        seed: int = 0,
        join_prob: float = 0.1,
    ):
        ids = [(vocab.encode(u), vocab.encode(low)) for u, low in train]
        super().__init__(ids, bos_id=vocab.bos_id, pad_id=vocab.pad_id, batch_size=batch_size, seed=seed)
        self.vocab, self.join_prob = vocab, join_prob
        self.punct = [vocab.index[p] for p in PUNCTUATION]

    def examples(self, epoch: int) -> list[tuple[list[int], list[int]]]:
        rng = random.Random(self.seed * 1_000_003 + epoch)
        order = list(range(len(self.ids)))
        rng.shuffle(order)
        out, i = [], 0
        while i < len(order):
            k = rng.choice((2, 3)) if rng.random() < self.join_prob else 1
            group = [self.ids[j] for j in order[i : i + k]]
            i += k
            src, tgt = list(group[0][0]), list(group[0][1])
            for s, t in group[1:]:
                if len(src) + 1 + len(s) > MAX_CHARS:
                    break
                mark = rng.choice(self.punct)
                src += [mark, *s]
                tgt += [mark, *t]
            out.append((src, tgt))
        return out


# -- evaluation ----------------------------------------------------------------------------


def forced_metrics(cm: CoupletModel, pairs: Sequence[tuple[str, str]]) -> dict[str, float]:
    """Alignment (attention argmax on the own position) and loss, teacher-forcing the references."""
    forced = cm.force([list(u) for u, _ in pairs], [list(low) for _, low in pairs])
    n_chars = sum(len(d.tokens) for d in forced)
    return {
        "alignment": round(alignment_accuracy(d.weights.numpy() for d in forced), 4),
        "valid_loss": round(-sum(d.score for d in forced) / n_chars, 4),
    }


def evaluate(cm: CoupletModel, pairs: Sequence[tuple[str, str]], beam: int = 1) -> dict[str, float]:
    """Everything the model card reports, on held-out ``pairs``."""
    uppers = [u for u, _ in pairs]
    refs = [low for _, low in pairs]
    generated = cm.generate([list(u) for u in uppers], beam=beam)
    outputs = [cm.text(d) for d in generated]
    bleu = char_bleu_detail(outputs, refs)
    length_ok = np.mean([len(o) == len(u) for o, u in zip(outputs, uppers, strict=True)])
    return {
        "n_pairs": len(pairs),
        **forced_metrics(cm, pairs),
        "generation_alignment": round(alignment_accuracy(d.weights.numpy() for d in generated), 4),
        "length_correct": round(float(length_ok), 4),
        "bleu_char": round(bleu["bleu"], 2),
        "bleu_char_precisions": bleu["precisions"],
        "copy_rate": round(copy_rate(uppers, outputs, ignore=PUNCTUATION), 4),
        "copy_rate_reference": round(copy_rate(uppers, refs, ignore=PUNCTUATION), 4),
        f"alignment_first_{CHECK_SIZE}": forced_metrics(cm, pairs[:CHECK_SIZE])["alignment"],
    }
