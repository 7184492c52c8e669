"""The computations behind the teaching pages, returned as records and arrays.

Pages stay short: they pick parameters, call one of these (cached), and draw.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from attention_atlas.models.attention import kernel_regression as pooling
from attention_atlas.models.attention import masks, positional
from attention_atlas.models.attention.scoring import SCORERS, init_params, masked_softmax, score
from attention_atlas.viz_core.record import AttentionRecord

MASK_NAMES = ("none", "causal", "local window", "strided", "padding")


@dataclass(frozen=True)
class ScoringSetup:
    """Random queries and keys, and how to mask and score them (defaults show a clear contrast)."""

    d: int = 16  # vector size; raise it to watch unscaled dot products saturate
    n: int = 8  # queries and keys (one each per position, as in self-attention)
    seed: int = 0
    mask: str = "none"
    window: int = 1  # local window: keys at most this far away
    stride: int = 3  # strided: keys a multiple of this far away
    valid_len: int = 5  # padding: keys at or past this position are padding
    identical_keys: bool = False  # the attention-pooling tutorial: equal keys → uniform weights
    relative_bias: bool = False  # the self-attention tutorial: add a (random, seeded) bias per offset key − query
    temperature: float = 0.2  # cosine: cos / temperature (cos alone lies in [-1, 1], too flat)
    sigma: float = 2.0  # gaussian bandwidth


def random_qk(setup: ScoringSetup) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(setup.seed)
    queries = torch.randn(setup.n, setup.d, generator=gen)  # [query, d]
    keys = torch.randn(setup.n, setup.d, generator=gen)  # [key, d]
    if setup.identical_keys:
        keys = keys[:1].expand(setup.n, -1).clone()
    return queries, keys


def mask_for(setup: ScoringSetup) -> torch.Tensor:
    """``[query, key]`` bool mask for the setup's choice."""
    if setup.mask not in MASK_NAMES:
        raise ValueError(f"unknown mask {setup.mask!r}; choose one of {MASK_NAMES}")
    if setup.mask == "padding":
        if not 1 <= setup.valid_len <= setup.n:
            raise ValueError(f"valid length must be 1..{setup.n}, got {setup.valid_len}")
        return masks.padding_mask(torch.tensor([setup.valid_len]), setup.n)[0].expand(setup.n, -1)
    return masks.MASKS[setup.mask](setup.n, window=setup.window, stride=setup.stride)


def _params(name: str, setup: ScoringSetup, d: int) -> dict:
    if name == "cosine":
        return {"temperature": setup.temperature}
    if name == "gaussian":
        return {"sigma": setup.sigma}
    params = init_params(name, d, d, seed=setup.seed)
    if name == "additive":
        # A model starts v small so its softmax can learn; untrained, that makes every
        # additive score ≈ 0 and the panel flat. Scale v up to show what the function can do.
        params["v"] = params["v"] * math.sqrt(params["v"].numel())
    return params


def scoring_records(setup: ScoringSetup, queries=None, keys=None, tokens=None) -> dict[str, AttentionRecord]:
    """Every scoring function on the same queries and keys, as one record each.

    ``queries``/``keys`` (``[n, d]``) replace the random ones when given.
    """
    if queries is None or keys is None:
        queries, keys = random_qk(setup)
    queries, keys = torch.as_tensor(queries), torch.as_tensor(keys)
    keep = mask_for(setup)
    bias = masks.RelativePositionBias(1, max_distance=4, seed=setup.seed) if setup.relative_bias else None
    q_tokens = tokens or [f"q{i}" for i in range(queries.shape[0])]
    k_tokens = tokens or [f"k{i}" for i in range(keys.shape[0])]
    out = {}
    for name in SCORERS:
        raw = score(name, queries, keys, **_params(name, setup, queries.shape[-1]))  # [query, key]
        if bias is not None:
            raw = raw + bias(queries.shape[0], keys.shape[0])[0].detach()
        weights = masked_softmax(raw, mask=keep)
        out[name] = AttentionRecord(
            weights[None, None].numpy(),
            q_tokens,
            k_tokens,
            "self",
            "random",
            scoring=name,
            scores=raw[None, None].numpy(),  # before masking
            meta={"mask": setup.mask, "d": queries.shape[1]},
        )
    return out


