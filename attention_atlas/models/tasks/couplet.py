"""Couplets (对联, the couplet tutorial): upper line → lower line, one character per token.

The couplet rule: the lower line has exactly the upper line's length, and punctuation of
the upper line (，。、；！？) stands at the same places in the lower line. The search
enforces it (``constraints``); the model never has to learn it.

    >>> prepare_line("  两个 黄鹂, 鸣翠柳 ").chars
    ['两', '个', '黄', '鹂', '，', '鸣', '翠', '柳']
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import torch

from attention_atlas.i18n import later, later_n
from attention_atlas.models.nets.rnn_seq2seq import Seq2Seq
from attention_atlas.models.text.metrics import alignment_accuracy, char_bleu_detail, copy_rate
from attention_atlas.models.text.pairs import (
    CORPORA,
    Batch,
    PairBatches,
    bucketed_batches,
    make_batch,
    read_pairs,
    split_pairs,
)
from attention_atlas.models.text.runner import Seq2SeqRunner
from attention_atlas.models.text.search import Constraints, Decoded
from attention_atlas.models.text.vocab import Vocab

PUNCTUATION = "，。、；！？"
_SPACES = re.compile(r"\s+")  # str.isspace's characters: re and str share CPython's table
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


UPPER, LOWER = later("upper line"), later("lower line")  # as notices and errors call the two lines


def prepare_line(text: str | None, what: str = UPPER) -> Line:
    """Clean a typed line: drop whitespace, use Chinese punctuation, cut at ``MAX_CHARS``.

    Empty input raises ``ValueError``; anything else (Latin, digits, emoji) goes through and
    becomes ``<unk>`` later if the vocabulary lacks it.
    """
    raw = "" if text is None else str(text)
    if not raw.strip():
        raise ValueError(
            later(
                "the {what} is empty: type Chinese characters, e.g. {example}", what=what, example=EXAMPLE[0]
            )
        )
    notices = []
    kept = _SPACES.sub("", raw)  # at C speed: a pasted page of 100,000 characters costs milliseconds
    if len(kept) < len(raw.strip()):
        notices.append(later("Spaces in the {what} were removed: one character is one token.", what=what))
    truncated = len(kept) > MAX_CHARS
    if truncated:
        notices.append(
            later(
                "The {what} has {n:,} characters; only the first {limit:,} are used.",
                what=what,
                n=len(kept),
                limit=MAX_CHARS,
            )
        )
    return Line(list(kept[:MAX_CHARS].translate(_ASCII_PUNCTUATION)), notices, truncated)


def unknown_notice(chars: Sequence[str], vocab: Vocab, what: str = UPPER) -> str | None:
    missing = vocab.unknown(chars)
    if not missing:
        return None
    shown = "".join(missing[:12]) + ("…" if len(missing) > 12 else "")
    return later_n(
        "{n:,} character of the {what} is not in the model's vocabulary ({chars}); the model reads it as <unk>.",
        "{n:,} characters of the {what} are not in the model's vocabulary ({chars}); the model reads them as <unk>.",
        len(missing),
        n=len(missing),
        what=what,
        chars=shown,
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


# -- lines of one to three clauses (issue 16) ---------------------------------------------
#
# The corpus holds Tang couplets of 5 or 7 characters; modern couplets run longer, often two
# or three clauses joined by "，" (腾飞上铁，锐意改革谋发展，勇当千里马). A couplet's two lines are
# parallel position by position, so pieces cut at the same place from both lines are parallel
# too, and so are clauses joined at the same places on both sides.

COMMA = "，"
# (start, end) pieces of a line, cut at the verse's caesura (5 = 2|3, 7 = 4|3 = 2|2|3): SPANS can
# stand as a clause of their own (3 to 5 characters); PIECES, also the whole line and its first
# two characters, can start a long clause
SPANS = {5: ((2, 5), (0, 4)), 7: ((0, 4), (4, 7), (2, 7))}
PIECES = {n: ((0, n), (0, 2), *spans) for n, spans in SPANS.items()}
LONG_CLAUSE = (8, 12)  # a long clause: two pieces of two couplets side by side, no mark between
MAX_LINE = 30  # the longest built line


@dataclass(frozen=True)
class ClauseMix:
    """What built lines are made of; every share is between 0 and 1."""

    multi: float = 0.5  # lines that join 2–3 clauses with a mark (the rest: one clause)
    three: float = 0.4  # of those, the share with three clauses
    span: float = 0.3  # clauses of a joined line that are a piece of one couplet (3–5 characters)
    long: float = 0.15  # clauses of two pieces side by side (8–12 characters)
    other_marks: float = 0.1  # joins by 、；。！？ instead of ，
    max_chars: int = MAX_LINE

    def scaled(self, f: float) -> ClauseMix:
        """The curriculum's early mix: fewer joins, pieces and long clauses."""
        return replace(self, multi=self.multi * f, span=self.span * f, long=self.long * f)


