"""Quality numbers for seq2seq models: attention alignment, BLEU (with a paired bootstrap interval), copying."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np


def diagonal_hits(weights: np.ndarray) -> tuple[int, int]:
    """``(hits, rows)``: rows ``i`` of a ``[query, key]`` matrix whose argmax is key ``i``.

    Only rows with a key of their own position count (all of them for equal lengths).
    """
    w = np.asarray(weights)
    n = min(w.shape[-2], w.shape[-1])
    if n == 0:
        return 0, 0
    return int((w[:n].argmax(-1) == np.arange(n)).sum()), n


def alignment_accuracy(matrices: Iterable[np.ndarray]) -> float:
    """Share of query rows, over all matrices, whose attention peaks on their own position.

    >>> alignment_accuracy([np.eye(3), np.array([[0.2, 0.8], [0.1, 0.9]])])
    0.8
    """
    hits = rows = 0
    for m in matrices:
        h, n = diagonal_hits(m)
        hits, rows = hits + h, rows + n
    return hits / rows if rows else float("nan")


def copy_rate(sources: Sequence[str], outputs: Sequence[str], ignore: str = "") -> float:
    """Share of output characters (outside ``ignore``) that also occur in their source line."""
    copied = total = 0
    for src, out in zip(sources, outputs, strict=True):
        present = set(src)
        for ch in out:
            if ch in ignore:
                continue
            total += 1
            copied += ch in present
    return copied / total if total else 0.0


def char_bleu(hypotheses: Sequence[str], references: Sequence[str]) -> float:
    """Corpus BLEU with sacrebleu's ``zh`` tokenizer (every Chinese character is a token)."""
    return char_bleu_detail(hypotheses, references)["bleu"]


def char_bleu_detail(hypotheses: Sequence[str], references: Sequence[str]) -> dict[str, float]:
    """Char BLEU-4 plus its 1–4-gram precisions (%): couplets share few characters with any one
    reference, so the precisions say more than the (near-zero) geometric mean."""
    import sacrebleu

    result = sacrebleu.corpus_bleu(list(hypotheses), [list(references)], tokenize="zh")
    return {"bleu": float(result.score), "precisions": [round(float(p), 2) for p in result.precisions]}


# -- corpus BLEU with a bootstrap interval -------------------------------------------------


@dataclass(frozen=True)
class Interval:
    """A corpus score on every sentence, and its bootstrap ``level`` interval."""

    value: float
    low: float
    high: float


@dataclass(frozen=True)
class PairedBootstrap:
    """Each system's corpus BLEU with its interval; ``difference``: the second system minus the first
    (None for one system), its interval from the same resamples."""

    systems: list[Interval]
    difference: Interval | None
    resamples: int
    seed: int
    level: float


def reference_streams(references: Sequence[Sequence[str]]) -> list[list[str | None]]:
    """sacrebleu's reference streams from each hypothesis's list of references.

    sacrebleu wants equally many streams, so shorter lists are padded with ``None`` (a missing
    reference)::

        >>> reference_streams([["a", "b"], ["c"]])
        [['a', 'c'], ['b', None]]
    """
    n = max(len(r) for r in references)
    return [[r[k] if k < len(r) else None for r in references] for k in range(n)]


def paired_bootstrap(
    systems: Sequence[Sequence[str]],
    references: Sequence[Sequence[str]],
    *,
    resamples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    tokenize: str = "none",
) -> PairedBootstrap:
    """Corpus BLEU of one or two systems on the same sentences, with percentile intervals.

    Each resample draws as many sentences as there are, with replacement (seeded), and scores
    every system on the same draw, so the interval of the difference is a paired one.
    ``references[i]`` lists every reference of sentence ``i``.
    """
    if not 1 <= len(systems) <= 2:
        raise ValueError(f"paired_bootstrap scores one or two systems, not {len(systems)}")
    n = len(references)
    if n == 0 or any(len(s) != n for s in systems):
        raise ValueError("every system needs one hypothesis per reference list, and at least one")
    from sacrebleu.metrics.bleu import BLEU

    metric = BLEU(tokenize=tokenize, force=True)
    streams = reference_streams(references)
    stats = [np.asarray(metric._extract_corpus_statistics(list(s), streams), dtype=np.int64) for s in systems]
    rng = np.random.default_rng(seed)
    counts = np.stack([np.bincount(rng.integers(0, n, n), minlength=n) for _ in range(resamples)])

    def interval(whole: float, draws: np.ndarray) -> Interval:
        low, high = np.percentile(draws, [50 * (1 - level), 50 * (1 + level)])
        return Interval(float(whole), float(low), float(high))

    whole = [_score(metric, st.sum(0)) for st in stats]
    draws = [np.array([_score(metric, row) for row in counts @ st]) for st in stats]
    diff = interval(whole[1] - whole[0], draws[1] - draws[0]) if len(stats) == 2 else None
    return PairedBootstrap(
        [interval(w, d) for w, d in zip(whole, draws, strict=True)], diff, resamples, seed, level
    )


def _score(metric, totals: np.ndarray) -> float:
    """BLEU from summed sentence statistics (sacrebleu's own formula and smoothing)."""
    return float(metric._compute_score_from_stats([int(x) for x in totals]).score)
