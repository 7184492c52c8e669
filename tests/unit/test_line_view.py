"""The line view's data: every visible weight once, per head, with the tokens as text."""

import numpy as np
import pytest

from attention_atlas.viz_core.line_view import (
    COLOURS,
    MAX_TOKENS,
    THRESHOLD,
    head_colours,
    head_links,
    line_data,
)
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


def luminance(colour: str) -> float:
    """WCAG's relative luminance of ``#rrggbb``."""
    c = np.array([int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)])
    c = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    return float(c @ [0.2126, 0.7152, 0.0722])


@pytest.mark.parametrize("n", [1, 2, 6, 7, 12, 16, 32])
def test_every_head_gets_its_own_colour_readable_on_a_light_and_a_dark_page(n):
    """The head view's boxes: every head of the model a colour (BertViz's ten cycle past ten heads),
    none of them black or yellow: each at least 2:1 against white and against black."""
    colours = head_colours(n)
    assert len(colours) == n == len(set(colours))
    for colour in colours:
        y = luminance(colour)
        assert (1.05 / (y + 0.05) >= 2) and ((y + 0.05) / 0.05 >= 2), colour
    assert head_colours(6) == list(COLOURS[:6])  # Okabe–Ito's where they suffice


def test_colours_given_by_head_stay_with_their_head():
    colours = head_colours(3)
    data = line_data(record(), 0, [2, 0], colours=colours)
    assert [h["colour"] for h in data["heads"]] == [colours[2], colours[0]]
