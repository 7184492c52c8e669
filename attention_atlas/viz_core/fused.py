"""One compiled pass over a block of logits for the every-head summaries (``blockwise._KeyGroup``).

numpy makes a pass over memory for each step of a row's softmax sums: the masks, the max in each
thumbnail cell, the exponential, Σe, Σe·s for the entropy, Σe·|query − key| for the mean distance.
Here the loops of one row do them all while the row sits in the core's cache, and write each ``e``
over its logit (the statistics that read a few keys, and the thumbnails' pooling, stay in numpy).

- **Compiled by numba** (``cache=True``: once per installation, then loaded). ``ATLAS_NUMBA=0``,
  or numba missing, leaves the summaries on numpy's passes: the same numbers to float32 rounding.
- **Its own exponential.** numba's ``exp`` is one call per number (no vector loop); ``_exp2`` is 2^x
  for x ≤ 0 as a degree-6 polynomial on the fraction times 2^floor built from its bits, which the
  compiler vectorises: within 8e-8 of the exact value (numpy's ``exp2``: 1e-7); below 2⁻¹²⁶, 0.
- Sums run in float32 over runs of ``RUN`` keys (in any order: ``fastmath`` lets the compiler split
  them over vector lanes), then in float64.

``kernel()`` is the compiled ``exp_sums`` (or None). This module is imported only when the
summaries run (numba's import: 0.2 s).
"""

from __future__ import annotations

import os

import numpy as np

try:
    from numba import njit
except ImportError:  # the summaries stay on numpy's passes
    njit = None

NUMBA_VAR = "ATLAS_NUMBA"
RUN = 256  # keys summed in float32 before the float64 total
LOWEST = np.float32(-126.0)  # below: 0 (2^x would be subnormal)
MASKED = np.float32(-1e30)  # a cell no key of a row is in (blockwise.MASKED)
_FRACTION = np.linspace(0, 1, 20001)
# 2^f on [0, 1), least squares in relative error; lowest power first
_C0, _C1, _C2, _C3, _C4, _C5, _C6 = (
    np.float32(c) for c in np.polynomial.polynomial.polyfit(_FRACTION, 2.0**_FRACTION, 6, w=2.0**-_FRACTION)
)


def _compiled(function):
    """``function`` compiled once per installation (numba's cache), or as it is without numba;
    where no folder can take the cache (read-only package and home), compiled in each process."""
    if njit is None:
        return function
    try:
        return njit(cache=True, fastmath=True, nogil=True)(function)
    except RuntimeError:  # numba: "cannot cache function …: no locator available"
        return njit(fastmath=True, nogil=True)(function)


@_compiled
def _exp2(row, m, p, bits):
    """2^(row − m) for row ≤ m: ``p`` (the fraction's power) times ``bits`` read as float32
    (2^floor). Loops from 0 (a loop that starts elsewhere is not vectorised)."""
    for j in range(row.shape[0]):
        x = row[j] - m
        clipped = max(x, LOWEST)
        n = np.floor(clipped)
        f = clipped - n
        power = ((((((_C6 * f + _C5) * f + _C4) * f + _C3) * f + _C2) * f + _C1) * f + _C0)
        p[j] = power if x >= LOWEST else np.float32(0.0)
        bits[j] = (np.int32(n) + np.int32(127)) << np.int32(23)


@_compiled
def _run_sums(row, m, p, scale, offset):
    """Σe, Σe·(s − m) and Σe·|offset − key| over one run of keys, each ``e`` written over its logit."""
    z = np.float32(0.0)
    es = np.float32(0.0)
    d = np.float32(0.0)
    for j in range(row.shape[0]):
        e = p[j] * scale[j]
        z += e
        es += e * (row[j] - m)
        d += e * np.float32(abs(offset - j))
        row[j] = e
    return z, es, d


@_compiled
def _top_key(keys):
    """The largest of float32 bits ``keys`` (int32) in the order of their floats: an integer max,
    which the compiler vectorises (a float max it does not)."""
    top = np.int32(-2147483648)
    for j in range(keys.shape[0]):
        top = max(top, _ordered(keys[j]))
    return top


@_compiled
def _ordered(bits):
    """Float32 ``bits`` as an int32 in the order of the floats (negative ones' 31 low bits flipped);
    its own inverse."""
    return bits ^ ((bits >> np.int32(31)) & np.int32(0x7FFFFFFF))


@_compiled
def _cell_maxima(row, keys, a, b, cells, peaks, one):
    """Each cell's max of ``row`` over the keys ``a:b`` a row reads (``MASKED`` where none) into
    ``peaks``; the largest. ``keys`` is ``row``'s bits; ``one`` an int32 for a bit cast."""
    top = MASKED
    for c in range(cells.shape[0] - 1):
        c0, c1 = max(cells[c], a), min(cells[c + 1], b)
        peak = MASKED
        if c0 < c1:
            one[0] = _ordered(_top_key(keys[c0:c1]))
            peak = one.view(np.float32)[0]
        peaks[c] = peak
        top = max(top, peak)
    return top


@_compiled
def exp_sums(s, start, first, causal, window, cells, sinks, peaks, top, total, ent, dist):
    """Rows ``start…`` of ``s`` ``[heads, rows, keys first…]`` (logits in base 2) over the keys each
    reads (``window`` 0: none): each row's max in each cell between ``cells`` (block columns) into
    ``peaks`` ``[heads, rows, cells]``, its ``top`` (the largest, or the head's sink logit where
    higher); ``e = 2^(s − top)`` written over ``s`` (0 elsewhere); and per row (float64) ``total`` Σe,
    ``ent`` Σe·(s − top) and ``dist`` Σe·|query − key|."""
    heads, rows, width = s.shape
    keys = s.view(np.int32)
    p = np.empty(width, np.float32)
    bits = np.empty(width, np.int32)
    scale = bits.view(np.float32)
    one = np.empty(1, np.int32)
    for h in range(heads):
        for r in range(rows):
            q = start + r
            b = min(width, q + 1 - first) if causal else width
            a = max(0, q - window + 1 - first) if window > 0 else 0
            row = s[h, r]
            m = max(_cell_maxima(row, keys[h, r], a, b, cells, peaks[h, r], one), sinks[h])
            top[h, r] = m
            _exp2(row[a:b], m, p[a:b], bits[a:b])
            zt, et, dt = 0.0, 0.0, 0.0
            for c in range(a, b, RUN):
                c1 = min(c + RUN, b)
                z, es, d = _run_sums(row[c:c1], m, p[c:c1], scale[c:c1], q - first - c)
                zt += z
                et += es
                dt += d
            row[:a] = 0
            row[b:] = 0
            total[h, r], ent[h, r], dist[h, r] = zt, et, dt


def enabled() -> bool:
    """Whether ``ATLAS_NUMBA`` allows the compiled pass (anything but 0, off, false or no)."""
    return os.environ.get(NUMBA_VAR, "").strip().lower() not in ("0", "off", "false", "no")


def kernel():
    """The compiled ``exp_sums``, or None: numba missing or ``ATLAS_NUMBA=0``."""
    return exp_sums if njit is not None and enabled() else None
