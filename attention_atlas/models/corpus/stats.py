"""Per text × layer × head statistics and per token × layer × head top-k links, from a padded batch.

``reduce_batch`` takes a batch's weights ``[texts, layers, heads, query, key]`` (right-padded:
text b's rows ``< q_len[b]`` and keys ``< k_len[b]`` are real) and returns flat numpy columns.
Padding takes no part: a text's numbers are those it gives alone. The statistics are
``viz_core.head_stats``'s: its ``STATISTICS`` say what each row adds (here summed in torch over
the whole batch at once, the costly part) and its ``finish`` turns the row sums into each head's
numbers and pattern, as for ``viz_core.stats.head_table`` (a test holds them equal).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from attention_atlas.viz_core import head_stats as hs

STAT_COLUMNS = hs.NAMES  # the stats table's columns after text_id, layer, head, n_tokens, n_queries


@dataclass
class Reduced:
    """One batch, reduced: ``stats`` (rows text × layer × head) and ``links`` (rows token × layer × head)."""

    stats: dict[str, np.ndarray]
    links: dict[str, np.ndarray]


def _on_diagonal(w: torch.Tensor, q_len: torch.Tensor, k_len: torch.Tensor, offset: int) -> torch.Tensor:
    """``[B, L, H]``: Σ of w[q, q + offset] over the real rows where that key is real."""
    diag = torch.diagonal(w, offset=offset, dim1=-2, dim2=-1).double()  # (i - min(0,off), i + max(0,off))
    i = torch.arange(diag.shape[-1])
    q, k = i + max(0, -offset), i + max(0, offset)
    ok = (q[None, :] < q_len[:, None]) & (k[None, :] < k_len[:, None])  # [B, n]
    return torch.einsum("blhn,bn->blh", diag, ok.double())


def row_sums(
    w: torch.Tensor, q_len: torch.Tensor, k_len: torch.Tensor, special: torch.Tensor
) -> torch.Tensor:
    """``[B, L, H, len(STATISTICS)]``: ``viz_core.head_stats.row_sums`` of each text, padding masked.

    Each ``Statistic``'s form summed over keys in float32 on the whole batch (the key-only ones in
    one product), then over the real rows in float64; padded keys hold exactly 0 (masked before
    the softmax), so they add nothing."""
    w = w.float()
    Q, K = w.shape[-2:]
    stats = hs.STATISTICS
    sums = torch.zeros(*w.shape[:3], len(stats), dtype=torch.float64)
    per_row, where = [], []  # [B, L, H, Q, n] blocks of per-row quantities, and their statistics
    for i, s in enumerate(stats):
        if s.surprise:
            logs = torch.log2(w.clamp(min=torch.finfo(torch.float32).tiny))  # 0 · log2(tiny) is 0
            per_row.append(-torch.einsum("blhqk,blhqk->blhq", w, logs)[..., None])
        elif s.pair is not None:
            f = s.pair(np.arange(Q, dtype=np.float32)[:, None], np.arange(K, dtype=np.float32)[None, :])
            per_row.append(torch.einsum("blhqk,qk->blhq", w, torch.from_numpy(np.float32(f)))[..., None])
        elif s.offset is not None:
            sums[..., i] = _on_diagonal(w, q_len, k_len, s.offset)
            continue
        else:
            continue  # key-only: below, together
        where.append(i)
    keyed = [i for i, s in enumerate(stats) if s.key is not None]
    if keyed:
        flags, positions = special.numpy(), np.arange(K)[None, :]
        f = np.stack([np.broadcast_to(stats[i].key(positions, flags), flags.shape) for i in keyed], -1)
        per_row.append(torch.einsum("blhqk,bks->blhqs", w, torch.from_numpy(f.astype(np.float32))))
        where += keyed
    if per_row:
        rows = (torch.arange(Q)[None, :] < q_len[:, None]).double()  # [B, Q]
        sums[..., where] = torch.einsum("blhqs,bq->blhs", torch.cat(per_row, -1).double(), rows)
    return sums


def head_stats(
    w: torch.Tensor, q_len: torch.Tensor, k_len: torch.Tensor, special: torch.Tensor
) -> dict[str, np.ndarray]:
    """Every statistic ``[B, L, H]`` and the pattern's name (``viz_core.head_stats.finish``)."""
    n_q, n_k = q_len.numpy()[:, None, None], k_len.numpy()[:, None, None]
    return hs.finish(row_sums(w, q_len, k_len, special).numpy(), n_q, n_k)


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
    stats.update({c: s[c].reshape(-1) for c in (*STAT_COLUMNS, "pattern")})
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
