"""Statistics of attention matrices (numpy only); the head statistics are defined in ``head_stats``."""

from __future__ import annotations

import numpy as np
import pandas as pd

from attention_atlas.viz_core import head_stats

row_entropy = head_stats.row_entropy  # each query's entropy in bits (the Scoring page's bars)


def diagonal_share(weights: np.ndarray) -> float:
    """Share of each row's attention on its own position (query i → key i), averaged."""
    w = np.asarray(weights, dtype=np.float64)
    n = min(w.shape[-2:])
    return float(np.mean(w[..., np.arange(n), np.arange(n)]))


def _offset_share(w: np.ndarray, offset: int) -> np.ndarray:
    """Mean weight on key = query + offset over the queries where that key exists."""
    q, k = w.shape[-2:]
    rows = np.arange(max(0, -offset), min(q, k - offset))
    if rows.size == 0:
        return np.zeros(w.shape[:-2])
    return w[..., rows, rows + offset].mean(-1)


def head_table(weights: np.ndarray, special: list[bool] | None = None) -> pd.DataFrame:
    """One row per (layer, head): ``head_stats.COLUMNS`` (every statistic and the pattern), from
    full ``[layers, heads, query, key]`` weights, a layer at a time."""
    layers, heads, queries, keys = weights.shape
    sums = np.stack([head_stats.row_sums(weights[layer], 0, special) for layer in range(layers)])
    values = head_stats.finish(sums, queries, keys)  # [layers, heads] each
    frame = pd.DataFrame({name: values[name].reshape(-1) for name in (*head_stats.NAMES, "pattern")})
    frame.insert(0, "head", np.tile(np.arange(heads), layers))
    frame.insert(0, "layer", np.repeat(np.arange(layers), heads))
    return frame


def induction_scores(weights: np.ndarray, period: int, offset: int = 0) -> np.ndarray:
    """``[layers, heads]``: attention from each token of a repeated block to the token after its
    earlier copy (key = query − period + 1), averaged over the second block.

    ``offset`` is the number of tokens (e.g. a bos) before the first block.
    """
    q = np.arange(offset + period, min(offset + 2 * period, weights.shape[-2]))
    return weights[..., q, q - period + 1].mean(-1)


def rollout(weights: np.ndarray, residual: float = 0.5) -> np.ndarray:
    """Attention rollout (Abnar & Zuidema, 2020): heads averaged, the residual path added,
    rows renormalised, multiplied through the layers. ``[query, key]`` of the last layer."""
    w = np.asarray(weights, dtype=np.float32).mean(1)  # [layers, query, key]; float32 keeps 512² fast
    eye = np.eye(w.shape[-1], dtype=np.float32)
    out = residual * eye + (1 - residual) * w[0]  # rows already sum to 1: no renormalising
    for layer in w[1:]:
        out = (residual * eye + (1 - residual) * layer) @ out
    return out


def attention_flow(weights: np.ndarray, residual: float = 0.5, scale: int = 1_000_000) -> np.ndarray:
    """Exact attention flow: the max flow from each input token to each last-layer position
    through the layered graph whose capacities are the (residual-mixed) attention weights.

    Uses scipy's max-flow (integer capacities, so weights are scaled by ``scale``).
    Cost grows as positions² × max-flows on a graph of layers × positions² edges: short inputs only.
    """
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_flow

    w = np.asarray(weights, dtype=np.float64).mean(1)  # [layers, query, key]
    layers, n, _ = w.shape
    eye = np.eye(n)
    # Node (l, i) is position i after layer l (l = 0 is the input); edges go from (l+1, i) down to (l, j).
    rows, cols, caps = [], [], []
    for layer in range(layers):
        a = residual * eye + (1 - residual) * w[layer]
        a = a / a.sum(-1, keepdims=True)
        i, j = np.nonzero(a > 0)
        rows.append((layer + 1) * n + i)
        cols.append(layer * n + j)
        caps.append(np.round(a[i, j] * scale).astype(np.int32))
    size = (layers + 1) * n
    graph = csr_matrix(
        (np.concatenate(caps), (np.concatenate(rows), np.concatenate(cols))), shape=(size, size)
    )
    flow = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            flow[i, j] = maximum_flow(graph, layers * n + i, j).flow_value / scale
    return flow


def offset_profile(weights: np.ndarray, max_offset: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Mean attention as a function of relative offset (key − query), per head.

    Returns ``(offsets, profile [layers, heads, offsets])``.
    """
    q, k = weights.shape[-2:]
    reach = max_offset if max_offset is not None else max(q, k) - 1
    offsets = np.arange(-reach, reach + 1)
    profile = np.stack([_offset_share(weights, int(o)) for o in offsets], axis=-1)
    return offsets, profile


def cosine_similarity(vectors: np.ndarray) -> np.ndarray:
    """``[n, n]`` cosine similarity between the rows of ``vectors``."""
    v = np.asarray(vectors, dtype=np.float64)
    unit = v / np.maximum(np.linalg.norm(v, axis=-1, keepdims=True), 1e-12)
    return unit @ unit.T
