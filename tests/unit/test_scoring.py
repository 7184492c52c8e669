"""Scoring functions against hand computations, and the masked softmax."""

import math

import pytest
import torch

from attention_atlas.models.attention.scoring import (
    SCORERS,
    ScoringAttention,
    attend,
    init_params,
    masked_softmax,
    score,
)

Q = torch.tensor([[1.0, 2.0], [0.0, -1.0]])  # [query, d]
KEYS = torch.tensor([[3.0, 0.5], [-1.0, 1.0], [0.0, 0.0]])  # [key, d]


def by_hand(fn):
    return torch.tensor([[fn(q.tolist(), k.tolist()) for k in KEYS] for q in Q])


def dot(a, b):
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_dot_and_scaled_dot_match_hand_computation():
    torch.testing.assert_close(score("dot", Q, KEYS), by_hand(dot))
    torch.testing.assert_close(score("scaled_dot", Q, KEYS), by_hand(lambda q, k: dot(q, k) / math.sqrt(2)))


def test_cosine_uses_temperature_and_gaussian_uses_sigma():
    def cos(q, k):
        nq, nk = math.sqrt(dot(q, q)), math.sqrt(dot(k, k))
        return dot(q, k) / max(nq * nk, 1e-12) if nk > 0 else 0.0

    torch.testing.assert_close(
        score("cosine", Q, KEYS, temperature=0.5), by_hand(lambda q, k: cos(q, k) / 0.5)
    )
    sq = lambda q, k: sum((x - y) ** 2 for x, y in zip(q, k, strict=True))  # noqa: E731
    torch.testing.assert_close(
        score("gaussian", Q, KEYS, sigma=1.5),
        by_hand(lambda q, k: -sq(q, k) / (2 * 1.5**2)),
        atol=1e-5,
        rtol=1e-5,
    )


def test_additive_is_v_tanh_wq_q_plus_wk_k():
    W_q = torch.tensor([[1.0, 0.0], [0.5, -1.0], [0.0, 2.0]])  # [hidden, d_q]
    W_k = torch.tensor([[0.0, 1.0], [1.0, 1.0], [-1.0, 0.0]])  # [hidden, d_k]
    v = torch.tensor([1.0, -2.0, 0.5])

    def additive(q, k):
        hidden = [
            math.tanh(dot(wq, q) + dot(wk, k)) for wq, wk in zip(W_q.tolist(), W_k.tolist(), strict=True)
        ]
        return dot(v.tolist(), hidden)

    torch.testing.assert_close(score("additive", Q, KEYS, W_q=W_q, W_k=W_k, v=v), by_hand(additive))


def test_general_is_q_w_k_and_allows_different_sizes():
    W = torch.tensor([[1.0, 2.0, 0.0], [0.0, -1.0, 1.0]])  # [d_q=2, d_k=3]
    keys3 = torch.tensor([[1.0, 0.0, 2.0], [0.0, 1.0, 1.0]])
    expected = torch.tensor(
        [[dot(q, [dot(W[i].tolist(), k) for i in range(2)]) for k in keys3.tolist()] for q in Q.tolist()]
    )
    torch.testing.assert_close(score("general", Q, keys3, W=W), expected)


def test_learned_parameters_are_deterministic_from_seed():
    a = score("additive", Q, KEYS, seed=3)
    torch.testing.assert_close(a, score("additive", Q, KEYS, seed=3))
    assert not torch.allclose(a, score("additive", Q, KEYS, seed=4))
    assert set(init_params("general", 2, 5)) == {"W"}
    assert init_params("dot", 2, 2) == {}


@pytest.mark.parametrize("name", sorted(SCORERS))
def test_every_scorer_has_one_signature_and_batches(name):
    q, k = torch.randn(2, 3, 4, 5), torch.randn(2, 3, 6, 5)  # [batch, heads, query|key, d]
    assert score(name, q, k).shape == (2, 3, 4, 6)


