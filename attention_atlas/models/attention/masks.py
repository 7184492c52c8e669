"""Boolean attention masks (True = may attend) and a learned relative position bias.

The patterns are those the self-attention tutorial lists for sparse attention: a causal mask for
decoders, a local window, a strided pattern, and padding from valid lengths. The causal, local
and strided masks keep the diagonal, so no query is left with nothing to attend to; the padding
mask hides keys past each valid length, diagonal included (every query keeps its valid keys).
"""

from __future__ import annotations

import torch
from torch import nn


def _offsets(n_query: int, n_key: int) -> torch.Tensor:
    q = torch.arange(n_query).unsqueeze(1)  # [query, 1]
    k = torch.arange(n_key).unsqueeze(0)  # [1, key]
    return k - q  # [query, key]: how far ahead of the query each key is


def causal_mask(n_query: int, n_key: int | None = None) -> torch.Tensor:
    """``[query, key]``: query i sees keys 0..i (no peeking at the future)."""
    return _offsets(n_query, n_key or n_query) <= 0


def local_window_mask(n_query: int, n_key: int | None = None, window: int = 2) -> torch.Tensor:
    """``[query, key]``: keys at most ``window`` positions away, on either side."""
    if window < 0:
        raise ValueError(f"window must be ≥ 0, got {window}")
    return _offsets(n_query, n_key or n_query).abs() <= window


def strided_mask(n_query: int, n_key: int | None = None, stride: int = 3) -> torch.Tensor:
    """``[query, key]``: keys a multiple of ``stride`` away (Sparse Transformer's strided head)."""
    if stride < 1:
        raise ValueError(f"stride must be ≥ 1, got {stride}")
    return _offsets(n_query, n_key or n_query).remainder(stride) == 0


def padding_mask(valid_lens: torch.Tensor, n_key: int) -> torch.Tensor:
    """``[batch, 1, key]``: True for the first ``valid_lens[b]`` keys of each sequence."""
    return (torch.arange(n_key).unsqueeze(0) < valid_lens.unsqueeze(1)).unsqueeze(1)


MASKS = {
    "none": lambda n, **_: torch.ones(n, n, dtype=torch.bool),
    "causal": lambda n, **_: causal_mask(n),
    "local window": lambda n, window=2, **_: local_window_mask(n, window=window),
    "strided": lambda n, stride=3, **_: strided_mask(n, stride=stride),
}


class RelativePositionBias(nn.Module):
    """A learned scalar per head and clipped offset ``key - query``, added to the scores.

    Offsets beyond ``max_distance`` share the bias of the farthest bucket, so the
    table stays small (``2 * max_distance + 1`` entries a head) for any length.
    """

    def __init__(self, num_heads: int, max_distance: int = 8, seed: int = 0):
        super().__init__()
        self.max_distance = max_distance
        gen = torch.Generator().manual_seed(seed)
        self.table = nn.Parameter(torch.randn(num_heads, 2 * max_distance + 1, generator=gen) * 0.5)

    def forward(self, n_query: int, n_key: int) -> torch.Tensor:
        offsets = _offsets(n_query, n_key).clamp(-self.max_distance, self.max_distance)
        index = (offsets + self.max_distance).to(self.table.device)  # [query, key]
        return self.table[:, index]  # [heads, query, key]