def saturation(dims: list[int], n_keys: int = 10, trials: int = 1000, seed: int = 0) -> dict[str, np.ndarray]:
    """Mean largest softmax weight for random q, k as d grows: ``dot`` saturates, ``scaled_dot`` does not.

    1.0 means one-hot (the softmax has saturated and its gradient vanishes); 1/n_keys is uniform.
    Only the query's length and each key's component along it enter q·k: for a given q the scores of
    ``n_keys`` random keys are independent N(0, |q|²). So each trial draws one query and one normal
    per key, the same distribution as drawing every key's d numbers at a d-th of the cost.
    """
    gen = torch.Generator().manual_seed(seed)
    curves = {"dot": [], "scaled_dot": []}
    for d in dims:
        length = torch.randn(trials, d, generator=gen).norm(dim=-1, keepdim=True)  # |q|
        dot = length * torch.randn(trials, n_keys, generator=gen)  # q·k of each key
        for name, scores in (("dot", dot), ("scaled_dot", dot / math.sqrt(d))):
            curves[name].append(float(torch.softmax(scores, -1).amax(-1).mean()))
    return {name: np.array(v) for name, v in curves.items()}


def positional_tables(length: int, dim: int) -> dict[str, np.ndarray]:
    """P ``[position, dim]``, its similarity P·Pᵀ ``[position, position]`` and binary digits."""
    P = positional.sinusoidal(length, dim)
    return {
        "P": P.numpy(),
        "similarity": (P @ P.T).numpy(),
        "binary": positional.binary_table(min(length, 64)).numpy(),
    }


def sinusoid_by_offset(max_offset: int, dim: int = 64) -> np.ndarray:
    """``[2·max_offset + 1]`` similarity P[i]·P[i + offset] of sinusoidal positions, offsets
    −max_offset … max_offset, scaled to 1 at offset 0 (it depends on the offset only)."""
    P = positional.sinusoidal(max_offset + 1, dim).numpy()
    sim = P @ P[0]
    return np.concatenate([sim[:0:-1], sim]) / sim[0]


@dataclass(frozen=True)
class PoolingView:
    """Everything the attention-pooling page draws, as numpy arrays and records."""

    x_train: np.ndarray  # [key]
    y_train: np.ndarray  # [key]
    x_test: np.ndarray  # [query]
    y_truth: np.ndarray  # [query]
    estimates: dict[str, np.ndarray]  # label -> f(x_test), NaN where undefined
    record: AttentionRecord  # the chosen kernel's weights [1, 1, query, key]
    learned: AttentionRecord | None  # the learned Gaussian's weights, once w is known


def pooling_view(
    n_train: int, noise: float, seed: int, kernel: str, bandwidth: float, w: float | None = None
) -> PoolingView:
    """Nadaraya–Watson on the toy data with ``kernel`` and ``bandwidth`` (and learned ``w`` if given)."""
    data = pooling.make_data(n_train, 50, noise, seed)
    weights = pooling.nw_weights(data.x_test, data.x_train, kernel, bandwidth)
    estimates = {f"{kernel} kernel, h = {bandwidth}": pooling.nw_estimate(weights, data.y_train).numpy()}
    record = _pooling_record(weights, data, {"kernel": kernel, "bandwidth": bandwidth})
    learned = None
    if w is not None:
        learned_weights = pooling.parametric_weights(data.x_test, data.x_train, w)
        estimates[f"learned Gaussian, w = {w:.2f}"] = pooling.nw_estimate(
            learned_weights, data.y_train
        ).numpy()
        learned = _pooling_record(learned_weights, data, {"kernel": "gaussian (learned)", "w": w})
    return PoolingView(
        data.x_train.numpy(),
        data.y_train.numpy(),
        data.x_test.numpy(),
        data.y_truth.numpy(),
        estimates,
        record,
        learned,
    )


def train_pooling(n_train: int, noise: float, seed: int, epochs: int, lr: float, on_epoch=None):
    """Train the parametric kernel width on the same data as ``pooling_view``: ``(w, losses)``."""
    data = pooling.make_data(n_train, 50, noise, seed)
    return pooling.train_parametric(data.x_train, data.y_train, epochs=epochs, lr=lr, on_epoch=on_epoch)


def _pooling_record(weights: torch.Tensor, data: pooling.RegressionData, meta: dict) -> AttentionRecord:
    """Weights ``[test x, train x]`` as a record; rows with no key in reach are left out."""
    defined = weights.sum(-1) > 0
    if not defined.any():
        raise ValueError("no test point has a training point within the bandwidth; widen it")
    return AttentionRecord(
        weights[defined][None, None].numpy(),
        [f"{x:.2f}" for x in data.x_test[defined].tolist()],
        [f"{x:.2f}" for x in data.x_train.tolist()],
        "cross",
        "nadaraya-watson",
        scoring="gaussian" if meta["kernel"].startswith("gaussian") else None,
        meta={**meta, "undefined_queries": int((~defined).sum())},
    )
