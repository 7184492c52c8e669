"""Masks, multi-head attention, positional encoding, Nadaraya–Watson pooling and the device helper."""

import math

import pytest
import torch

from attention_atlas.models.attention import kernel_regression as pooling
from attention_atlas.models.attention import masks
from attention_atlas.models.attention.multihead import MultiHeadAttention
from attention_atlas.models.attention.positional import binary_table, sinusoidal
from attention_atlas.models.device import DeviceError, describe, pick_device


def test_causal_mask_hides_the_future():
    m = masks.causal_mask(4)
    assert m.tolist() == [[j <= i for j in range(4)] for i in range(4)]


def test_local_window_and_strided_masks():
    assert masks.local_window_mask(5, window=1)[2].tolist() == [False, True, True, True, False]
    assert masks.strided_mask(7, stride=3)[6].tolist() == [True, False, False, True, False, False, True]
    for m in (masks.local_window_mask(6, window=0), masks.strided_mask(6, stride=4)):
        assert m.diagonal().all()  # nobody is left with nothing to attend to


def test_padding_mask_from_valid_lengths():
    m = masks.padding_mask(torch.tensor([2, 4]), 4)
    assert m.shape == (2, 1, 4)
    assert m[0, 0].tolist() == [True, True, False, False] and m[1, 0].all()


def test_bad_mask_parameters_are_refused():
    with pytest.raises(ValueError, match="stride must be ≥ 1"):
        masks.strided_mask(4, stride=0)
    with pytest.raises(ValueError, match="window must be ≥ 0"):
        masks.local_window_mask(4, window=-1)


def test_relative_position_bias_depends_only_on_clipped_offset():
    rpb = masks.RelativePositionBias(num_heads=2, max_distance=2)
    b = rpb(5, 5)  # [heads, query, key]
    assert b.shape == (2, 5, 5)
    assert torch.equal(b[:, 0, 1], b[:, 3, 4])  # same offset +1, same bias
    assert torch.equal(b[:, 0, 3], b[:, 0, 4])  # +3 and +4 both clip to +2
    assert not torch.equal(b[:, 1, 0], b[:, 0, 1])  # direction matters


def _torch_pair(embed=8, heads=2, seed=0):
    torch.manual_seed(seed)
    ref = torch.nn.MultiheadAttention(embed, heads, batch_first=True).eval()
    return ref, MultiHeadAttention.from_torch(ref).eval()


def test_multihead_weights_equal_torch_per_head_for_self_and_cross_attention():
    ref, ours = _torch_pair()
    x, memory = torch.randn(2, 5, 8), torch.randn(2, 7, 8)
    for q, kv in ((x, x), (x, memory)):
        out_ref, w_ref = ref(q, kv, kv, average_attn_weights=False)
        out, w = ours(q, kv, kv)
        assert w.shape == (2, 2, 5, kv.shape[1])  # [batch, heads, query, key]
        torch.testing.assert_close(w, w_ref)
        torch.testing.assert_close(out, out_ref)


def test_multihead_causal_and_padding_masks_match_torch():
    ref, ours = _torch_pair(seed=1)
    x = torch.randn(2, 6, 8)
    lens = torch.tensor([6, 3])
    pad = ~masks.padding_mask(lens, 6)[:, 0]  # torch: True = ignore
    causal = ~masks.causal_mask(6)
    _, w_ref = ref(x, x, x, key_padding_mask=pad, attn_mask=causal, average_attn_weights=False)
    _, w = ours(x, x, x, valid_lens=lens, mask=masks.causal_mask(6))
    torch.testing.assert_close(w, w_ref)
    assert (w[1, :, :, 3:] == 0).all() and (w.triu(1) == 0).all()


def test_multihead_bias_and_head_count_checks():
    ours = MultiHeadAttention(8, 2)
    x = torch.randn(1, 4, 8)
    _, plain = ours(x, x, x)
    _, biased = ours(x, x, x, bias=masks.RelativePositionBias(2)(4, 4))
    assert not torch.allclose(plain, biased)
    torch.testing.assert_close(biased.sum(-1), torch.ones(1, 2, 4))
    with pytest.raises(ValueError, match="not divisible"):
        MultiHeadAttention(10, 3)


