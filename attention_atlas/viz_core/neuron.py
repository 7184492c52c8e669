"""The neuron view (BertViz's third view) for any model that hands over its queries and keys.

For one head and one query token: the query vector q, each key vector kⱼ, their elementwise
product q∘kⱼ (whose sum is q·kⱼ), the score sⱼ = q·kⱼ × scaling and the weight, the softmax of
the scores over the keys the model's mask lets the query see (a causal model: itself and the
tokens before). ``neuron`` computes them from a ``HeadVectors`` (``models.analysis.neuron`` fills one);
``viz_core.neuron_figure`` draws them.

numpy only: ``models`` imports this module.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class HeadVectors:
    """One record kind's queries and keys, every layer: ``queries[layer]`` ``[heads, queries, d]``,
    ``keys[layer]`` ``[key heads, keys, d]`` (grouped-query attention: fewer key heads, each
    shared by ``heads // key heads`` query heads), float32, as the model computed them."""

    queries: list[np.ndarray]
    keys: list[np.ndarray]
    scaling: list[float]  # per layer: the factor on q·k
    causal: bool  # key j is seen by query i only when j ≤ i
    query_tokens: list[str]
    key_tokens: list[str]
    key_special: list[bool]

    @property
    def n_layers(self) -> int:
        return len(self.queries)

    @property
    def n_heads(self) -> int:
        return self.queries[0].shape[0]

    def head(self, layer: int, head: int) -> tuple[np.ndarray, np.ndarray]:
        """One head's queries ``[queries, d]`` and keys ``[keys, d]`` (its shared key head under GQA)."""
        if not 0 <= layer < self.n_layers:
            raise ValueError(f"layer {layer} is outside 0–{self.n_layers - 1}")
        if not 0 <= head < self.n_heads:
            raise ValueError(f"head {head} is outside 0–{self.n_heads - 1}")
        q, k = np.asarray(self.queries[layer]), np.asarray(self.keys[layer])
        return q[head], k[head // (q.shape[0] // k.shape[0])]

    def seen(self, query: int) -> np.ndarray:
        """``[keys]`` bool: the keys the mask lets ``query`` attend to."""
        n = len(self.key_tokens)
        return np.arange(n) <= query if self.causal else np.ones(n, dtype=bool)


@dataclass(frozen=True)
class Neuron:
    """One head's computation for one query token."""

    query: np.ndarray  # [d]
    keys: np.ndarray  # [keys, d]
    products: np.ndarray  # [keys, d]: q ∘ kⱼ
    scores: np.ndarray  # [keys]: Σ(q ∘ kⱼ) × scaling (NaN where the mask hides the key)
    weights: np.ndarray  # [keys]: softmax of the scores over the keys seen (0 where hidden)
    seen: np.ndarray  # [keys] bool
    scaling: float


def neuron(vectors: HeadVectors, layer: int, head: int, query: int) -> Neuron:
    """q, K, q∘K, the scores and the weights of ``query`` at (``layer``, ``head``), in float64."""
    q_all, k = vectors.head(layer, head)
    if not 0 <= query < len(q_all):
        raise ValueError(f"query {query} is outside 0–{len(q_all) - 1}")
    q, k = q_all[query].astype(np.float64), k.astype(np.float64)
    products = k * q
    scale = float(vectors.scaling[layer])
    seen = vectors.seen(query)
    scores = np.where(seen, products.sum(-1) * scale, np.nan)
    shifted = np.exp(np.where(seen, scores - np.nanmax(scores), -np.inf))
    return Neuron(q, k, products, scores, shifted / shifted.sum(), seen, scale)