@dataclass(frozen=True)
class Built:
    upper: list
    lower: list
    clauses: int
    sources: tuple[int, ...]  # the couplets it was cut from (indices into the pool)


Take = Callable[[], "tuple[int, tuple[Sequence, Sequence]] | None"]


def _fit(upper, lower, room: int, rng: random.Random):
    """The whole couplet if it fits in ``room``, else a piece of it that does, else its first
    ``room`` characters (an odd corpus's long line), else None (less than 3 places left)."""
    if len(upper) <= room:
        return list(upper), list(lower)
    fits = [(a, b) for a, b in SPANS.get(len(upper), ()) if b - a <= room]
    a, b = rng.choice(fits) if fits else (0, room)
    return (list(upper[a:b]), list(lower[a:b])) if b - a >= 3 else None


def build_clause(rng: random.Random, take: Take, mix: ClauseMix, room: int):
    """One clause from the next couplet(s) of ``take``: ``(upper, lower, sources)`` or None."""
    first = take()
    if first is None:
        return None
    i, (up, low) = first
    r = rng.random()
    if r < mix.long and room >= LONG_CLAUSE[1]:
        second = take()
        if second is not None:
            j, (up2, low2) = second
            lo, hi = LONG_CLAUSE
            cuts = [(a, b) for a, b in PIECES.get(len(up), ((0, len(up)),)) if lo <= b - a + len(up2) <= hi]
            if cuts:
                a, b = rng.choice(cuts)
                return [*up[a:b], *up2], [*low[a:b], *low2], (i, j)
    elif r < mix.long + mix.span and len(up) in SPANS:
        a, b = rng.choice(SPANS[len(up)])
        if b - a <= room:
            return list(up[a:b]), list(low[a:b]), (i,)
    got = _fit(up, low, room, rng)
    return None if got is None else (*got, (i,))


def build_line(rng: random.Random, take: Take, mix: ClauseMix, marks: tuple) -> Built | None:
    """One line of 1–3 clauses; ``marks``: (the usual join, the other joins), as line elements."""
    wanted = 1 if rng.random() >= mix.multi else (3 if rng.random() < mix.three else 2)
    per_clause = mix if wanted > 1 else replace(mix, span=0.0)  # a lone piece of 3–5 is no line
    upper, lower, sources, clauses = [], [], (), 0
    for _ in range(wanted):
        room = mix.max_chars - len(upper) - (1 if upper else 0)
        got = build_clause(rng, take, per_clause, room)
        if got is None:
            break
        if upper:
            mark = marks[0] if rng.random() >= mix.other_marks else rng.choice(marks[1])
            upper, lower = [*upper, mark], [*lower, mark]
        upper, lower = upper + got[0], lower + got[1]
        sources, clauses = sources + got[2], clauses + 1
    return Built(upper, lower, clauses, sources) if clauses else None


def stream(pool: Sequence, order: Sequence[int]) -> Take:
    """``take()`` for the couplets ``pool[i]`` in ``order``, once each, then None."""
    it = iter(order)

    def take():
        i = next(it, None)
        return None if i is None else (i, pool[i])

    return take


