"""A validation split of couplet lines of one to three clauses, and the report on it (issue 16).

Built only from held-out couplets (``load_split``'s second list, never trained on), with a
fixed seed, by the same clause builder as the training lines (``models.tasks.couplet``):

- every held-out couplet as a single-clause line of 5 or 7 characters;
- ``LONG_LINES`` single clauses of 8–12 characters (two pieces side by side);
- ``MULTI_LINES`` lines of two and of three clauses joined by "，", 8–30 characters, each
  clause a whole couplet, a piece of one (3–5 characters) or a long clause.

(A tiny held-out set gets at most as many lines of each built kind as it has couplets.)

``clause_report(runner, lines)`` force-decodes the reference lower lines and reports the
diagonal alignment (the share of lower-line characters whose attention peaks on their own
position) by line length and by clause count, then generates (greedy) and reports how often
the lower line has the upper line's length and its punctuation at the same places.

    lines = validation_lines(load_split()[1])
    clause_report(CoupletModel(model, vocab), lines)["by_clauses"]["2"]["alignment"]
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, replace

from attention_atlas.models.tasks.couplet import COMMA, PUNCTUATION, ClauseMix, build_clause, build_line
from attention_atlas.models.text.metrics import diagonal_hits

SEED = 16  # the split's own seed (the held-out couplets are load_split's)
LONG_LINES = 300
MULTI_LINES = 800  # of two clauses, and as many of three
MIX = ClauseMix(multi=1.0, span=0.35, long=0.25, other_marks=0.0)  # the joined lines, all by "，"
LONG_ONLY = ClauseMix(multi=0.0, span=0.0, long=1.0)
BUCKETS = ((5, 5), (7, 7), (8, 12), (13, 18), (19, 24), (25, 30))


@dataclass(frozen=True)
class ClauseLine:
    upper: str
    lower: str
    clauses: int
    sources: tuple[int, ...]  # the held-out couplets it was cut from (indices)


def bucket(n: int) -> str:
    """The length bucket of an ``n``-character line: "5", "7", "8–12", …"""
    for lo, hi in BUCKETS:
        if lo <= n <= hi:
            return f"{lo}" if lo == hi else f"{lo}–{hi}"
    return f"{n}"


def validation_lines(held_out: Sequence[tuple[str, str]], seed: int = SEED) -> list[ClauseLine]:
    """The split: single 5/7 lines, long single clauses, then 2- and 3-clause lines."""
    pool = [(list(u), list(low)) for u, low in held_out]
    rng = random.Random(seed)

    def take():
        i = rng.randrange(len(pool))
        return i, pool[i]

    def long_clause() -> ClauseLine | None:
        up, low, src = build_clause(rng, take, LONG_ONLY, LONG_ONLY.max_chars)
        return ClauseLine("".join(up), "".join(low), 1, src) if len(up) >= 8 else None

    def joined(k: int) -> ClauseLine | None:
        line = build_line(rng, take, replace(MIX, three=float(k == 3)), (COMMA, ()))
        ok = line.clauses == k and len(line.upper) >= 8
        return ClauseLine("".join(line.upper), "".join(line.lower), k, line.sources) if ok else None

    lines = [ClauseLine(u, low, 1, (i,)) for i, (u, low) in enumerate(held_out)]
    lines += _collect(long_clause, min(LONG_LINES, len(pool)))
    for k in (2, 3):
        lines += _collect(lambda k=k: joined(k), min(MULTI_LINES, len(pool)))
    return lines


def _collect(make, n: int, tries: int = 50) -> list[ClauseLine]:
    """Up to ``n`` lines from ``make()`` (None: try again), at most ``tries`` attempts a line."""
    out = []
    for _ in range(n * tries):
        if len(out) == n:
            break
        line = make()
        if line is not None:
            out.append(line)
    return out


def clause_report(runner, lines: Sequence[ClauseLine], beam: int = 1) -> dict:
    """Alignment by length bucket and clause count (force-decoded), and generation's rule rates.

    ``runner``: a ``CoupletModel`` (or the Transformer's, whose ``layer`` is the one measured).
    """
    forced = runner.force([list(x.upper) for x in lines], [list(x.lower) for x in lines])
    hits = [diagonal_hits(d.weights.numpy()) for d in forced]
    outputs = [runner.text(d) for d in runner.generate([list(x.upper) for x in lines], beam=beam)]

    def share(keep) -> dict:
        h = [hr for hr, x in zip(hits, lines, strict=True) if keep(x)]
        rows = sum(r for _, r in h)
        return {"lines": len(h), "alignment": round(sum(a for a, _ in h) / rows, 4) if rows else None}

    return {
        "n_lines": len(lines),
        "alignment_single_5_7": share(lambda x: x.clauses == 1 and len(x.upper) in (5, 7))["alignment"],
        "alignment_multi": share(lambda x: x.clauses > 1)["alignment"],
        "by_length": {b: share(lambda x, b=b: bucket(len(x.upper)) == b) for b in _buckets(lines)},
        "by_clauses": {str(k): share(lambda x, k=k: x.clauses == k) for k in (1, 2, 3)},
        "length_correct": _rate(len(o) == len(x.upper) for o, x in zip(outputs, lines, strict=True)),
        "punctuation_correct": _rate(_same_marks(x.upper, o) for o, x in zip(outputs, lines, strict=True)),
    }


def _buckets(lines: Sequence[ClauseLine]) -> list[str]:
    present = {bucket(len(x.upper)) for x in lines}
    return [b for b in (bucket(lo) for lo, _ in BUCKETS) if b in present]


def _same_marks(upper: str, lower: str) -> bool:
    """Punctuation at the upper line's places, the same marks, and nowhere else."""
    if len(upper) != len(lower):
        return False
    pairs = zip(upper, lower, strict=True)
    return all(a == b for a, b in pairs if a in PUNCTUATION or b in PUNCTUATION)


def _rate(flags) -> float:
    flags = list(flags)
    return round(sum(flags) / len(flags), 4) if flags else float("nan")
