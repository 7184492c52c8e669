"""viz_core.head_stats: the one definition of the head statistics (row sums, counts, the pattern)."""

import numpy as np
import pytest

from attention_atlas.viz_core import head_stats as hs


def random_weights(shape, seed=0):
    w = np.exp(np.random.default_rng(seed).normal(size=shape) * 2)
    return (w / w.sum(-1, keepdims=True)).astype(np.float32)


def brute_force(w: np.ndarray, special: np.ndarray) -> dict[str, float]:
    """Each statistic of one ``[query, key]`` head, written out from its definition."""
    q, k = w.shape
    rows = range(q)
    entropy = np.mean([-sum(x * np.log2(x) for x in w[i] if x > 0) for i in rows])
    distance = np.mean([sum(w[i, j] * abs(i - j) for j in range(k)) for i in rows])
    on = {o: [w[i, i + o] for i in rows if 0 <= i + o < k] for o in (-1, 0)}
    return {
        "entropy": entropy,
        "mean_distance": distance,
        "special_share": np.mean([w[i, special].sum() for i in rows]),
        "previous_share": np.mean(on[-1]) if on[-1] else 0.0,
        "diagonal_share": np.mean(on[0]) if on[0] else 0.0,
        "first_share": np.mean(w[:, 0]),
    }


@pytest.mark.parametrize("shape", [(9, 9), (5, 11), (11, 5), (1, 1), (1, 4)])
def test_every_statistic_is_its_definition_for_self_and_cross_attention(shape):
    w = random_weights(shape)
    special = np.zeros(shape[1], dtype=bool)
    special[[0, -1]] = True
    got = hs.head_row(hs.of_weights(w, special))
    want = brute_force(w.astype(np.float64), special)
    assert list(got) == [*hs.NAMES, "pattern"]
    for name in hs.NAMES:
        assert got[name] == pytest.approx(want[name], abs=1e-6), name


def test_row_sums_of_blocks_add_up_to_the_whole():
    w = random_weights((2, 3, 40, 40))
    whole = hs.row_sums(w)
    parts = hs.row_sums(w[..., :13, :], 0) + hs.row_sums(w[..., 13:, :], 13)
    np.testing.assert_allclose(parts, whole, rtol=1e-6)


def test_offsets_count_only_the_rows_whose_key_exists():
    counts = hs.row_counts(np.array([7, 1, 5]), np.array([7, 1, 3]))
    at = {name: i for i, name in enumerate(hs.NAMES)}
    assert counts[:, at["previous_share"]].tolist() == [6, 0, 3]
    assert counts[:, at["diagonal_share"]].tolist() == [7, 1, 3]
    assert counts[:, at["entropy"]].tolist() == [7, 1, 5]


def test_the_pattern_rule_thresholds_and_ties():
    def named(**values):
        full = {"previous_share": 0.0, "diagonal_share": 0.0, "first_share": 0.0, "entropy": 0.0, **values}
        return hs.PATTERNS[int(hs.pattern_codes(full, 16))]

    assert named(diagonal_share=hs.SHARE) == "diagonal"
    assert named(previous_share=0.5, first_share=0.5) == "previous token"  # equal shares: the first named
    assert named(first_share=0.49, entropy=hs.BROAD * 4) == "broad"  # log2(16) = 4 bits at most
    assert named(first_share=0.49, entropy=hs.BROAD * 4 - 0.01) == "mixed"


def test_a_statistic_has_exactly_one_form():
    with pytest.raises(ValueError, match="exactly one form"):
        hs.Statistic("x", "x", surprise=True, offset=1)
    with pytest.raises(ValueError, match="exactly one form"):
        hs.Statistic("x", "x")
    assert ("layer", "head", *hs.NAMES, "pattern") == hs.COLUMNS and set(hs.LABELS) == set(hs.NAMES)
