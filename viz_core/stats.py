"""Statistics of attention matrices (numpy only)."""

from __future__ import annotations

import numpy as np


def row_entropy(weights: np.ndarray) -> np.ndarray:
    """Entropy in bits of each row (last axis): 0 for one-hot, log2(n) for uniform."""
    w = np.asarray(weights, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(w > 0, -w * np.log2(w), 0.0)
    return terms.sum(-1)


def diagonal_share(weights: np.ndarray) -> float:
    """Share of each row's attention on its own position (query i → key i), averaged."""
    w = np.asarray(weights, dtype=np.float64)
    n = min(w.shape[-2:])
    return float(np.mean(w[..., np.arange(n), np.arange(n)]))
