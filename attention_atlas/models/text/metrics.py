"""Quality numbers for seq2seq models: attention alignment, BLEU, copying."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

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
