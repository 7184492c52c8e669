"""Attention weights computed from captured queries and keys, a block of query rows at a time.

A long input keeps no attention weights: the adapter captures each layer's queries and keys
(``QKCapture``, float32) and any head's weights are ``softmax(q kᵀ · scaling + mask)`` computed
here on demand, ``block`` query rows at a time, so no n × n tensor of every head ever exists.
For a causal model a row block only multiplies the keys up to its last row (the rest is 0).

What a layer's attention does beyond ``softmax(q·k · scaling)`` is its ``Variant`` (found by the
capture from the model's own attention module and what transformers' attention interface hands
it): a sliding window (each query reads its last ``window`` keys), logit softcapping
(``cap · tanh(s / cap)``), a learned sink logit per head (one more logit in the softmax's
denominator that takes mass and no key: a row then sums to 1 − the sink's mass, ``sink_mass``) and
ALiBi (a bias per head and key added to the scores, as the model computed it). The default is plain.

Reductions for the views, each block-wise:

- ``reduce_head``: a head pooled to at most ``cells × cells`` cells with the token range of each
  cell. The model view's thumbnails and the head overview use **max** pooling, so a sharp
  diagonal or a single strong key stays visible however far the view is reduced (a mean would
  dilute a one-token line 1/width). ``how="mean"`` is there too. No weights are written out:
  ``pooled_rows`` pools a block's logits and exps, and divides the pooled cells by each row's Z.
- ``window``: a rectangle at full resolution (≤ 512 × 512), each row normalised over all keys.
- ``layer_summary`` / ``head_summary`` / ``head_stats``: every head's 32 × 32
  max-pooled thumbnail and the head statistics of ``viz_core.head_stats`` (the same numbers as
  ``viz_core.stats.head_table``'s, to float32 rounding). The query heads that share a key head go
  together (up to ``TOGETHER``, ``block`` rows of each: their logits and exps), and no weights
  are written out: a max-pooled cell is (the max exp over its keys) / each row's denominator,
  maxed over its rows; the entropy comes from the logits (−Σ p ln p = ln Z · Σp − Σ p·s), the
  mean distance from a matrix-vector product (``_KeyGroup``).

A mask is drawn only over the columns some row of a block masks, never over the whole block.

numpy only (no torch): this module sits in viz_core.
"""

from __future__ import annotations

import functools
import itertools
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from attention_atlas.viz_core import head_stats as hs

BLOCK = 256  # query rows per block: 256 × 8,192 float32 scores = 8 MB
MAX_WINDOW = 512  # a zoom window's side, in tokens


@dataclass(frozen=True, eq=False)
class Variant:
    """One layer's attention beyond softmax(q·k · scaling); the defaults mean plain."""

    window: int | None = None  # each query reads keys (query − window, query]
    softcap: float | None = None  # scores become softcap · tanh(scores / softcap) (before any mask)
    sinks: np.ndarray | None = None  # [heads] a learned logit per head, in the softmax's denominator
    alibi: np.ndarray | None = None  # [heads, keys] ALiBi: each key's bias, added to the scaled scores

    @property
    def plain(self) -> bool:
        return all(f is None for f in (self.window, self.softcap, self.sinks, self.alibi))

    def head(self, head: int) -> dict:
        """``rows``' keywords for query head ``head``."""
        return {
            "window": self.window,
            "softcap": self.softcap,
            "sink": None if self.sinks is None else float(self.sinks[head]),
            "alibi": None if self.alibi is None else self.alibi[head],
        }

    def describe(self) -> str:
        """In words: "a window of 16 keys, logits softcapped at 50.0, sink logits" ("plain": none)."""
        parts = [
            f"a window of {self.window} keys" if self.window else "",
            f"logits softcapped at {self.softcap}" if self.softcap else "",
        ]
        parts += ["sink logits" if self.sinks is not None else "", "ALiBi" if self.alibi is not None else ""]
        return ", ".join(p for p in parts if p) or "plain"


PLAIN = Variant()


