"""The summaries' compiled pass (viz_core.fused) against float64 arithmetic, and its switch."""

import numpy as np
import pytest

from attention_atlas.viz_core import blockwise as bw
from attention_atlas.viz_core import fused


def exp2(x: np.ndarray) -> np.ndarray:
    """``fused._exp2`` of float32 ``x`` (≤ 0)."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    p, bits = np.empty_like(x), np.empty(x.shape, np.int32)
    fused._exp2(x, np.float32(0.0), p, bits)
    return p * bits.view(np.float32)


def test_its_exponential_is_within_a_float32_step_of_the_exact_one():
    x = np.linspace(-126, 0, 1_000_003, dtype=np.float32)
    exact = np.exp2(x.astype(np.float64))
    assert np.abs(exp2(x) / exact - 1).max() < 1.2e-7  # float32's step is 1.19e-7
    assert exp2(np.float32([0.0, -1.0, -10.0])).tolist() == [1.0, 0.5, 2.0**-10]
    assert exp2(np.float32([-126.5, -200.0, -1e30])).tolist() == [0.0, 0.0, 0.0]


def reference(s, start, first, causal, window, sink):
    """Float64: which keys each row reads; its e = 2^(s − top) over them (top: its max, or the sink
    where higher), Σe, Σe·(s − top) and Σe·|q − k|."""
    _, rows, width = s.shape
    q = start + np.arange(rows)[:, None]
    k = first + np.arange(width)[None, :]
    reads = np.ones((rows, width), bool)
    if causal:
        reads &= k <= q
    if window:
        reads &= k > q - window
    logits = np.where(reads, s.astype(np.float64), -np.inf)
    top = logits.max(-1, keepdims=True)
    if sink is not None:
        top = np.maximum(top, sink)
    e = np.exp2(logits - top)
    es = np.where(reads, e * np.where(reads, logits - top, 0), 0)
    return reads, e, e.sum(-1), es.sum(-1), (e * np.abs(q - k)).sum(-1)


@pytest.mark.parametrize(
    ("start", "first", "width", "causal", "window", "sink"),
    [
        (0, 0, 300, True, 0, None),
        (700, 0, 764, True, 0, 9.0),
        (512, 400, 176, True, 130, None),
        (0, 0, 900, False, 0, -3.0),
    ],
)
def test_exp_sums_equal_float64_arithmetic(start, first, width, causal, window, sink):
    rng = np.random.default_rng(start + width)
    s = rng.normal(0, 6, size=(3, 64, width)).astype(np.float32)
    s[1, :, ::7] -= 150  # some keys far below the top: their e is 0 or tiny
    s[2] = -np.abs(s[2])  # a head of negative logits only
    reads, want_e, want_total, want_es, want_dist = reference(s, start, first, causal, window, sink)
    cells = np.array([0, 1, 50, 51, 128, width], dtype=np.int64)  # of any widths, one of a key
    assert fused.MASKED == bw.MASKED  # what a cell no key is in holds, and a head with no sink
    sinks = np.full(3, bw.MASKED if sink is None else sink, np.float32)
    peaks, top = np.empty((3, 64, len(cells) - 1), np.float32), np.empty((3, 64), np.float32)
    total, es, dist = (np.empty(top.shape) for _ in range(3))
    got = s.copy()
    fused.exp_sums(got, start, first, causal, window, cells, sinks, peaks, top, total, es, dist)
    np.testing.assert_array_equal(peaks, np.maximum.reduceat(np.where(reads, s, bw.MASKED), cells[:-1], -1))
    np.testing.assert_array_equal(top, np.maximum(peaks.max(-1), sinks[:, None]))
    np.testing.assert_allclose(got, want_e, rtol=2e-6, atol=1e-30)
    assert (got[:, ~reads] == 0).all()  # the keys a row may not read weigh 0
    np.testing.assert_allclose(total, want_total, rtol=1e-6)
    np.testing.assert_allclose(es, want_es, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dist, want_dist, rtol=1e-5, atol=1e-30)


def test_the_switch_and_a_missing_numba_leave_the_summaries_on_numpy(monkeypatch):
    assert fused.kernel() is fused.exp_sums  # numba is a requirement
    for off in ("0", "off", " False "):
        monkeypatch.setenv(fused.NUMBA_VAR, off)
        assert fused.kernel() is None
    monkeypatch.setenv(fused.NUMBA_VAR, "1")
    assert fused.kernel() is fused.exp_sums
    monkeypatch.setattr(fused, "njit", None)
    assert fused.kernel() is None
    cap = bw.QKCapture(
        "m", [np.ones((2, 5, 4), np.float32)], [np.ones((1, 5, 4), np.float32)], [0.5], True,
        list("abcde"), [False] * 5,
    )
    group = bw._KeyGroup(cap, 0, slice(0, 2), 4)
    assert group.fused is None and group.run(2).sums[:, 0] == pytest.approx(np.log2(np.arange(1, 6)).sum())


def test_where_no_folder_can_take_the_cache_it_compiles_in_each_process(monkeypatch):
    """numba raises RuntimeError at ``cache=True`` when neither the package's folder nor the user's
    can be written: the kernels are then compiled without a cache, not lost."""
    asked = []

    def njit(**options):
        asked.append(options.get("cache", False))
        if options.get("cache"):
            raise RuntimeError("cannot cache function 'f': no locator available for file 'fused.py'")
        return lambda function: ("compiled", function)

    monkeypatch.setattr(fused, "njit", njit)
    assert fused._compiled(len) == ("compiled", len) and asked == [True, False]
