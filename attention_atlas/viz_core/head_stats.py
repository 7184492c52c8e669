"""Head statistics, defined once: their names, what each row of a head adds, how the rows combine
into the head's numbers, and the rule that names its pattern. numpy only (``models`` imports it).

Every statistic is the mean, over a head's query rows, of a per-row quantity Σₖ w[q, k] · f(q, k),
with f in one of four forms (``Statistic``): the surprise −log₂ w (the row's entropy in bits), a
function of the query and key positions, a function of the key alone (its position, whether it is
a special token), or the one key at ``query + offset`` (averaged over the rows where that key
exists). Three paths compute them, each from its own kind of weights, and all finish here:

- a record's full ``[layers, heads, query, key]`` weights: ``viz_core.stats.head_table``;
- a long input, a block of query rows at a time: ``viz_core.blockwise`` adds ``row_sums`` block
  by block;
- a corpus's padded torch batches: ``models.corpus.stats`` sums the same forms over the real rows
  in torch (the forms tell it how) and hands the sums to ``finish``.

``finish`` turns row sums into a head's numbers and its pattern, so a new statistic is one more
entry in ``STATISTICS``: its column then appears in the page tables, the CSV downloads, the
corpus store and its Parquet export. A corpus store's key holds the statistics' names, so a store
made with other columns is rebuilt rather than misread (``models.corpus.extract.STATS_VERSION``,
in the key too, is for a definition that changes under the same name).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from attention_atlas.i18n import N_, _


@dataclass(frozen=True)
class Statistic:
    """One number per head: the mean over query rows of Σₖ w[q, k] · f(q, k). Exactly one form of f."""

    name: str  # the column, everywhere: page tables, CSV, the corpus store, Parquet
    label: str  # for people: axis titles, hovers, the tables' column help (English; ``label_of`` translates)
    surprise: bool = False  # f = −log₂ w[q, k] (0 where w is 0): the row's entropy in bits
    pair: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None  # f(query positions, key positions)
    key: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None  # f(key positions, special flags)
    offset: int | None = None  # f = 1 at key = query + offset: over the rows where that key exists

    def __post_init__(self):
        forms = [self.surprise, self.pair is not None, self.key is not None, self.offset is not None]
        if sum(forms) != 1:
            raise ValueError(f"statistic {self.name!r} needs exactly one form of f, not {sum(forms)}")


def distance(q: np.ndarray, k: np.ndarray) -> np.ndarray:
    """|query − key|, in tokens: the mean distance's f (named: ``viz_core.blockwise`` sums it its own way)."""
    return np.abs(q - k)


STATISTICS = (
    Statistic("entropy", N_("entropy (bits)"), surprise=True),
    Statistic("mean_distance", N_("mean distance (tokens)"), pair=distance),
    Statistic("special_share", N_("share on special tokens"), key=lambda pos, special: special),
    Statistic("previous_share", N_("share on the previous token"), offset=-1),
    Statistic("diagonal_share", N_("share on itself"), offset=0),
    Statistic("first_share", N_("share on the first token"), key=lambda pos, special: pos == 0),
)
NAMES = tuple(s.name for s in STATISTICS)  # the statistics' columns, in this order everywhere
LABELS = {s.name: s.label for s in STATISTICS}
COLUMNS = ("layer", "head", *NAMES, "pattern")  # a head table's columns

# The pattern: the named key a head gives at least SHARE of its attention to (the largest share;
# equal shares: the first named here), else "broad" when its entropy is at least BROAD of the most
# its keys allow (log₂ keys), else "mixed".
SHARE = 0.5
BROAD = 0.75
NAMED = {
    N_("previous token"): "previous_share",
    N_("diagonal"): "diagonal_share",
    N_("first token / sink"): "first_share",
}
PATTERNS = (*NAMED, N_("broad"), N_("mixed"))  # stored and exported in English; ``label_of`` translates


def label_of(name: str) -> str:
    """A statistic's label (``"entropy"`` → "entropy (bits)") or a pattern's name, in the language in
    force: the name people read. Tables, CSV files and corpus stores keep the English names."""
    return _(LABELS.get(name, name))


# -- per-row reductions (numpy: the full-matrix and block-wise paths) ---------------------------------


def row_entropy(weights: np.ndarray) -> np.ndarray:
    """Entropy in bits of each row (last axis): 0 for one-hot, log₂(n) for uniform; in the weights'
    precision (float64 for anything but float32)."""
    w = np.asarray(weights)
    w = w if w.dtype == np.float32 else w.astype(np.float64)
    logs = np.zeros_like(w)
    np.log2(w, out=logs, where=w > 0)
    logs *= w
    return -logs.sum(-1)


