"""Per text × layer × head statistics and per token × layer × head top-k links, from a padded batch.

``reduce_batch`` takes a batch's weights ``[texts, layers, heads, query, key]`` (right-padded:
text b's rows ``< q_len[b]`` and keys ``< k_len[b]`` are real) and returns flat numpy columns.
Padding takes no part: a text's numbers are those it gives alone. The definitions are
``viz_core.stats.head_table``'s (entropy in bits averaged over query rows, attention-weighted
|query − key| distance, share on special tokens, the coarse pattern), computed here in torch
(``models`` does not import pandas-heavy viz_core modules); a test holds them equal.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

PATTERNS = ("previous token", "diagonal", "first token / sink", "broad", "mixed")  # viz_core.stats.PATTERNS
STAT_COLUMNS = (
    "entropy",
    "mean_distance",
    "special_share",
    "previous_share",
    "diagonal_share",
    "first_share",
)


@dataclass
class Reduced:
    """One batch, reduced: ``stats`` (rows text × layer × head) and ``links`` (rows token × layer × head)."""

    stats: dict[str, np.ndarray]
    links: dict[str, np.ndarray]


def _offset_share(w: torch.Tensor, q_len: torch.Tensor, k_len: torch.Tensor, offset: int) -> torch.Tensor:
    """Mean weight on key = query + offset over the rows where that key exists (``_offset_share``)."""
    diag = torch.diagonal(
        w, offset=offset, dim1=-2, dim2=-1
    ).double()  # [B, L, H, n]: (i - min(0,off), i + max(0,off))
    i = torch.arange(diag.shape[-1])
    q = i + max(0, -offset)
    k = i + max(0, offset)
    ok = (q[None, :] < q_len[:, None]) & (k[None, :] < k_len[:, None])  # [B, n]
    count = ok.sum(-1)
    return (diag * ok[:, None, None, :]).sum(-1) / count.clamp(min=1)[:, None, None]


def head_stats(
    w: torch.Tensor, q_len: torch.Tensor, k_len: torch.Tensor, special: torch.Tensor
) -> dict[str, torch.Tensor]:
    """Every statistic ``[B, L, H]`` and the pattern code, masks applied.

    Sums over keys run in float32 on the whole batch (the costly part), means over rows in
    float64; padded keys hold exactly 0 (masked before the softmax), so they add nothing."""
    w = w.float()
    Q, K = w.shape[-2:]
    logs = torch.log2(w.clamp(min=torch.finfo(torch.float32).tiny))  # 0 · log2(tiny) is 0
    dist = (torch.arange(Q)[:, None] - torch.arange(K)[None, :]).abs().float()
    per_row = torch.stack(
        [
            -torch.einsum("blhqk,blhqk->blhq", w, logs),  # entropy (bits)
            torch.einsum("blhqk,qk->blhq", w, dist),  # mean distance
            torch.einsum("blhqk,bk->blhq", w, special.float()),  # on special tokens
            w[..., 0],  # on the first token
        ],
        -1,
    )  # [B, L, H, Q, 4]
    rows = (torch.arange(Q)[None, :] < q_len[:, None]).double()  # [B, Q]
    means = (
        torch.einsum("blhqs,bq->blhs", per_row.double(), rows)
        / q_len.clamp(min=1).double()[:, None, None, None]
    )
    out = {
        "entropy": means[..., 0],
        "mean_distance": means[..., 1],
        "special_share": means[..., 2],
        "previous_share": _offset_share(w, q_len, k_len, -1),
        "diagonal_share": _offset_share(w, q_len, k_len, 0),
        "first_share": means[..., 3],
    }
    shares = torch.stack([out["previous_share"], out["diagonal_share"], out["first_share"]], -1)
    best, which = shares.max(-1)  # the first of equal maxima, as Python's max over the dict
    spread = out["entropy"] / torch.log2(k_len.double()).clamp(min=1e-9)[:, None, None]
    fallback = torch.where(spread >= 0.75, 3, 4)
    out["pattern"] = torch.where(best >= 0.5, which, fallback)
    return out


def reduce_batch(
    w: torch.Tensor,
    q_len: torch.Tensor,
    k_len: torch.Tensor,
    special: torch.Tensor,
    text_ids: np.ndarray,
    top_k: int,
) -> Reduced:
    """Flat columns of ``head_stats`` and of each real query row's ``top_k`` keys and weights."""
    B, L, H = w.shape[:3]
    s = head_stats(w, q_len, k_len, special)
    ids = np.asarray(text_ids, dtype=np.int64)
    stats = {
        "text_id": np.repeat(ids, L * H),
        "layer": np.tile(np.repeat(np.arange(L, dtype=np.int16), H), B),
        "head": np.tile(np.arange(H, dtype=np.int16), B * L),
        "n_tokens": np.repeat(k_len.numpy().astype(np.int32), L * H),
        "n_queries": np.repeat(q_len.numpy().astype(np.int32), L * H),
    }
    stats.update({c: s[c].reshape(-1).numpy() for c in STAT_COLUMNS})
    stats["pattern"] = np.asarray(PATTERNS, dtype=object)[s["pattern"].reshape(-1).numpy()]
    return Reduced(stats, _links(w, q_len, k_len, ids, top_k))


def _links(w: torch.Tensor, q_len: torch.Tensor, k_len: torch.Tensor, ids: np.ndarray, top_k: int) -> dict:
    L, H, Q, K = w.shape[1:]
    k = min(top_k, K)
    values, keys = torch.topk(w, k, dim=-1)  # [B, L, H, Q, k]
    real = torch.arange(k)[None, :] < k_len[:, None]  # a short text has fewer keys than k
    values = torch.where(real[:, None, None, None, :], values, 0.0)
    keys = torch.where(real[:, None, None, None, :], keys, -1)
    rows = torch.arange(Q)[None, :] < q_len[:, None]  # [B, Q]
    b, q = rows.nonzero(as_tuple=True)
    v = values.permute(0, 3, 1, 2, 4)[b, q].reshape(-1, k).numpy()  # [(row, layer, head), k]
    kk = keys.permute(0, 3, 1, 2, 4)[b, q].reshape(-1, k).numpy().astype(np.int16)
    links = {
        "text_id": np.repeat(ids[b.numpy()], L * H),
        "pos": np.repeat(q.numpy().astype(np.int16), L * H),
        "layer": np.tile(np.repeat(np.arange(L, dtype=np.int8), H), len(b)),
        "head": np.tile(np.arange(H, dtype=np.int8), len(b) * L),
    }
    for j in range(top_k):
        links[f"key{j + 1}"] = kk[:, j] if j < k else np.full(len(kk), -1, np.int16)
        links[f"w{j + 1}"] = v[:, j] if j < k else np.zeros(len(v), np.float32)
    return links