class CoupletBatches(PairBatches):
    """Training batches of couplet lines of one to three clauses, built anew each epoch.

    Each epoch walks the training couplets once in a seeded order and builds lines from them
    (``build_line``): a share ``join_prob`` of the lines joins 2–3 clauses with "，" (now and
    then another mark); a clause is a whole couplet, a piece cut from one (the first 4, the
    last 3 or 5 characters of both lines) or two pieces side by side (8–12 characters), as
    ``mix`` says. The curriculum: an epoch comes in ``STAGES`` stages, in order, and during the
    first ``ramp_epochs`` the shares of joins, pieces and long clauses grow stage by stage from
    nearly nothing to ``mix`` (mostly whole 5/7 lines first). Batches group similar lengths
    within a stage. Deterministic per (seed, epoch): a resumed run replays the same batches.
    """

    STAGES = 4

    def __init__(
        self,
        train: Sequence[tuple[str, str]],
        vocab: Vocab,
        batch_size: int = 128,
        seed: int = 0,
        join_prob: float = 0.5,
        mix: ClauseMix | None = None,
        ramp_epochs: float = 1.0,
    ):
        ids = [(vocab.encode(u), vocab.encode(low)) for u, low in train]
        super().__init__(ids, bos_id=vocab.bos_id, pad_id=vocab.pad_id, batch_size=batch_size, seed=seed)
        self.vocab, self.join_prob, self.ramp_epochs = vocab, join_prob, ramp_epochs
        self.mix = replace(mix or ClauseMix(), multi=join_prob)
        self.marks = (vocab.index[COMMA], [vocab.index[p] for p in PUNCTUATION if p != COMMA])

    def share_at(self, epoch: int, stage: int) -> float:
        """How much of ``mix`` a stage uses: (stage + 1) / STAGES of the way through the ramp."""
        if self.ramp_epochs <= 0:
            return 1.0
        return min(1.0, (epoch + (stage + 1) / self.STAGES) / self.ramp_epochs)

    def stages(self, epoch: int) -> list[list[tuple[list[int], list[int]]]]:
        rng = random.Random(self.seed * 1_000_003 + epoch)
        order = list(range(len(self.ids)))
        rng.shuffle(order)
        out = []
        for s in range(self.STAGES):
            part = order[s * len(order) // self.STAGES : (s + 1) * len(order) // self.STAGES]
            take, mix = stream(self.ids, part), self.mix.scaled(self.share_at(epoch, s))
            lines = []
            while (line := build_line(rng, take, mix, self.marks)) is not None:
                lines.append((line.upper, line.lower))
            out.append(lines)
        return out

    def examples(self, epoch: int) -> list[tuple[list[int], list[int]]]:
        return [x for stage in self.stages(epoch) for x in stage]

    def passes(self, steps: int) -> float:
        """How many passes over the training couplets ``steps`` batches make (epochs, fractional)."""
        epoch = 0
        while True:
            n = len(self._groups(epoch))
            if steps <= n:
                return epoch + steps / n
            steps, epoch = steps - n, epoch + 1

    def _groups(self, epoch: int) -> list[tuple[list, list[int]]]:
        """The epoch's batches as (stage lines, member indices), in training order."""
        rng = random.Random(self.seed * 7_919 + epoch)
        return [
            (stage, group)
            for stage in self.stages(epoch)
            for group in bucketed_batches([len(s) for s, _ in stage], self.batch_size, rng)
        ]

    def __call__(self, epoch: int) -> list[Batch]:
        if self._cache and self._cache[0] == epoch:
            return self._cache[1]
        batches = [
            make_batch(
                [stage[i][0] for i in g], [stage[i][1] for i in g], bos_id=self.bos_id, pad_id=self.pad_id
            )
            for stage, g in self._groups(epoch)
        ]
        self._cache = (epoch, batches)
        return batches


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
