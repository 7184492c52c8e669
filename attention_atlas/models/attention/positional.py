"""Sinusoidal positional encoding, as the attention-pooling tutorial defines it.

``P[i, 2j] = sin(i / 10000^(2j/d))`` and ``P[i, 2j+1] = cos(i / 10000^(2j/d))``:
low columns turn fast, high columns slowly, like the low and high bits of a
binary counter.
"""

from __future__ import annotations

import torch

BASE = 10000.0


def sinusoidal(length: int, dim: int, base: float = BASE) -> torch.Tensor:
    """``P`` of shape ``[position, dim]``.

    >>> sinusoidal(3, 4)[0]
    tensor([0., 1., 0., 1.])
    """
    if length < 1 or dim < 1:
        raise ValueError(f"length and dim must be ≥ 1, got length={length}, dim={dim}")
    position = torch.arange(length, dtype=torch.float64).unsqueeze(1)  # [position, 1]
    freq = torch.pow(base, torch.arange(0, dim, 2, dtype=torch.float64) / dim)  # [ceil(dim/2)]
    angles = position / freq  # [position, ceil(dim/2)]
    P = torch.zeros(length, dim, dtype=torch.float64)
    P[:, 0::2] = torch.sin(angles)
    P[:, 1::2] = torch.cos(angles[:, : dim // 2])
    return P.float()


def binary_table(length: int, bits: int | None = None) -> torch.Tensor:
    """``[position, bit]``: the binary digits of 0..length-1, lowest bit first (the attention-pooling tutorial's analogy)."""
    bits = bits or max(1, (length - 1).bit_length())
    numbers = torch.arange(length).unsqueeze(1)
    return ((numbers >> torch.arange(bits)) & 1).float()
