"""Attention pooling as Nadaraya–Watson kernel regression (the attention-pooling tutorial).

``f(x) = Σ_i α(x, x_i) y_i`` with ``α = K((x - x_i)/h) / Σ_j K((x - x_j)/h)``. With the
Gaussian kernel this is exactly ``softmax(-(x - x_i)² / 2h²)``: attention whose
scoring function is the Gaussian one. The parametric version learns ``w = 1/h``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from attention_atlas.models.attention.scoring import masked_softmax

# Log-kernels of the scaled distance u = (x - x_i) / h; -inf means "outside the support".
_NEG_INF = float("-inf")
KERNELS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "gaussian": lambda u: -(u**2) / 2,
    "boxcar": lambda u: torch.where(u.abs() <= 1, 0.0, _NEG_INF),
    "epanechnikov": lambda u: torch.where(u.abs() < 1, torch.log1p(-(u**2).clamp(max=1 - 1e-12)), _NEG_INF),
    "constant": lambda u: torch.zeros_like(u),
}


def nw_weights(
    queries: torch.Tensor, keys: torch.Tensor, kernel: str = "gaussian", bandwidth: float = 1.0
) -> torch.Tensor:
    """Attention weights ``[query, key]``; a row with no key in the kernel's support is all 0."""
    if kernel not in KERNELS:
        raise KeyError(f"unknown kernel {kernel!r}; choose one of {sorted(KERNELS)}")
    if not bandwidth > 0:
        raise ValueError(f"bandwidth must be positive, got {bandwidth}")
    u = (queries.unsqueeze(1) - keys.unsqueeze(0)) / bandwidth  # [query, key]
    logk = KERNELS[kernel](u)
    return masked_softmax(logk, mask=torch.isfinite(logk))


def nw_estimate(weights: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """``f(x)`` per query; NaN where a query had no key to attend to."""
    est = weights @ values
    return torch.where(weights.sum(-1) > 0, est, torch.nan)


@dataclass(frozen=True)
class RegressionData:
    """Noisy samples of ``f(x) = 2 sin x + x^0.8`` (the attention-pooling tutorial's toy problem)."""

    x_train: torch.Tensor  # [key]
    y_train: torch.Tensor  # [key]
    x_test: torch.Tensor  # [query]
    y_truth: torch.Tensor  # [query]


def truth(x: torch.Tensor) -> torch.Tensor:
    return 2 * torch.sin(x) + x**0.8


def make_data(n_train: int = 50, n_test: int = 50, noise: float = 0.5, seed: int = 0) -> RegressionData:
    gen = torch.Generator().manual_seed(seed)
    x_train, _ = torch.sort(torch.rand(n_train, generator=gen) * 5)
    y_train = truth(x_train) + noise * torch.randn(n_train, generator=gen)
    x_test = torch.linspace(0, 5, n_test)
    return RegressionData(x_train, y_train, x_test, truth(x_test))


def _loo_weights(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    # Each training point attends to all the others (leave one out), so the kernel
    # width cannot collapse onto the point itself.
    n = x.shape[0]
    u = (x.unsqueeze(1) - x.unsqueeze(0)) * w  # [query, key]
    return masked_softmax(-(u**2) / 2, mask=~torch.eye(n, dtype=torch.bool))


def parametric_weights(queries: torch.Tensor, keys: torch.Tensor, w: float) -> torch.Tensor:
    """Gaussian attention with learned inverse width: ``softmax(-((x - x_i) w)² / 2)``."""
    return nw_weights(queries, keys, "gaussian", bandwidth=1.0 / abs(w))


def train_parametric(
    x: torch.Tensor,
    y: torch.Tensor,
    epochs: int = 20,
    lr: float = 0.5,
    w0: float = 1.0,
    on_epoch: Callable[[int, float], None] | None = None,
) -> tuple[float, list[float]]:
    """Learn ``w`` by gradient descent on the leave-one-out squared error.

    Returns the learned ``w`` and the loss after each epoch; ``on_epoch(epoch, loss)``
    lets a page draw a progress bar.
    """
    w = torch.tensor(float(w0), requires_grad=True)
    opt = torch.optim.SGD([w], lr=lr)
    losses = []
    for epoch in range(epochs):
        opt.zero_grad()
        pred = _loo_weights(x, w) @ y
        loss = ((pred - y) ** 2).sum() / 2
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
        if on_epoch:
            on_epoch(epoch, losses[-1])
    learned = float(w.detach())
    if not math.isfinite(learned) or learned == 0:
        raise ValueError(f"training diverged (w = {learned}); lower the learning rate")
    return learned, losses
