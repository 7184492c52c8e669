"""Multi-head attention whose per-head weights are a return value.

Unlike ``torch.nn.MultiheadAttention`` in eval mode (which may take a fused path and
return no weights), this always computes the explicit softmax, so every head can be
shown. Parameter layout matches PyTorch's, so weights can be copied across.

Its projected queries and keys are the ``queries`` and ``keys`` capture points
(``models.capture_points``): a ``recording`` open in the calling thread receives them, keyed
by the module.
"""

from __future__ import annotations

import torch
from torch import nn

from attention_atlas.models import capture_points
from attention_atlas.models.attention.scoring import masked_softmax, score


class MultiHeadAttention(nn.Module):
    """Returns ``(output [batch, query, embed], weights [batch, heads, query, key])``.

    Self-attention passes the same tensor three times; cross-attention passes the
    decoder states as ``query`` and the encoder states as ``key``/``value``.
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        bias: bool = True,
        scoring: str = "scaled_dot",
        dropout: float = 0.0,
    ):
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim {embed_dim} is not divisible by num_heads {num_heads}")
        self.num_heads, self.head_dim, self.scoring = num_heads, embed_dim // num_heads, scoring
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.k_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.v_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape
        return x.view(b, n, self.num_heads, self.head_dim).transpose(1, 2)  # [batch, heads, seq, hd]

    def forward(self, query, key, value, valid_lens=None, mask=None, bias=None):
        """``mask``: bool, broadcastable to ``[query, key]``; ``bias``: ``[heads, query, key]``, added."""
        q, k, v = (
            self._split(self.q_proj(query)),
            self._split(self.k_proj(key)),
            self._split(self.v_proj(value)),
        )
        rec = capture_points.active()  # this thread's recording (models.capture_points), if open
        if rec is not None:
            rec.report(self, queries=q[0], keys=k[0])  # [heads, seq, hd] of batch item 0
        scores = score(self.scoring, q, k)  # [batch, heads, query, key]
        if bias is not None:
            scores = scores + bias
        weights = masked_softmax(scores, valid_lens, mask)  # valid_lens: [batch] or [batch, query]
        out = self.dropout(weights) @ v  # [batch, heads, query, hd]
        out = out.transpose(1, 2).reshape(query.shape[0], query.shape[1], -1)  # [batch, query, embed]
        return self.out_proj(out), weights

    @classmethod
    def from_torch(cls, mha: nn.MultiheadAttention) -> MultiHeadAttention:
        """Copy the parameters of a ``torch.nn.MultiheadAttention`` (same embed dims for q, k, v)."""
        bias = mha.in_proj_bias is not None
        ours = cls(mha.embed_dim, mha.num_heads, bias=bias)
        w_q, w_k, w_v = mha.in_proj_weight.detach().chunk(3)
        with torch.no_grad():
            for proj, w in zip((ours.q_proj, ours.k_proj, ours.v_proj), (w_q, w_k, w_v), strict=True):
                proj.weight.copy_(w)
            ours.out_proj.weight.copy_(mha.out_proj.weight)
            if bias:
                for proj, b in zip(
                    (ours.q_proj, ours.k_proj, ours.v_proj), mha.in_proj_bias.detach().chunk(3), strict=True
                ):
                    proj.bias.copy_(b)
                ours.out_proj.bias.copy_(mha.out_proj.bias)
        return ours
