"""The line view's data: every visible weight once, per head, with the tokens as text."""

import numpy as np
import pytest

from attention_atlas.viz_core.line_view import COLOURS, MAX_TOKENS, THRESHOLD, head_links, line_data
from attention_atlas.viz_core.record import AttentionRecord


def record(n: int = 5, layers: int = 2, heads: int = 3, kind: str = "self", seed: int = 0) -> AttentionRecord:
    w = np.random.default_rng(seed).random((layers, heads, n, n)) ** 4
    w /= w.sum(-1, keepdims=True)
    tokens = ["<img src=x onerror=alert(1)>", "春", "风", "the", "the"][:n] + [f"t{i}" for i in range(5, n)]
    return AttentionRecord(weights=w, query_tokens=tokens, key_tokens=tokens, kind=kind, model_id="test")


def test_links_are_exactly_the_weights_at_or_above_the_threshold():
    w = np.array([[0.5, 0.005, 0.495], [0.01, 0.0, 0.99]])
    assert head_links(w) == [[0, 0, 0.5], [0, 2, 0.495], [1, 0, 0.01], [1, 2, 0.99]]
    assert head_links(w, threshold=0.6) == [[1, 2, 0.99]]


def test_line_data_per_head_with_repeated_tokens_kept_apart():
    rec = record()
    data = line_data(rec, 1, [2, 0, 2])
    assert [h["head"] for h in data["heads"]] == [2, 0]
    assert [h["colour"] for h in data["heads"]] == list(COLOURS[:2])
    assert data["queries"] == data["keys"] and data["queries"][-2:] == ["the", "the"]  # one slot each
    assert data["queries"][0] == "<img src=x onerror=alert(1)>"  # plain text; the browser sets textContent
    for h in data["heads"]:
        w = rec.head(1, h["head"])
        assert len(h["links"]) == int((w >= THRESHOLD).sum())
        assert all(abs(x - w[q, k]) < 1e-4 for q, k, x in h["links"])
    assert data["self"] and not line_data(record(kind="cross"), 0, [0])["self"]


def test_out_of_range_heads_are_dropped_and_bad_layers_or_sizes_refused():
    assert [h["head"] for h in line_data(record(), 0, [1, 9, -1])["heads"]] == [1]
    with pytest.raises(ValueError, match="layer 5 is out of range"):
        line_data(record(), 5, [0])
    with pytest.raises(ValueError, match=f"up to {MAX_TOKENS} tokens"):
        line_data(record(n=MAX_TOKENS + 1, layers=1, heads=1), 0, [0])
