"""One head's queries and keys over a sample of the corpus, in one 2-D picture (AttentionViz's idea).

The queries and keys come from ``models.adapters.capture`` (the long-context capture: every
layer's q and k during one SDPA forward). Before projecting, AttentionViz's two
normalisations, neither of which changes any attention weight: the keys are shifted so that
their mean is the queries' mean (adding one vector to every key adds a constant to each query's
scores, which the softmax ignores), and queries are scaled by ``s``, keys by ``1/s`` so that both
have the same mean norm (every q·k unchanged). Then one PCA for both, so that a query lands near
the keys it scores highly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class HeadPoints:
    """Queries and keys of one head over some texts, and where each lies in 2-D."""

    xy: np.ndarray  # [points, 2]
    role: np.ndarray  # "query" or "key"
    token: np.ndarray
    text_id: np.ndarray
    pos: np.ndarray
    explained: tuple[float, float]  # variance share of the two axes


def capture_head(adapter, texts: list[tuple[int, str]], layer: int, head: int) -> dict[str, np.ndarray]:
    """``[tokens, head_dim]`` queries and keys of ``(layer, head)`` for each ``(text_id, text)``."""
    from attention_atlas.models.adapters import capture as cp

    why = cp.supports(adapter)
    if why:
        raise ValueError(why)
    qs, ks, tokens, ids, pos = [], [], [], [], []
    for text_id, text in texts:
        cap = cp.capture(adapter, text)
        q, k = cap.head_qk(layer, head)
        qs.append(q)
        ks.append(k)
        tokens += cap.tokens
        ids += [text_id] * len(cap.tokens)
        pos += list(range(len(cap.tokens)))
    return {
        "queries": np.concatenate(qs),
        "keys": np.concatenate(ks),
        "token": np.asarray(tokens, dtype=object),
        "text_id": np.asarray(ids),
        "pos": np.asarray(pos),
    }


def normalise(q: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Keys moved onto the queries' centroid; q·s and k/s with equal mean norms (weights unchanged)."""
    k = k + (q.mean(0) - k.mean(0))
    qn, kn = np.linalg.norm(q, axis=1).mean(), np.linalg.norm(k, axis=1).mean()
    s = np.sqrt(kn / qn) if qn > 0 and kn > 0 else 1.0
    return q * s, k / s


def embed(captured: dict[str, np.ndarray]) -> HeadPoints:
    """Both sets normalised, then projected on their first two principal components together."""
    q, k = normalise(captured["queries"].astype(np.float64), captured["keys"].astype(np.float64))
    both = np.concatenate([q, k])
    centred = both - both.mean(0)
    _, sing, vt = np.linalg.svd(centred, full_matrices=False)
    xy = centred @ vt[:2].T
    var = sing**2 / max((sing**2).sum(), 1e-30)
    n = len(q)
    return HeadPoints(
        xy=xy,
        role=np.asarray(["query"] * n + ["key"] * len(k)),
        token=np.concatenate([captured["token"], captured["token"]]),
        text_id=np.concatenate([captured["text_id"], captured["text_id"]]),
        pos=np.concatenate([captured["pos"], captured["pos"]]),
        explained=(float(var[0]), float(var[1]) if len(var) > 1 else 0.0),
    )