def test_bad_names_and_shapes_are_refused_clearly():
    with pytest.raises(KeyError, match="unknown scoring function 'dott'"):
        score("dott", Q, KEYS)
    with pytest.raises(ValueError, match="one size, got 2 and 3"):
        score("dot", Q, torch.ones(2, 3))
    with pytest.raises(ValueError, match="temperature must be positive"):
        score("cosine", Q, KEYS, temperature=0)


def test_masked_softmax_rows_sum_to_one_and_masked_keys_are_exactly_zero():
    scores = torch.randn(3, 4, 6) * 10
    w = masked_softmax(scores, valid_lens=torch.tensor([2, 6, 1]))
    torch.testing.assert_close(w.sum(-1), torch.ones(3, 4))
    assert (w[0, :, 2:] == 0).all() and (w[2, :, 1:] == 0).all()
    assert (w[1] > 0).all()


def test_masked_softmax_per_query_lengths_and_boolean_mask_combine():
    scores = torch.zeros(1, 3, 4)
    w = masked_softmax(
        scores, valid_lens=torch.tensor([[1, 2, 4]]), mask=torch.tensor([True, True, False, True])
    )
    expected = torch.tensor([[[1, 0, 0, 0], [0.5, 0.5, 0, 0], [1 / 3, 1 / 3, 0, 1 / 3]]])
    torch.testing.assert_close(w, expected)


def test_fully_masked_row_is_zero_not_nan():
    w = masked_softmax(torch.randn(2, 3), mask=torch.tensor([[False] * 3, [True, False, True]]))
    assert torch.isfinite(w).all() and (w[0] == 0).all()
    torch.testing.assert_close(w[1].sum(), torch.tensor(1.0))


def test_identical_keys_give_uniform_weights_for_every_scorer():
    q = torch.tensor([[1.0, 0.0]])
    keys = torch.tensor([[1.0, 1.0]] * 3)  # the attention-pooling tutorial's example: weights are [1/3, 1/3, 1/3]
    for name in SCORERS:
        torch.testing.assert_close(masked_softmax(score(name, q, keys)), torch.full((1, 3), 1 / 3))


def test_attend_pools_values_and_module_returns_weights_not_state():
    values = torch.tensor([[1.0], [2.0], [3.0]])
    out, w = attend("dot", Q, KEYS, values)
    torch.testing.assert_close(out, w @ values)
    module = ScoringAttention("additive", 2, 2, hidden=4)
    _, w2 = module(Q, KEYS, values, valid_lens=torch.tensor([2]))
    assert (w2[..., 2] == 0).all() and len(list(module.parameters())) == 3
    assert not any(isinstance(v, torch.Tensor) for k, v in vars(module).items() if not k.startswith("_"))


def test_saturation_curve_matches_drawing_whole_vectors():
    """The Scoring page's "why divide by √d" curve draws only |q| and each key's component along q;
    it must agree with drawing every query and key in full and scoring them with the real scorers:
    the plain dot product's largest weight climbs towards one-hot, the scaled one stays put."""
    from attention_atlas.models.attention.demos import saturation

    dims, n_keys = [1, 16, 256], 8
    curves = saturation(dims, n_keys=n_keys, trials=4000, seed=3)
    gen = torch.Generator().manual_seed(5)
    for i, d in enumerate(dims):
        q = torch.randn(4000, 1, d, generator=gen)
        k = torch.randn(4000, n_keys, d, generator=gen)
        for name in ("dot", "scaled_dot"):
            full = float(torch.softmax(score(name, q, k), -1).amax(-1).mean())
            assert curves[name][i] == pytest.approx(full, abs=0.02), (name, d)
    assert curves["dot"][-1] > 0.85 > curves["dot"][0]
    assert max(curves["scaled_dot"]) - min(curves["scaled_dot"]) < 0.1  # |q|/√d is 1 ± noise at every d
    assert all(1 / n_keys < v < 1 for v in curves["scaled_dot"])
