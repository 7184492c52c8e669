"""``models.capture_points``: one recorder, named points, per thread, no hook left behind; the
three reporters (the HF attention function, our MultiHeadAttention, value-projection taps)."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

from attention_atlas.models import capture_points as cp
from attention_atlas.models.attention.multihead import MultiHeadAttention

CPU = torch.device("cpu")


def mha(seed: int = 0) -> MultiHeadAttention:
    torch.manual_seed(seed)
    return MultiHeadAttention(8, 2).eval()


def test_multihead_attention_reports_its_projected_queries_and_keys():
    m = mha()
    x = torch.randn(1, 5, 8)
    with torch.no_grad(), cp.recording(cp.QUERIES, cp.KEYS) as rec:
        m(x, x, x)
    q, k = rec[cp.QUERIES][m], rec[cp.KEYS][m]
    assert q.shape == k.shape == (2, 5, 4)  # [heads, seq, d_head]
    assert torch.equal(q, m.q_proj(x).view(5, 2, 4).transpose(0, 1).detach())
    with torch.no_grad():
        m(x, x, x)  # no recording open: nothing kept, nothing raised
    assert list(rec[cp.QUERIES]) == [m]


def test_points_are_named_and_a_recording_keeps_only_its_own():
    with pytest.raises(ValueError, match="unknown capture points \\['query'\\]"), cp.recording("query"):
        pass
    m = mha()
    x = torch.randn(1, 3, 8)
    with torch.no_grad(), cp.recording(cp.KEYS) as rec:
        m(x, x, x)
    assert set(rec[cp.KEYS]) == {m} and rec.get(cp.QUERIES) == {}
    with pytest.raises(KeyError, match="did not ask for 'queries'"):
        rec[cp.QUERIES]


def test_a_site_reported_twice_keeps_the_last_report():
    m = mha()
    a, b = torch.randn(1, 3, 8), torch.randn(1, 4, 8)
    with torch.no_grad(), cp.recording(cp.QUERIES) as rec:
        m(a, a, a)
        m(b, b, b)
    assert rec[cp.QUERIES][m].shape == (2, 4, 4)


def test_taps_are_removed_when_the_last_recording_that_needs_them_closes():
    lin = torch.nn.Linear(4, 4)
    tap = cp.Tap(lin, cp.VALUES, 0)
    with cp.recording(cp.VALUES, taps=[tap]) as outer:
        with cp.recording(cp.VALUES, taps=[tap]) as inner:  # the same hook, counted twice
            assert len(lin._forward_hooks) == 1
            lin(torch.ones(1, 2, 4))
        assert len(lin._forward_hooks) == 1 and cp.hooks_installed() == 1  # the outer still needs it
        lin(torch.zeros(1, 2, 4))
    assert len(lin._forward_hooks) == 0 and cp.hooks_installed() == 0
    assert torch.equal(inner[cp.VALUES][0], lin(torch.ones(1, 2, 4))[0].detach())
    assert torch.equal(outer[cp.VALUES][0], lin(torch.zeros(1, 2, 4))[0].detach())
    with pytest.raises(RuntimeError, match="boom"), cp.recording(cp.VALUES, taps=[tap]):
        raise RuntimeError("boom")
    assert len(lin._forward_hooks) == 0 and cp.active() is None


def test_a_recording_sees_only_its_own_threads_forwards():
    """Thread A records with a tap on a shared module while thread B runs the same module: A's
    recording holds A's input only, B (which records nothing) gets nothing, no error either side."""
    lin = torch.nn.Linear(4, 4)
    opened, ran = threading.Event(), threading.Event()
    seen: dict = {}

    def a():
        with cp.recording(cp.VALUES, taps=[cp.Tap(lin, cp.VALUES, "v")]) as rec:
            opened.set()
            ran.wait(10)  # B's forward runs while A's hook is installed
            lin(torch.ones(1, 1, 4))
        seen["a"] = rec[cp.VALUES]["v"]

    def b():
        opened.wait(10)
        seen["b"] = cp.active()
        lin(torch.full((1, 1, 4), 7.0))
        ran.set()

    threads = [threading.Thread(target=a), threading.Thread(target=b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert seen["b"] is None
    assert torch.equal(seen["a"], lin(torch.ones(1, 1, 4))[0].detach())
    assert len(lin._forward_hooks) == 0


def test_value_norms_leave_no_hook_even_when_the_text_is_refused(tiny_hf_folders):
    from attention_atlas.models.adapters.hf import HFAdapter, InputError
    from attention_atlas.models.adapters.value_norms import _get, layout, value_norms

    adapter = HFAdapter("tiny-encoder", tiny_hf_folders["encoder"], CPU)
    layers, value_path, _ = layout(adapter)
    norms = value_norms(adapter, "the cat sat on the mat")
    assert norms.shape[:2] == (adapter.n_layers, adapter.n_heads) and np.isfinite(norms).all()
    with pytest.raises(InputError):
        value_norms(adapter, "   ")
    assert all(not _get(layer, value_path)._forward_hooks for layer in layers)
    assert cp.hooks_installed() == 0


def test_the_hf_attention_function_reports_every_layer(tiny_hf_folders):
    from attention_atlas.models.adapters import capture
    from attention_atlas.models.adapters.hf import HFAdapter

    adapter = HFAdapter("tiny-encoder", tiny_hf_folders["encoder"], CPU)
    ids = adapter.encode("the cat sat").ids
    store = capture.capture_ids(adapter, ids)
    assert sorted(store) == list(range(adapter.n_layers))
    q, k, scaling, masked, _ = store[0]
    assert (
        isinstance(q, np.ndarray) and q.dtype == np.float32 and q.shape[:2] == (adapter.n_heads, ids.shape[1])
    )
    assert k.shape == q.shape and scaling == pytest.approx(q.shape[-1] ** -0.5) and masked is False
    assert cp.active() is None