@dataclass(frozen=True)
class QKCapture:
    """Every layer's queries and keys for one text, as the model computed them.

    ``queries[layer]`` is ``[heads, tokens, head_dim]`` and ``keys[layer]`` is
    ``[key_heads, tokens, head_dim]`` (grouped-query attention: fewer key heads, each shared by
    ``heads // key_heads`` query heads), float32, after any rotary embedding.
    """

    model_id: str
    queries: list[np.ndarray]
    keys: list[np.ndarray]
    scaling: list[float]  # per layer: the factor on q·k (1/√head_dim unless the model says)
    causal: bool
    tokens: list[str]
    special: list[bool]
    notices: list[str] = field(default_factory=list)
    variants: list[Variant] | None = None  # per layer; None: every layer plain (captures made before)

    def __post_init__(self):
        if len(self.queries) != len(self.keys) or len(self.queries) != len(self.scaling):
            raise ValueError(
                f"{len(self.queries)} layers of queries, {len(self.keys)} of keys, {len(self.scaling)} scalings"
            )
        if self.variants is not None and len(self.variants) != len(self.queries):
            raise ValueError(f"{len(self.variants)} layer variants for {len(self.queries)} layers")
        n = len(self.tokens)
        for layer, (q, k) in enumerate(zip(self.queries, self.keys, strict=True)):
            if q.ndim != 3 or k.ndim != 3 or q.shape[1] != n or k.shape[1] != n or q.shape[2] != k.shape[2]:
                raise ValueError(f"layer {layer}: queries {q.shape} and keys {k.shape} do not fit {n} tokens")
            if q.shape[0] % k.shape[0]:
                raise ValueError(
                    f"layer {layer}: {q.shape[0]} query heads do not share {k.shape[0]} key heads"
                )

    @property
    def n_layers(self) -> int:
        return len(self.queries)

    @property
    def n_heads(self) -> int:
        return self.queries[0].shape[0]

    @property
    def n_tokens(self) -> int:
        return len(self.tokens)

    def variant(self, layer: int) -> Variant:
        """What layer ``layer``'s attention does beyond softmax(q·k · scaling)."""
        return PLAIN if self.variants is None else self.variants[layer]

    @property
    def has_sinks(self) -> bool:
        """Whether any layer's rows leave mass to a sink (they then sum to less than 1)."""
        return any(self.variant(layer).sinks is not None for layer in range(self.n_layers))

    @property
    def nbytes(self) -> int:
        return sum(q.nbytes + k.nbytes for q, k in zip(self.queries, self.keys, strict=True))

    @property
    def mapped(self) -> bool:
        """Whether the queries and keys live in files mapped into memory (``np.memmap``), not in RAM."""
        return any(isinstance(a, np.memmap) for a in self.queries + self.keys)

    def head_qk(self, layer: int, head: int) -> tuple[np.ndarray, np.ndarray]:
        """One head's queries and keys ``[tokens, head_dim]`` (its shared key head for GQA)."""
        if not 0 <= layer < self.n_layers:
            raise IndexError(f"layer {layer} is outside 0–{self.n_layers - 1}")
        if not 0 <= head < self.n_heads:
            raise IndexError(f"head {head} is outside 0–{self.n_heads - 1}")
        q, k = self.queries[layer], self.keys[layer]
        return q[head], k[head // (q.shape[0] // k.shape[0])]


def row_blocks(n: int, block: int = BLOCK) -> Iterator[tuple[int, int]]:
    for start in range(0, n, block):
        yield start, min(start + block, n)


def rows(q: np.ndarray, k: np.ndarray, scaling: float, causal: bool, start: int, stop: int, **variant) -> np.ndarray:
    """``narrow_rows`` over every key, ``[stop - start, keys]`` float32: the keys no row of the
    block reads weigh 0."""
    first, scores = narrow_rows(q, k, scaling, causal, start, stop, **variant)
    n_keys, width = k.shape[0], first + scores.shape[1]
    if first == 0 and width == n_keys:
        return scores
    out = np.zeros((stop - start, n_keys), dtype=np.float32)
    out[:, first:width] = scores
    return out


def narrow_rows(
    q: np.ndarray,
    k: np.ndarray,
    scaling: float,
    causal: bool,
    start: int,
    stop: int,
    window: int | None = None,
    softcap: float | None = None,
    sink: float | None = None,
    alibi: np.ndarray | None = None,
) -> tuple[int, np.ndarray]:
    """Weights of query rows ``start:stop`` over the keys they may read, ``(first key, weights
    [rows, keys first:first + width])`` float32 (every other key weighs 0): the softmax of
    ``_logits``; a ``sink`` logit joins the denominator (the row then sums to 1 − its mass)."""
    first, scores = _logits(q, k, scaling, causal, start, stop, window, softcap, alibi)
    top = _top(scores.max(-1, keepdims=True), sink)
    scores /= _exp_rows(scores, top, sink)
    return first, scores


def pooled_rows(
    q: np.ndarray,
    k: np.ndarray,
    scaling: float,
    causal: bool,
    start: int,
    stop: int,
    edges: np.ndarray,
    how: str = "max",
    window: int | None = None,
    softcap: float | None = None,
    sink: float | None = None,
    alibi: np.ndarray | None = None,
) -> np.ndarray:
    """``narrow_rows`` pooled into the key cells between ``edges``, ``[rows, cells]`` (cells the
    rows do not read hold 0), with no weights written out: a cell's max weight is exp(its max logit
    − the row's top) / Z, exp and dividing by Z being increasing; its mean is Σexp / Z / its width."""
    first, scores = _logits(q, k, scaling, causal, start, stop, window, softcap, alibi)
    lo, hi, starts = _cells(edges, first, first + scores.shape[1])
    peaks = np.maximum.reduceat(scores, starts, axis=1) if how == "max" else scores
    top = _top(peaks.max(-1, keepdims=True), sink)
    z = _exp_rows(scores, top, sink)
    out = np.zeros((stop - start, len(edges) - 1), dtype=np.float32)
    if how == "max":
        out[:, lo:hi] = np.exp(peaks - top) / z
    else:
        out[:, lo:hi] = np.add.reduceat(scores, starts, axis=1) / z / np.diff(edges[lo : hi + 1]).astype(np.float32)
    return out


def _logits(q, k, scaling, causal, start, stop, window, softcap, alibi) -> tuple[int, np.ndarray]:
    """``(first key, [rows, keys first:width] logits)`` of query rows ``start:stop``: ``q·k ·
    scaling`` (softcapped, plus each key's ``alibi`` bias), −inf where a query may not read a key
    (after it when ``causal``, ``window`` or more before it)."""
    first, width = _span(k.shape[0], causal, window, start, stop)
    scores = q[start:stop] @ k[first:width].T
    scores *= np.float32(scaling)
    if softcap:
        scores = np.tanh(scores / np.float32(softcap)) * np.float32(softcap)
    if alibi is not None:
        scores += np.asarray(alibi, dtype=np.float32)[None, first:width]
    _mask(scores, first, width, start, stop, causal, window)
    return first, scores


def _top(row_max: np.ndarray, sink: float | None) -> np.ndarray:
    """What a row's logits are shifted by before exp: their max, or the sink's logit where higher."""
    return row_max if sink is None else np.maximum(row_max, np.float32(sink))


def _exp_rows(scores: np.ndarray, top: np.ndarray, sink: float | None) -> np.ndarray:
    """``exp(scores − top)`` in place; each row's softmax denominator ``[rows, 1]`` (the sink's
    exp in it)."""
    scores -= top
    np.exp(scores, out=scores)
    denominator = scores.sum(-1, keepdims=True)
    if sink is not None:
        denominator += np.exp(np.float32(sink) - top)
    return denominator


def _cells(edges: np.ndarray, first: int, width: int) -> tuple[int, int, np.ndarray]:
    """The cells ``lo:hi`` between ``edges`` that keys ``first:width`` fall in, and where each
    starts among those keys."""
    lo = int(np.searchsorted(edges, first, side="right")) - 1
    hi = int(np.searchsorted(edges, width, side="left"))
    return lo, hi, np.maximum(edges[lo:hi], first) - first


def _span(n_keys: int, causal: bool, window: int | None, start: int, stop: int) -> tuple[int, int]:
    """Keys ``[first, width)`` that query rows ``start:stop`` may read; every other key weighs 0
    (causal: the keys after the last row; a window: the keys before the first row's window)."""
    width = min(stop, n_keys) if causal else n_keys
    first = max(0, start - window + 1) if window else 0
    return first, width


def _masks(first: int, width: int, start: int, stop: int, causal: bool, window) -> list:
    """Where query rows ``start:stop`` may not read keys ``first:width``, as ``(columns, mask)``
    pairs over just the columns some row masks: the keys after the block's first row (causal) and
    those ``window`` or more before its last row; ``mask`` is ``[rows, len(columns)]``."""
    queries, out = np.arange(start, stop)[:, None], []
    if causal and max(start + 1, first) < width:
        keys = np.arange(max(start + 1, first), width)
        out.append((slice(keys[0] - first, width - first), keys[None, :] > queries))
    if window and first < min(width, stop - window):
        keys = np.arange(first, min(width, stop - window))
        out.append((slice(0, len(keys)), keys[None, :] <= queries - window))
    return out


def _mask(
    scores: np.ndarray, first: int, width: int, start: int, stop: int, causal: bool, window, value=-np.inf
) -> None:
    """``value`` where a query may not read a key: after it (causal), or ``window`` or more before
    it. ``scores`` is ``[..., rows, keys first:width]``."""
    for columns, masked in _masks(first, width, start, stop, causal, window):
        np.copyto(scores[..., columns], value, where=masked)


def head_rows(cap: QKCapture, layer: int, head: int, start: int, stop: int) -> np.ndarray:
    """``rows`` of one head of ``cap``: query rows ``start:stop`` with the layer's variant."""
    q, k = cap.head_qk(layer, head)
    return rows(q, k, cap.scaling[layer], cap.causal, start, stop, **cap.variant(layer).head(head))


def sink_mass(cap: QKCapture, layer: int, head: int, start: int = 0, stop: int | None = None) -> np.ndarray:
    """The mass the head's sink logit takes from each query row ``start:stop`` (0 without a sink)."""
    stop = cap.n_tokens if stop is None else stop
    if cap.variant(layer).sinks is None:
        return np.zeros(stop - start, dtype=np.float32)
    return 1 - head_rows(cap, layer, head, start, stop).sum(-1, dtype=np.float64).astype(np.float32)


def head_blocks(
    cap: QKCapture, layer: int, head: int, block: int = BLOCK
) -> Iterator[tuple[int, np.ndarray]]:
    """``(first row, weights of a row block)`` over one head, top to bottom."""
    for start, stop in row_blocks(cap.n_tokens, block):
        yield start, head_rows(cap, layer, head, start, stop)


def head_weights(cap: QKCapture, layer: int, head: int, block: int = BLOCK) -> np.ndarray:
    """One head's full ``[query, key]`` weights (n² floats: for files and short inputs)."""
    n = cap.n_tokens
    out = np.empty((n, n), dtype=np.float32)
    for start, part in head_blocks(cap, layer, head, block):
        out[start : start + len(part)] = part
    return out


# -- reductions -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reduced:
    """A head pooled to cells: ``values[i, j]`` covers queries ``row_edges[i]:row_edges[i+1]``
    and keys ``col_edges[j]:col_edges[j+1]`` (one token per cell when not ``reduced``)."""

    values: np.ndarray  # [rows, cols] float32
    row_edges: np.ndarray  # [rows + 1] int
    col_edges: np.ndarray  # [cols + 1] int
    how: str  # "max" or "mean"

    @property
    def reduced(self) -> bool:
        return self.values.shape != (
            self.row_edges[-1] - self.row_edges[0],
            self.col_edges[-1] - self.col_edges[0],
        )

    def ranges(self, axis: int = 0) -> list[tuple[int, int]]:
        """The token range ``(first, last)`` (inclusive) of each row (axis 0) or column (axis 1)."""
        edges = self.row_edges if axis == 0 else self.col_edges
        return [(int(a), int(b) - 1) for a, b in itertools.pairwise(edges)]


def cell_edges(n: int, cells: int) -> np.ndarray:
    """``min(n, cells) + 1`` increasing edges from 0 to n (cells of near-equal width)."""
    return np.linspace(0, n, min(n, cells) + 1).round().astype(np.int64)


def _pool(block: np.ndarray, edges: np.ndarray, how: str, axis: int) -> np.ndarray:
    """``block`` pooled along ``axis`` (0 or 1) into the cells between ``edges``: their max or mean.
    Rows in cells of one width (32,768 tokens in 1,024 cells) are a reshape and one reduction,
    nine times faster than ``reduceat`` (which stays faster along a row)."""
    widths = np.diff(edges)
    if axis == 0 and len(widths) and (widths == widths[0]).all():
        runs = block.reshape(len(widths), int(widths[0]), -1)
        pooled = runs.max(1) if how == "max" else runs.sum(1)
    else:
        ufunc = np.maximum if how == "max" else np.add
        pooled = ufunc.reduceat(block, edges[:-1] - edges[0], axis=axis)
    if how == "max":
        return pooled
    widths = widths.astype(np.float32)
    return pooled / (widths[:, None] if axis == 0 else widths[None, :])


class _Pooler:
    """Collects row blocks of one head into ``cells × cells`` pooled cells."""

    def __init__(self, n: int, cells: int, how: str):
        if how not in ("max", "mean"):
            raise ValueError(f"pooling is 'max' or 'mean', not {how!r}")
        self.how, self.rows, self.cols = how, cell_edges(n, cells), cell_edges(n, cells)
        self.values = np.zeros((len(self.rows) - 1, len(self.cols) - 1), dtype=np.float32)
        self.pending, self.first_cell = [], 0

    def add(self, start: int, cells: np.ndarray) -> None:
        """Feed the next row block (rows arrive in order), its keys already pooled ``[rows, cells]``
        (``pooled_rows``); full row cells are pooled and dropped."""
        self.pending.append(cells)
        stop = start + len(cells)
        last = int(np.searchsorted(self.rows, stop, side="right")) - 1  # cells complete up to here
        if last > self.first_cell:
            stacked = np.concatenate(self.pending)
            lo = self.rows[self.first_cell]
            done = self.rows[last] - lo
            edges = self.rows[self.first_cell : last + 1]
            self.values[self.first_cell : last] = _pool(stacked[:done], edges, self.how, axis=0)
            self.pending = [stacked[done:]] if done < len(stacked) else []
            self.first_cell = last

    def result(self) -> Reduced:
        return Reduced(self.values, self.rows, self.cols, self.how)


def reduce_head(
    cap: QKCapture, layer: int, head: int, cells: int = 1024, how: str = "max", block: int = BLOCK
) -> Reduced:
    """One head pooled to at most ``cells × cells`` (the overview; a thumbnail with small ``cells``)."""
    pooler = _Pooler(cap.n_tokens, cells, how)
    q, k = cap.head_qk(layer, head)
    variant = cap.variant(layer).head(head)
    for start, stop in row_blocks(cap.n_tokens, block):
        part = pooled_rows(q, k, cap.scaling[layer], cap.causal, start, stop, pooler.cols, how, **variant)
        pooler.add(start, part)
    return pooler.result()


def window(
    cap: QKCapture, layer: int, head: int, queries: tuple[int, int], keys: tuple[int, int]
) -> np.ndarray:
    """Full-resolution weights of queries ``[a, b)`` × keys ``[c, d)``, at most 512 × 512."""
    (a, b), (c, d) = queries, keys
    n = cap.n_tokens
    if not (0 <= a < b <= n and 0 <= c < d <= n):
        raise ValueError(f"a window must lie inside 0–{n} on both axes, not queries {a}–{b}, keys {c}–{d}")
    if b - a > MAX_WINDOW or d - c > MAX_WINDOW:
        raise ValueError(f"a window is at most {MAX_WINDOW} × {MAX_WINDOW} tokens, not {b - a} × {d - c}")
    return head_rows(cap, layer, head, a, b)[:, c:d]


# -- every head's thumbnail and statistics (viz_core.head_stats's definitions, block-wise) -----------

TOGETHER = 4  # query heads of one key head summarised together (memory: 2 × 4 row blocks)
SUMMARY_BLOCK = 128  # rows of each head a block: 15 % faster than 256 at 8,192 tokens (the block stays in cache)
MASKED = np.float32(-1e30)  # a masked logit in the summaries: exp gives 0, and 0 · MASKED is 0 (not nan)
BASE_E, BASE_2 = (np.exp, 1.0), (np.exp2, float(np.log2(np.e)))  # an exponential, and the unit of its logits


@dataclass
class _Block:
    """Rows ``start:stop`` of the query heads of a ``_KeyGroup`` over the keys ``first:width`` they read."""

    start: int
    stop: int
    first: int
    width: int
    s: np.ndarray  # [heads, rows, keys] logits less each row's top (masked: MASKED less it), × unit
    # (the compiled pass: e, written over them)
    e: np.ndarray  # e^(s / unit): the exponential of the logits in its base
    parts: tuple  # [heads, rows] Σe over the keys before the block's rows, among them, after them
    z: np.ndarray  # [heads, rows] float64: each row's softmax denominator (Σe, and the sink's exp)
    unit: float  # the logits' unit: log₂ e for base 2, 1 for natural logits (``_exponential``)
    es: np.ndarray | None = None  # [heads, rows] Σe·s where the compiled pass summed it (s is e then)
    distance: np.ndarray | None = None  # [heads, rows] Σe·|query − key|, likewise

    @property
    def before(self) -> int:
        """Keys read before the block's first row."""
        return self.start - self.first

    @property
    def total(self) -> np.ndarray:
        """``[heads, rows]`` Σe over every key."""
        return sum(self.parts)


class _KeyGroup:
    """The max-pooled thumbnails and ``head_stats.row_sums`` of the query heads ``heads`` (a slice)
    that share one key head, a block of rows of every head at a time: one stacked matmul with the
    key head's keys, transposed once (a BLAS call a head over ``block`` rows: the very logits of
    ``rows``). Only the logits ``s`` (less each row's top) and ``e = exp(s)`` of a block exist,
    never its weights ``e / Z``: a thumbnail cell's max weight is the max over its rows of (the max
    of ``e`` over its keys) / Z, and each row's statistics are sums over ``e`` divided by its Z
    (``_row_sum``)."""

    def __init__(self, cap: QKCapture, layer: int, heads: slice, thumb: int):
        q, k = cap.queries[layer], cap.keys[layer]
        self.q, self.n, self.causal = q[heads], cap.n_tokens, cap.causal
        self.kt = np.ascontiguousarray(k[heads.start // (q.shape[0] // k.shape[0])].T)  # [dim, keys]
        self.fused = _fused_kernel()  # one compiled pass for exp and the row sums, where numba is
        # logits in the exponential's base: natural ones × unit (the compiled pass's is 2)
        self.exp, self.unit = BASE_2 if self.fused else _exponential()
        self.scaling, variant = cap.scaling[layer], cap.variant(layer)
        self.window, self.softcap = variant.window, variant.softcap
        self.sinks, self.alibi = (
            None if a is None else np.float32(np.asarray(a)[heads] * self.unit)
            for a in (variant.sinks, variant.alibi)
        )
        special, keys = np.asarray(cap.special, dtype=bool), np.arange(cap.n_tokens)
        self.f = [  # each key statistic's f over every key, and the keys where it is not 0
            None if s.key is None else np.broadcast_to(s.key(keys, special), keys.shape).astype(np.float32)
            for s in hs.STATISTICS
        ]
        self.nonzero = [None if f is None else np.flatnonzero(f) for f in self.f]
        self.ones = np.ones(cap.n_tokens, dtype=np.float32)
        self.edges = cell_edges(self.n, thumb)
        self.thumbs = np.zeros((len(self.q), len(self.edges) - 1, len(self.edges) - 1), dtype=np.float32)
        self.sums = np.zeros((len(self.q), len(hs.STATISTICS)))
        self.space = None  # while running: room for a block's logits and exps

    def run(self, block: int) -> _KeyGroup:
        """Every row, ``block`` rows of each head at a time (two ``[heads, block, keys]`` arrays:
        the logits and their exps; one with the compiled pass)."""
        arrays = 1 if self.fused else 2  # the compiled pass writes the exps over the logits
        self.space = np.empty(arrays * len(self.q) * min(block, self.n) * self.n, dtype=np.float32)
        for start, stop in row_blocks(self.n, block):
            self.add(start, stop)
        self.space = None
        return self

    def add(self, start: int, stop: int) -> None:
        """Query rows ``start:stop`` of every head."""
        first, width = _span(self.n, self.causal, self.window, start, stop)
        size = len(self.q) * (stop - start) * (width - first)
        s = self._logits(start, stop, first, width, self.space[:size])
        block, top, peaks = (self._fused if self.fused else self._passes)(start, stop, first, width, s)
        z = block.z
        if self.sinks is not None:
            z += self.exp(self.sinks[:, None] - top)
        self._pool(block, self.exp(peaks - top[..., None]))
        sums = np.stack([self._row_sum(i, stat, block) for i, stat in enumerate(hs.STATISTICS)], -1)
        self.sums += (sums / z[..., None]).sum(1)

    def _row_sum(self, i: int, stat: hs.Statistic, block: _Block) -> np.ndarray:
        """``[heads, rows]``: each row's Σₖ e·f of statistic ``i`` (its row sum times Z)."""
        if stat.key is None:
            return _row_sum(stat, block)
        keys = self.nonzero[i]  # only the keys where f is not 0 (a few special tokens, the first)
        keys = keys[(keys >= block.first) & (keys < block.width)]
        return (block.e[..., keys - block.first] * self.f[i][keys]).sum(-1)

    def _logits(self, start: int, stop: int, first: int, width: int, out: np.ndarray) -> np.ndarray:
        """``[heads, rows, keys first:width]`` logits in ``out`` (the masked ones too)."""
        heads, rows = len(self.q), stop - start
        factor = self.scaling / self.softcap if self.softcap else self.scaling * self.unit  # on q: no pass
        queries = (self.q[:, start:stop] * np.float32(factor)).reshape(heads * rows, -1)
        s = np.matmul(queries, self.kt[:, first:width], out=out.reshape(heads * rows, -1))  # one product:
        s = s.reshape(heads, rows, width - first)  # the heads share their keys (4 % faster than a stack)
        if self.softcap:
            np.tanh(s, out=s)
            s *= np.float32(self.softcap * self.unit)
        if self.alibi is not None:
            s += self.alibi[:, None, first:width]
        return s

    def _passes(self, start: int, stop: int, first: int, width: int, s: np.ndarray) -> tuple:
        """The block by numpy's passes, ``(_Block, tops, peaks)``: the masked logits set to ``MASKED``;
        each row's max logit in each thumbnail column it reads ``[heads, rows, cells]`` and its top
        ``[heads, rows]`` (the max of those, or the sink's logit where higher), taken off ``s``; the
        exps beside it; Σe in three parts."""
        _mask(s, first, width, start, stop, self.causal, self.window, MASKED)
        peaks = np.maximum.reduceat(s, _cells(self.edges, first, width)[2], axis=-1)
        top = peaks.max(-1)
        if self.sinks is not None:
            top = np.maximum(top, self.sinks[:, None])
        s -= top[..., None]
        e = self.exp(s, out=self.space[s.size : 2 * s.size].reshape(s.shape))
        parts = _parts(e, start - first, stop - first, self.ones)
        block = _Block(start, stop, first, width, s, e, parts, sum(parts).astype(np.float64), self.unit)
        return block, top, peaks

    def _fused(self, start: int, stop: int, first: int, width: int, s: np.ndarray) -> tuple:
        """``_passes``' results by the compiled pass (``viz_core.fused``): ``e`` written over ``s``;
        Σe, Σe·s and the distances' sum from it (``parts``: Σe alone)."""
        heads, rows, _ = s.shape
        _, _, starts = _cells(self.edges, first, width)
        peaks = np.empty((heads, rows, len(starts)), dtype=np.float32)
        top, total, ent, dist = np.empty((heads, rows), np.float32), *(np.empty((heads, rows)) for _ in range(3))
        sinks = np.full(heads, MASKED) if self.sinks is None else self.sinks
        cells = np.append(starts, width - first)
        self.fused(s, start, first, self.causal, self.window or 0, cells, sinks, peaks, top, total, ent, dist)
        block = _Block(start, stop, first, width, s, s, (total,), total.copy(), self.unit, ent, dist)
        return block, top, peaks

    def _pool(self, block: _Block, peaks: np.ndarray) -> None:
        """Each thumbnail cell's max weight so far, with the block's rows, from each row's max
        ``e`` in each column it reads (``peaks``, the exp of ``_logits``' column maxima less the top:
        exp is increasing, and so is dividing by Z)."""
        lo, hi, _ = _cells(self.edges, block.first, block.width)
        pooled = peaks / block.z.astype(np.float32)[..., None]
        cells = np.searchsorted(self.edges, np.arange(block.start, block.stop), side="right") - 1
        runs = np.flatnonzero(np.diff(cells, prepend=-1))  # the block's first row in each row cell
        at = (slice(None), cells[runs], slice(lo, hi))
        self.thumbs[at] = np.maximum(self.thumbs[at], np.maximum.reduceat(pooled, runs, axis=1))


def _fused_kernel():
    """``viz_core.fused``'s compiled pass, or None (imported here: numba's import is 0.2 s)."""
    from attention_atlas.viz_core import fused

    return fused.kernel()


@functools.cache
def _exponential() -> tuple[np.ufunc, float]:
    """The summaries' exponential and the factor that takes natural logits to its base: 2^x where
    numpy's ``exp2`` is the faster (its SIMD loop on AVX-512 CPUs: half of ``exp``'s time at 8,192
    tokens, within 1 ulp), else e^x. Timed once, each the best of five on 64 K numbers."""
    x = np.linspace(-30, 0, 1 << 16, dtype=np.float32)

    def seconds(f) -> float:
        runs = []
        for _ in range(5):
            start = time.perf_counter()
            f(x, out=np.empty_like(x))
            runs.append(time.perf_counter() - start)
        return min(runs)

    return BASE_2 if seconds(np.exp2) < 0.8 * seconds(np.exp) else BASE_E


def _parts(e: np.ndarray, a: int, b: int, ones: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``[heads, rows]`` Σe over the keys ``:a`` (before a block's rows), ``a:b`` (among them) and
    ``b:`` (after them). The long two are matrix-vector products with ``ones`` (at least as many as
    the keys): a BLAS pass, twice as fast as numpy's pairwise ``sum``."""
    flat, shape = e.reshape(-1, e.shape[-1]), e.shape[:-1]

    def total(columns: slice, width: int) -> np.ndarray:
        return (flat[:, columns] @ ones[:width]).reshape(shape) if width else np.zeros(shape, e.dtype)

    return total(slice(None, a), a), e[..., a:b].sum(-1), total(slice(b, None), flat.shape[1] - b)


def _row_sum(stat: hs.Statistic, block: _Block) -> np.ndarray:
    """``[heads, rows]``: each row's Σₖ e·f of ``stat``, any form but a key statistic's (its row sum
    times Z)."""
    e = block.e
    if stat.surprise:  # −Σ p ln p = (ln Z · Σe − Σ e·s) / Z, in bits (s natural: its base's ÷ unit)
        es = np.vecdot(e, block.s) if block.es is None else block.es
        return (np.log(block.z) * block.total - es / block.unit) / np.log(2)
    if stat.pair is hs.distance:
        return _distance(block) if block.distance is None else block.distance
    if stat.offset is not None:  # the one key at query + offset, where the block reads it
        cols = np.arange(block.start, block.stop) + stat.offset - block.first
        ok = np.flatnonzero((cols >= 0) & (cols < e.shape[-1]))
        out = np.zeros(e.shape[:-1], dtype=np.float32)
        out[:, ok] = e[:, ok, cols[ok]]
        return out
    queries = np.arange(block.start, block.stop, dtype=np.float32)[:, None]  # any other f(query, key)
    return (e * stat.pair(queries, np.arange(block.first, block.width, dtype=np.float32)[None, :])).sum(-1)


def _distance(block: _Block) -> np.ndarray:
    """``[heads, rows]``: Σₖ e·|query − key|. A key before the block's rows is (query − start) +
    (start − key) from a row, one after them (key − (stop − 1)) + (stop − 1 − query): one
    matrix-vector product with each key's distance from the block's edge, plus each row's own
    offset times its Σe before (after) the block, plus the block's ``rows × rows`` square."""
    e, a, rows = block.e, block.before, block.stop - block.start
    edge = np.zeros(e.shape[-1], dtype=np.float32)
    edge[:a], edge[a + rows :] = np.arange(a, 0, -1), np.arange(1, e.shape[-1] - a - rows + 1)
    out = (e.reshape(-1, e.shape[-1]) @ edge).reshape(e.shape[:-1]).astype(np.float64)
    i = np.arange(rows)
    out += i * block.parts[0] + (rows - 1 - i) * block.parts[2]
    square = e[..., a : a + rows] * np.abs(i[:, None] - i[None, :]).astype(np.float32)
    return out + square.sum(-1)


def layer_summary(
    cap: QKCapture, layer: int, thumb: int = 32, block: int = SUMMARY_BLOCK
) -> tuple[np.ndarray, list[dict]]:
    """Every head of ``layer``: max-pooled thumbnails ``[heads, ≤thumb, ≤thumb]`` and ``head_table``'s
    rows, the query heads that share a key head together (``_KeyGroup``)."""
    group = cap.n_heads // cap.keys[layer].shape[0]
    heads = [  # up to TOGETHER heads of one key head at a time
        slice(h, min(h + TOGETHER, g + group))
        for g in range(0, cap.n_heads, group)
        for h in range(g, g + group, TOGETHER)
    ]
    groups = [_KeyGroup(cap, layer, part, thumb).run(block) for part in heads]
    thumbs, sums = (np.concatenate([getattr(g, a) for g in groups]) for a in ("thumbs", "sums"))
    return thumbs, _table_rows(cap, layer, range(cap.n_heads), sums)


def head_summary(
    cap: QKCapture, layer: int, head: int, thumb: int = 32, block: int = SUMMARY_BLOCK
) -> tuple[np.ndarray, dict]:
    """One head: its max-pooled thumbnail ``[≤thumb, ≤thumb]`` and ``head_table``'s row."""
    cap.head_qk(layer, head)  # a head that is not there: IndexError
    g = _KeyGroup(cap, layer, slice(head, head + 1), thumb).run(block)
    return g.thumbs[0], _table_rows(cap, layer, [head], g.sums)[0]


def _table_rows(cap: QKCapture, layer: int, heads, sums: np.ndarray) -> list[dict]:
    """``head_table``'s rows of ``heads`` from their row sums ``[heads, len(STATISTICS)]``."""
    values = hs.finish(sums, cap.n_tokens, cap.n_tokens)
    return [{"layer": layer, "head": h, **hs.head_row(values, i)} for i, h in enumerate(heads)]


def head_stats(cap: QKCapture, layer: int, head: int, block: int = SUMMARY_BLOCK) -> dict:
    """``head_table``'s row for one head: layer, head, every statistic of ``head_stats`` and the pattern."""
    return head_summary(cap, layer, head, 1, block)[1]


# -- helpers of the long-input page: zoom windows, one query's keys, queries and keys in 2-D ----------


def cell_span(edges: np.ndarray, lo: float, hi: float) -> tuple[int, int]:
    """Tokens ``[first, stop)`` covered by the cells at positions ``lo``–``hi`` of a reduced axis
    (cell ``i`` sits at ``i``, from ``i - 0.5`` to ``i + 0.5``: a box drawn over a Plotly heatmap)."""
    cells = len(edges) - 1
    lo, hi = sorted((lo, hi))
    first = min(max(round(lo), 0), cells - 1)
    last = min(max(round(hi), first), cells - 1)
    return int(edges[first]), int(edges[last + 1])


def fit_window(n: int, first: int, stop: int, side: int = MAX_WINDOW) -> tuple[int, int]:
    """``[first, stop)`` inside ``0–n`` and at most ``side`` tokens long (a longer span keeps its
    start); at least one token."""
    first = min(max(int(first), 0), n - 1)
    stop = min(max(int(stop), first + 1), n, first + side)
    return first, stop


def box_window(red: Reduced, xs: tuple[float, float], ys: tuple[float, float], side: int = MAX_WINDOW):
    """The zoom window ``((query first, stop), (key first, stop))`` for a box drawn over ``red``
    (x: keys, y: queries, in cell positions), cut to ``side`` tokens a side from its top-left
    corner; and whether it was cut."""
    (qa, qb), (ka, kb) = cell_span(red.row_edges, *ys), cell_span(red.col_edges, *xs)
    n_q, n_k = int(red.row_edges[-1]), int(red.col_edges[-1])
    queries, keys = fit_window(n_q, qa, qb, side), fit_window(n_k, ka, kb, side)
    return (queries, keys), (queries, keys) != ((qa, qb), (ka, kb))


def query_row(cap: QKCapture, layer: int, head: int, query: int) -> np.ndarray:
    """One query's weights over every key ``[keys]`` (0 after it in a causal model)."""
    if not 0 <= query < cap.n_tokens:
        raise IndexError(f"query {query} is outside 0–{cap.n_tokens - 1}")
    return head_rows(cap, layer, head, query, query + 1)[0]


def top_keys(weights: np.ndarray, k: int = 10) -> list[tuple[int, float]]:
    """The ``k`` largest weights of a row as ``(key, weight)``, largest first (ties: earlier key)."""
    k = min(k, len(weights))
    order = np.argsort(-weights, kind="stable")[:k]
    return [(int(i), float(weights[i])) for i in order]


def normalise_qk(q: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """AttentionViz's normalisation: queries × s and keys ÷ s so that both have the same mean
    length, then the keys moved so that their mean is the queries' mean. No weight changes: s
    cancels in q·k, and adding one vector to every key adds the same score to all of a query's keys."""
    q, k = np.asarray(q, dtype=np.float64), np.asarray(k, dtype=np.float64)
    qn, kn = np.linalg.norm(q, axis=1).mean(), np.linalg.norm(k, axis=1).mean()
    s = np.sqrt(kn / qn) if qn > 0 and kn > 0 else 1.0
    q, k = q * s, k / s
    return q, k - k.mean(0) + q.mean(0)


def project_qk(
    q: np.ndarray, k: np.ndarray, normalise: bool = True
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Queries ``[n, d]`` and keys ``[m, d]`` projected together onto their first two principal
    axes (PCA by SVD): ``(queries [n, 2], keys [m, 2], share of the variance on each axis)``;
    ``normalise`` first (``normalise_qk``)."""
    q, k = normalise_qk(q, k) if normalise else (np.asarray(q, np.float64), np.asarray(k, np.float64))
    both = np.concatenate([q, k])
    centred = both - both.mean(0)
    _, sing, vt = np.linalg.svd(centred, full_matrices=False)
    axes = np.zeros((2, both.shape[1]))
    axes[: min(2, len(vt))] = vt[:2]  # one-dimensional vectors: a second axis of zeros
    points = (centred @ axes.T).astype(np.float32)
    var = sing**2
    share = np.zeros(2)
    if var.sum() > 0:
        share[: min(2, len(var))] = var[:2] / var.sum()
    return points[: len(q)], points[len(q) :], share