def test_sinusoidal_encoding_equals_the_seed_formula():
    length, d = 50, 32
    P = sinusoidal(length, d)
    for i in (0, 1, 17, 49):
        for j in range(d // 2):
            angle = i / 10000 ** (2 * j / d)
            assert P[i, 2 * j].item() == pytest.approx(math.sin(angle), abs=1e-6)
            assert P[i, 2 * j + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)


def test_sinusoidal_odd_dimension_and_bad_sizes():
    assert sinusoidal(4, 5).shape == (4, 5)
    with pytest.raises(ValueError, match="≥ 1"):
        sinusoidal(0, 8)


def test_similarity_of_positions_depends_only_on_offset():
    P = sinusoidal(40, 64).double()
    S = P @ P.T
    torch.testing.assert_close(S[3, 8], S[20, 25])


def test_binary_table_counts():
    assert binary_table(8).tolist()[5] == [1.0, 0.0, 1.0]  # 5 = 101, lowest bit first


def test_gaussian_nadaraya_watson_matches_the_formula():
    x = torch.tensor([0.0, 1.0, 2.5])
    keys, values = torch.tensor([0.0, 1.0, 3.0]), torch.tensor([1.0, 2.0, 4.0])
    w = pooling.nw_weights(x, keys, "gaussian", bandwidth=0.7)
    for i, xq in enumerate(x.tolist()):
        k = [math.exp(-(((xq - xi) / 0.7) ** 2) / 2) for xi in keys.tolist()]
        assert w[i].tolist() == pytest.approx([v / sum(k) for v in k], abs=1e-6)
    est = pooling.nw_estimate(w, values)
    assert est[0].item() == pytest.approx(
        sum(a * b for a, b in zip(w[0].tolist(), values.tolist(), strict=True))
    )


def test_compact_kernels_leave_far_queries_undefined_and_constant_is_the_mean():
    keys, values = torch.tensor([0.0, 0.5, 4.0]), torch.tensor([1.0, 3.0, 5.0])
    for kernel in ("boxcar", "epanechnikov"):
        w = pooling.nw_weights(torch.tensor([0.2, 2.0]), keys, kernel, bandwidth=1.0)
        assert (w[0, 2] == 0) and w[0].sum().item() == pytest.approx(1.0)
        assert (w[1] == 0).all() and torch.isnan(pooling.nw_estimate(w, values)[1])
    box = pooling.nw_weights(torch.tensor([0.2]), keys, "boxcar", 1.0)
    assert box[0, :2].tolist() == pytest.approx([0.5, 0.5])
    epa = pooling.nw_weights(torch.tensor([0.0]), keys, "epanechnikov", 1.0)
    assert epa[0, :2].tolist() == pytest.approx([1 / 1.75, 0.75 / 1.75])
    const = pooling.nw_weights(torch.tensor([9.0]), keys, "constant", 1.0)
    assert pooling.nw_estimate(const, values).item() == pytest.approx(3.0)


def test_parametric_training_lowers_the_loss_and_reports_every_epoch():
    data = pooling.make_data(seed=0)
    seen = []
    w, losses = pooling.train_parametric(
        data.x_train, data.y_train, epochs=10, on_epoch=lambda e, _loss: seen.append(e)
    )
    assert seen == list(range(10)) and losses[-1] < losses[0] and w > 1.0


def test_device_helper_prefers_override_and_refuses_missing_devices(monkeypatch):
    monkeypatch.setenv("ATLAS_DEVICE", "cpu")
    assert pick_device().type == "cpu" and describe(pick_device()).startswith("CPU")
    if not torch.cuda.is_available():
        with pytest.raises(DeviceError, match="no CUDA GPU"):
            pick_device("cuda")
    with pytest.raises(DeviceError, match="not a device name"):
        pick_device("quantum")
    monkeypatch.delenv("ATLAS_DEVICE")
    expected = "cuda" if torch.cuda.is_available() else pick_device().type
    assert pick_device().type == expected


def test_thread_count_is_set_from_the_environment(monkeypatch):
    before = torch.get_num_threads()
    try:
        monkeypatch.setenv("ATLAS_THREADS", "1")
        pick_device("cpu")
        assert torch.get_num_threads() == 1
        monkeypatch.setenv("ATLAS_THREADS", "zero")
        with pytest.raises(DeviceError, match="whole number"):
            pick_device("cpu")
    finally:
        torch.set_num_threads(before)
