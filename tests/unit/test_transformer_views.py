"""viz_core's Transformer views: merging, hiding, head statistics, rollout, flow, model view."""

import numpy as np
import plotly.io as pio
import pytest

from attention_atlas.viz_core import head_stats
from attention_atlas.viz_core.derive import groups_from_word_ids, hide_special, merge_words, special_share
from attention_atlas.viz_core.model_view import model_view, pool
from attention_atlas.viz_core.record import AttentionRecord
from attention_atlas.viz_core.stats import (
    attention_flow,
    head_table,
    induction_scores,
    offset_profile,
    rollout,
)


def shifted(n: int, offset: int) -> np.ndarray:
    """Every query attends to query + offset (clipped into range)."""
    w = np.zeros((n, n))
    w[np.arange(n), np.clip(np.arange(n) + offset, 0, n - 1)] = 1
    return w


def random_weights(shape, seed=0):
    s = np.random.default_rng(seed).normal(size=shape) * 2
    w = np.exp(s)
    return (w / w.sum(-1, keepdims=True)).astype(np.float32)


def pattern(w: np.ndarray) -> str:
    return str(head_stats.of_weights(w)["pattern"])


def test_pattern_labels_name_the_textbook_heads():
    n = 8
    sink = np.zeros((n, n))
    sink[:, 0] = 1
    assert pattern(shifted(n, -1)) == "previous token"
    assert pattern(np.eye(n)) == "diagonal"
    assert pattern(sink) == "first token / sink"
    assert pattern(np.full((n, n), 1 / n)) == "broad"
    mixed = np.full((n, n), 0.2 / (n - 2))
    mixed[:, :2] = 0.4  # neither one key's head nor spread over all of them
    assert pattern(mixed) == "mixed"


def test_head_table_has_one_row_per_head_with_statistics():
    w = np.stack([np.stack([np.eye(6), np.full((6, 6), 1 / 6)])])  # [1 layer, 2 heads, 6, 6]
    table = head_table(w, special=[True] + [False] * 5)
    assert tuple(table.columns) == head_stats.COLUMNS
    assert list(table["pattern"]) == ["diagonal", "broad"]
    assert table["entropy"].tolist() == pytest.approx([0.0, np.log2(6)])
    assert table["mean_distance"].iloc[0] == 0
    assert table["special_share"].tolist() == pytest.approx([1 / 6, 1 / 6])
    assert table["diagonal_share"].tolist() == pytest.approx([1, 1 / 6])
    assert table["previous_share"].tolist() == pytest.approx([0, 1 / 6])


def test_offset_profile_peaks_where_the_head_looks():
    offsets, profile = offset_profile(shifted(10, -1)[None, None])
    assert offsets[np.argmax(profile[0, 0])] == -1


def test_induction_score_finds_the_copying_head():
    period, n = 5, 11  # a bos, then two copies of a 5-token block
    w = np.zeros((n, n))
    w[:, 0] = 1
    for q in range(1 + period, n):
        w[q] = 0
        w[q, q - period + 1] = 1
    scores = induction_scores(np.stack([np.stack([w, shifted(n, 0)])]), period, offset=1)
    assert scores[0, 0] == pytest.approx(1.0) and scores[0, 1] == 0


def test_rollout_of_identity_is_identity_and_rows_stay_distributions():
    n = 5
    assert np.allclose(rollout(np.eye(n)[None, None].repeat(3, 0)), np.eye(n))
    w = random_weights((4, 3, n, n))
    r = rollout(w)
    np.testing.assert_allclose(r.sum(-1), 1, atol=1e-5)
    expected = np.eye(n)
    for layer in w.mean(1):
        expected = (0.5 * np.eye(n) + 0.5 * layer) @ expected
    np.testing.assert_allclose(r, expected, atol=1e-5)


def test_flow_through_one_layer_is_the_edge_capacity():
    w = random_weights((1, 2, 4, 4))
    a = 0.5 * np.eye(4) + 0.5 * w.mean(1)[0]
    np.testing.assert_allclose(attention_flow(w), a, atol=1e-5)


def test_flow_is_bounded_by_the_narrowest_layer():
    w = np.stack([shifted(4, 0)[None], shifted(4, -1)[None]])  # layer 2 copies the previous position
    flow = attention_flow(w, residual=0.0)
    assert flow[3, 2] == pytest.approx(1.0) and flow[3, 3] == 0


def record_with_pieces():
    tokens = ["[CLS]", "un", "##believ", "##able", "cat", "[SEP]"]
    return AttentionRecord(
        random_weights((2, 2, 6, 6)),
        tokens,
        tokens,
        "self",
        "demo",
        meta={
            "query_word_ids": [None, 0, 0, 0, 1, None],
            "key_word_ids": [None, 0, 0, 0, 1, None],
            "query_special": [True, False, False, False, False, True],
            "key_special": [True, False, False, False, False, True],
        },
    )


def test_groups_keep_specials_apart():
    assert groups_from_word_ids([None, 0, 0, 1, None, None]) == [[0], [1, 2], [3], [4], [5]]


def test_merge_words_sums_key_pieces_and_averages_query_pieces():
    rec = record_with_pieces()
    merged = merge_words(rec)
    assert merged.key_tokens == ["[CLS]", "unbelievable", "cat", "[SEP]"]
    w = rec.weights
    np.testing.assert_allclose(merged.weights[..., 0, 1], w[..., 0, 1:4].sum(-1), rtol=1e-5)
    np.testing.assert_allclose(merged.weights[..., 1, 2], w[..., 1:4, 4].mean(-1), rtol=1e-5)
    np.testing.assert_allclose(merged.weights.sum(-1), 1, atol=1e-5)


def test_hide_special_drops_them_renormalises_and_reports_their_share():
    rec = record_with_pieces()
    share = special_share(rec)
    np.testing.assert_allclose(share, rec.weights[..., [0, 5]].sum(-1).mean(-1), rtol=1e-5)
    hidden = hide_special(rec)
    assert hidden.key_tokens == ["un", "##believ", "##able", "cat"]
    np.testing.assert_allclose(hidden.weights.sum(-1), 1, atol=1e-5)
    assert merge_words(hidden).key_tokens == ["unbelievable", "cat"]


def test_pool_keeps_rows_summing_to_one():
    w = random_weights((2, 3, 100, 100))
    pooled = pool(w, 32)
    assert pooled.shape == (2, 3, 32, 32)
    np.testing.assert_allclose(pooled.sum(-1), 1, atol=1e-4)


def test_model_view_of_30_by_9_heads_at_512_tokens_stays_small():
    n = 512
    tokens = [str(i) for i in range(n)]
    uniform = np.broadcast_to(
        np.float32(1 / n), (30, 9, n, n)
    )  # the payload is one byte a cell whatever the values
    rec = AttentionRecord(uniform, tokens, tokens, "self", "demo")
    fig = model_view(rec)
    assert len(pio.to_json(fig, validate=False)) < 2_000_000
    heat, picks = fig.data
    assert heat.z.dtype == np.uint8 and len(picks.x) == 30 * 9
