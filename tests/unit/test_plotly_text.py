"""Tokens reach Plotly as text: its tick and hover labels read <b>, <a href> and <br> as markup."""

import numpy as np

from attention_atlas.viz_core.figures import grouped_bars, heatmap
from attention_atlas.viz_core.tokens import as_plotly_text

TOKENS = ["<b>春</b>", "<a href='http://127.0.0.1:9/'>x</a>", "a & b", "<br>"]


def test_markup_and_ampersands_become_entities():
    assert as_plotly_text(TOKENS) == [
        "&lt;b&gt;春&lt;/b&gt;",
        "&lt;a href='http://127.0.0.1:9/'&gt;x&lt;/a&gt;",
        "a &amp; b",
        "&lt;br&gt;",
    ]
    assert as_plotly_text(["两个", "the"]) == ["两个", "the"]  # plain text unchanged


def test_no_label_of_a_figure_carries_live_markup():
    n = len(TOKENS)
    figures = [heatmap(np.full((n, n), 1 / n), TOKENS, TOKENS), grouped_bars(TOKENS, {"w": np.ones(n)}, "x", "y")]
    for fig in figures:
        labels = [*fig.layout.xaxis.ticktext, *fig.layout.xaxis.tickvals, *fig.data[0].x]
        assert not any("<" in str(label) for label in labels)
        assert "&lt;b&gt;春&lt;/b&gt;" in fig.layout.xaxis.ticktext