def row_sums(w: np.ndarray, first_row: int = 0, special=None) -> np.ndarray:
    """``[..., len(STATISTICS)]``: each statistic's per-row quantity summed over the rows of ``w``
    ``[..., rows, keys]``, which are query rows ``first_row``, ``first_row + 1``, … of the head.
    Sums over keys in the weights' precision (float32: numpy's pairwise sums), over rows in float64.
    ``special``: one flag per key (none special when None)."""
    w = np.asarray(w)
    w = w if w.dtype == np.float32 else w.astype(np.float64)
    rows, keys = w.shape[-2:]
    q, k = np.arange(first_row, first_row + rows), np.arange(keys)
    flags = np.zeros(keys, dtype=bool) if special is None else np.asarray(special, dtype=bool)
    out = np.zeros((*w.shape[:-2], len(STATISTICS)))
    for i, s in enumerate(STATISTICS):
        if s.key is not None:  # only the keys where f is not 0 (a few special tokens, the first)
            f = np.broadcast_to(s.key(k, flags), (keys,)).astype(w.dtype)
            at = np.flatnonzero(f)
            out[..., i] = (w[..., at] * f[at]).sum(-1).astype(np.float64).sum(-1)
        elif s.surprise:
            out[..., i] = row_entropy(w).astype(np.float64).sum(-1)
        elif s.pair is not None:  # positions as floats of the weights' type: no integer temporaries
            f = s.pair(q.astype(w.dtype)[:, None], k.astype(w.dtype)[None, :])
            f = f * w if f.shape != w.shape else np.multiply(f, w, out=f)
            out[..., i] = f.sum(-1).astype(np.float64).sum(-1)
        elif s.offset is not None:
            at = q + s.offset
            ok = (at >= 0) & (at < keys)
            local = np.flatnonzero(ok)
            out[..., i] = w[..., local, at[ok]].sum(-1, dtype=np.float64)
    return out


def row_counts(n_queries, n_keys) -> np.ndarray:
    """``[..., len(STATISTICS)]``: how many query rows each statistic averages over: every row, but
    for an offset, only the rows whose key ``query + offset`` exists."""
    nq, nk = np.asarray(n_queries, dtype=np.int64), np.asarray(n_keys, dtype=np.int64)
    counts = []
    for s in STATISTICS:
        if s.offset is None:
            counts.append(nq + 0 * nk)
        else:  # rows q with 0 ≤ q < n_queries and 0 ≤ q + offset < n_keys
            counts.append(np.clip(np.minimum(nq, nk - s.offset) - max(0, -s.offset), 0, None))
    return np.stack(counts, -1)


# -- from row sums to a head's numbers ------------------------------------------------------------


def pattern_codes(values: dict[str, np.ndarray], n_keys) -> np.ndarray:
    """The pattern of each head as its index in ``PATTERNS``, from its statistics (``NAMED``'s
    shares and the entropy) and its number of keys."""
    shares = np.stack([np.asarray(values[c], dtype=np.float64) for c in NAMED.values()], -1)
    which = shares.argmax(-1)  # the first of equal maxima
    best = np.take_along_axis(shares, which[..., None], -1)[..., 0]
    spread = np.asarray(values["entropy"]) / np.maximum(np.log2(np.asarray(n_keys, dtype=np.float64)), 1e-9)
    return np.where(best >= SHARE, which, np.where(spread >= BROAD, len(NAMED), len(NAMED) + 1))


def finish(sums: np.ndarray, n_queries, n_keys) -> dict[str, np.ndarray]:
    """A head's numbers from its row sums ``[..., len(STATISTICS)]`` (``row_sums`` over all of its
    query rows): each statistic (the mean over the rows it counts; 0 where it counts none) and the
    pattern's name. ``n_queries`` and ``n_keys`` broadcast against ``sums[..., 0]``."""
    means = np.asarray(sums, dtype=np.float64) / np.maximum(row_counts(n_queries, n_keys), 1)
    values = {name: means[..., i] for i, name in enumerate(NAMES)}
    values["pattern"] = np.asarray(PATTERNS, dtype=object)[pattern_codes(values, n_keys)]
    return values


def of_weights(w: np.ndarray, special=None) -> dict[str, np.ndarray]:
    """Every statistic and the pattern of full ``[..., query, key]`` weights (``finish``)."""
    q, k = np.shape(w)[-2:]
    return finish(row_sums(w, 0, special), q, k)


def head_row(values: dict[str, np.ndarray], index=()) -> dict:
    """One head's statistics and pattern as plain Python values (a table row, without layer and head)."""
    return {
        name: (str if name == "pattern" else float)(np.asarray(values[name], dtype=object)[index])
        for name in (*NAMES, "pattern")
    }
