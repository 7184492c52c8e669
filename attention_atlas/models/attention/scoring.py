"""Attention scoring functions with one signature, and the one masked softmax.

Every scorer maps queries ``[..., query, d_q]`` and keys ``[..., key, d_k]`` to
pre-softmax scores ``[..., query, key]``; the attention weights are always
``masked_softmax(scores, ...)``. That makes scorers interchangeable: a side-by-side
comparison is a loop over ``SCORERS``.

>>> q, k = torch.ones(1, 2, 4), torch.ones(1, 3, 4)
>>> score("scaled_dot", q, k).shape
torch.Size([1, 2, 3])
>>> masked_softmax(score("dot", q, k), valid_lens=torch.tensor([2]))[0, 0]
tensor([0.5000, 0.5000, 0.0000])
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

Tensor = torch.Tensor


def _dot(q: Tensor, k: Tensor) -> Tensor:
    _check_same_dim(q, k, "dot")
    return q @ k.transpose(-2, -1)  # [..., query, key]


def _scaled_dot(q: Tensor, k: Tensor) -> Tensor:
    # Dot products of random d-dim vectors have variance d; dividing by √d keeps
    # softmax out of its saturated, near-one-hot regime as d grows.
    return _dot(q, k) / math.sqrt(q.shape[-1])


def _additive(q: Tensor, k: Tensor, W_q: Tensor, W_k: Tensor, v: Tensor) -> Tensor:
    # Bahdanau: vᵀ tanh(W_q q + W_k k), broadcast over every (query, key) pair.
    hq = q @ W_q.T  # [..., query, hidden]
    hk = k @ W_k.T  # [..., key, hidden]
    return torch.tanh(hq.unsqueeze(-2) + hk.unsqueeze(-3)) @ v  # [..., query, key]


def _general(q: Tensor, k: Tensor, W: Tensor) -> Tensor:
    # Luong "general": qᵀ W k, so queries and keys may differ in size.
    return (q @ W) @ k.transpose(-2, -1)


def _cosine(q: Tensor, k: Tensor, temperature: float = 1.0) -> Tensor:
    _check_same_dim(q, k, "cosine")
    qn = nn.functional.normalize(q, dim=-1)
    kn = nn.functional.normalize(k, dim=-1)
    return (qn @ kn.transpose(-2, -1)) / _positive(temperature, "temperature")


def _gaussian(q: Tensor, k: Tensor, sigma: float = 1.0) -> Tensor:
    _check_same_dim(q, k, "gaussian")
    sq_dist = torch.cdist(q, k).pow(2)  # [..., query, key]
    return -sq_dist / (2 * _positive(sigma, "sigma") ** 2)


SCORERS: dict[str, Callable[..., Tensor]] = {
    "dot": _dot,
    "scaled_dot": _scaled_dot,
    "additive": _additive,
    "general": _general,
    "cosine": _cosine,
    "gaussian": _gaussian,
}

#: The learned parameters each scorer needs, as (name -> shape given d_q, d_k, hidden).
LEARNED: dict[str, dict[str, Callable[[int, int, int], tuple[int, ...]]]] = {
    "additive": {
        "W_q": lambda dq, dk, h: (h, dq),
        "W_k": lambda dq, dk, h: (h, dk),
        "v": lambda dq, dk, h: (h,),
    },
    "general": {"W": lambda dq, dk, h: (dq, dk)},
}


def init_params(name: str, d_q: int, d_k: int, hidden: int | None = None, seed: int = 0) -> dict[str, Tensor]:
    """Deterministic parameters for a learned scorer (empty for parameter-free ones)."""
    hidden = hidden or max(d_q, d_k)
    gen = torch.Generator().manual_seed(seed)
    params = {}
    for pname, shape_of in LEARNED.get(name, {}).items():
        shape = shape_of(d_q, d_k, hidden)
        # 1/√fan_in keeps scores of order 1 at initialisation, so a model's softmax
        # starts unsaturated and its attention can learn.
        params[pname] = torch.randn(*shape, generator=gen) / math.sqrt(shape[-1])
    return params


def score(
    name: str, queries: Tensor, keys: Tensor, *, seed: int = 0, hidden: int | None = None, **params
) -> Tensor:
    """Pre-softmax scores ``[..., query, key]`` of scorer ``name``.

    Learned scorers (``additive``, ``general``) take their weights as keyword
    arguments; missing ones are created from ``seed`` so that repeated calls agree.
    """
    if name not in SCORERS:
        raise KeyError(f"unknown scoring function {name!r}; choose one of {sorted(SCORERS)}")
    missing = [p for p in LEARNED.get(name, {}) if p not in params]
    if missing:
        made = init_params(name, queries.shape[-1], keys.shape[-1], hidden=hidden, seed=seed)
        made = {p: t.to(device=queries.device, dtype=queries.dtype) for p, t in made.items()}
        params = {**made, **params}
    return SCORERS[name](queries, keys, **params)


def masked_softmax(scores: Tensor, valid_lens: Tensor | None = None, mask: Tensor | None = None) -> Tensor:
    """Softmax over the last (key) axis; masked keys get exactly 0.

    ``valid_lens``: ``[batch]`` or ``[batch, query]``: keys at or past the length are masked.
    ``mask``: boolean, broadcastable to ``scores``, True where a key may be attended.
    A row whose keys are all masked comes out all zeros rather than NaN.
    """
    keep = torch.ones_like(scores, dtype=torch.bool)
    if valid_lens is not None:
        keep = keep & _length_mask(valid_lens, scores)
    if mask is not None:
        keep = keep & mask.to(torch.bool)
    weights = torch.softmax(scores.masked_fill(~keep, float("-inf")), dim=-1)
    return torch.nan_to_num(weights, nan=0.0) * keep


def _length_mask(valid_lens: Tensor, scores: Tensor) -> Tensor:
    n_keys = scores.shape[-1]
    positions = torch.arange(n_keys, device=scores.device)  # [key]
    lens = valid_lens.to(scores.device)
    if lens.dim() == 1:  # [batch] -> [batch, 1, ..., 1]
        lens = lens.reshape(lens.shape[0], *([1] * (scores.dim() - 1)))
    else:  # [batch, query] -> [batch, 1, ..., query, 1]
        lens = lens.reshape(lens.shape[0], *([1] * (scores.dim() - 3)), lens.shape[1], 1)
    return positions < lens


def attend(
    name: str, queries: Tensor, keys: Tensor, values: Tensor, valid_lens=None, mask=None, **params
) -> tuple[Tensor, Tensor]:
    """Score, mask, softmax and pool: returns ``(output [..., query, d_v], weights [..., query, key])``."""
    weights = masked_softmax(score(name, queries, keys, **params), valid_lens, mask)
    return weights @ values, weights


class ScoringAttention(nn.Module):
    """A scorer with its learned parameters as a module, for models that train them.

    ``forward(queries, keys, values, valid_lens=None, mask=None)`` returns the pooled
    values and the weights; the weights are returned, never stored on the module.
    """

    def __init__(self, name: str, d_q: int, d_k: int, hidden: int | None = None, seed: int = 0, **fixed):
        super().__init__()
        if name not in SCORERS:
            raise KeyError(f"unknown scoring function {name!r}; choose one of {sorted(SCORERS)}")
        self.name = name
        self.fixed = fixed  # temperature / sigma for the parameter-free scorers
        made = init_params(name, d_q, d_k, hidden=hidden, seed=seed)
        self.params = nn.ParameterDict({k: nn.Parameter(v) for k, v in made.items()})

    def forward(self, queries, keys, values, valid_lens=None, mask=None):
        return attend(
            self.name, queries, keys, values, valid_lens, mask, **self.fixed, **dict(self.params.items())
        )


def _check_same_dim(q: Tensor, k: Tensor, name: str) -> None:
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"{name} scoring needs queries and keys of one size, got {q.shape[-1]} and {k.shape[-1]}"
        )


def _positive(value: float, name: str) -> float:
    if not value > 0:
        raise ValueError(f"{name} must be positive, got {value}")
    return float(value)
