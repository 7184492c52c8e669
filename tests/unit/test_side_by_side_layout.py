"""The layout rules that side-by-side figures share with the single view (issue 27, items 1 and 9).

Measured on the figures' own layout (margins, fonts, tick lists) with rough text metrics (a CJK
character 1 em, anything else 0.6 em, a line 1.2 em), so the checks hold whatever the builders do
inside, as long as what they draw fits.
"""

from __future__ import annotations

import unicodedata

import numpy as np
import pandas as pd
import pytest

from attention_atlas.viz_core.figures import (
    grouped_bars,
    heatmap,
    heatmap_row,
    larger_ticks,
    lines,
    nadaraya_watson,
    scatter_groups,
)
from attention_atlas.viz_core.layout import column_width, every_label_shown, projector

COUPLET_18 = list("腾飞上铁，锐意改革谋发展，勇当千里马")
SENTENCE_17 = [
    "my",
    "brother",
    "and",
    "i",
    "went",
    "to",
    "the",
    "old",
    "market",
    "yesterday",
    "to",
    "buy",
    "some",
    "fresh",
    "bread",
    "and",
    "cheese",
    ".",
    "<eos>",
]
CHROME = 150  # px of a chart's width that are not plot: y labels, colour bar, margins


def em(label: str) -> float:
    return sum(1.0 if unicodedata.east_asian_width(c) in "WF" else 0.6 for c in label)


def top_band(fig) -> float:
    """px the key labels (upright: a line; turned: their widest) and their axis title take above the plot."""
    axis = fig.layout.xaxis
    size = axis.tickfont.size
    widest = max(em(t) for t in axis.ticktext)
    labels = 1.2 * size if widest <= 1.0 else widest * size
    return labels + 1.2 * (axis.title.font.size or fig.layout.font.size)


@pytest.mark.parametrize("tokens", [COUPLET_18, SENTENCE_17], ids=["couplet", "sentence"])
@pytest.mark.parametrize("screen", ["plain", "projector"])
def test_a_title_stands_clear_of_the_key_labels_and_their_axis_title(tokens, screen):
    fig = larger_ticks(heatmap(np.eye(len(tokens)), tokens, tokens, title="couplet-rnn-additive"), 24)
    fig = projector(fig) if screen == "projector" else fig
    title = 1.2 * (fig.layout.title.font.size or fig.layout.font.size) + (fig.layout.title.pad.t or 0)
    room = min(top_band(fig), 180 + 30)  # turned labels longer than 180 px are Plotly's automargin's
    assert fig.layout.margin.t >= title + room, (fig.layout.margin.t, title, room)


def test_a_figure_planned_for_a_column_keeps_that_width_when_its_ticks_grow():
    width = column_width(2)
    fig = larger_ticks(heatmap(np.eye(7), list("两个黄鹂鸣翠柳"), list("两个黄鹂鸣翠柳"), width=width), 24)
    axis = fig.layout.xaxis
    slot = (width - CHROME) / 7
    assert every_label_shown(fig) and axis.tickfont.size * 1.0 + 4 <= slot, (axis.tickfont.size, slot)


def test_an_18_character_line_has_room_at_full_width_but_not_in_half_a_row():
    def build(width):
        return larger_ticks(heatmap(np.eye(18), COUPLET_18, COUPLET_18, width=width), 24)

    assert every_label_shown(build(820)) and not every_label_shown(build(column_width(2)))


def test_a_stacked_sentence_on_a_projector_keeps_a_label_on_every_row():
    """A translation's eight French words (rows) over SENTENCE_17 (columns) at full width, the figure
    as short as its rows ask: at the projector's 20 px, under the turned English words, every other
    row would be labelled in that height, so the figure grows taller instead."""
    french = ["le", "vieux", "frère", "est", "allé", "au", "marché", "."]
    fig = heatmap(np.ones((len(french), len(SENTENCE_17))), french, SENTENCE_17, width=820, title="a model")
    shown = projector(fig)
    assert shown.layout.yaxis.tickfont.size >= 20
    assert list(shown.layout.yaxis.ticktext) == french
    assert shown.layout.height > fig.layout.height


# -- item 9: the toolbar, the legend and the panels' tick marks -------------------------------------

TOOLBAR = 30  # px: Plotly's toolbar strip at a chart's top right, as drawn in chromium (25.6 px tall)


def legend_figures():
    x = np.linspace(0, 1, 5)
    frame = pd.DataFrame({"a": [0.1, 0.2], "b": [1.0, 2.0], "g": ["x", "y"], "n": ["one", "two"]})
    return {
        "lines": lines(x, {"one": x, "two": x**2}, "x", "y"),
        "lines, titled": lines(x, {"one": x, "two": x**2}, "x", "y", title="loss"),
        "bars": grouped_bars(list("两个黄鹂"), {"w": np.ones(4), "v": np.ones(4)}, "key", "weight"),
        "kernel regression": nadaraya_watson(x, x, x, x, {"gaussian kernel, h = 0.5": x}),
        "scatter": scatter_groups(frame, "a", "b", "g", ["n"]),
    }


@pytest.mark.parametrize("name", list(legend_figures()))
@pytest.mark.parametrize("screen", ["plain", "projector"])
def test_a_legend_above_the_plot_starts_under_the_toolbar_and_the_title(name, screen):
    fig = legend_figures()[name]
    fig = projector(fig) if screen == "projector" else fig
    legend, height = fig.layout.legend, fig.layout.height
    assert legend.yref == "container" and legend.yanchor == "top", (legend.yref, legend.yanchor)
    below = (1 - legend.y) * height  # px from the figure's top to the legend's top
    title = fig.layout.title
    needed = 1.2 * (title.font.size or fig.layout.font.size) + (title.pad.t or 0) if title.text else 0
    assert below >= max(TOOLBAR, needed), (below, TOOLBAR, needed)


def test_panels_side_by_side_draw_no_tick_marks_where_their_labels_are_hidden():
    panels = {name: np.full((8, 8), 1 / 8) for name in ("dot", "scaled_dot", "additive", "general")}
    fig = heatmap_row(panels, [f"q{i}" for i in range(8)], [f"k{i}" for i in range(8)])
    hidden = [a for a in [*fig.select_xaxes(), *fig.select_yaxes()] if a.showticklabels is False]
    assert hidden and all(a.ticks == "" for a in hidden)
    assert fig.layout.margin.t >= TOOLBAR + 1.2 * fig.layout.font.size  # first row's titles under the toolbar


def test_chinese_byte_pieces_stand_upright_and_readable_on_the_key_axis():
    """SmolLM2 splits most characters over byte pieces ('两(1/2)', '两(2/2)'): on the axis each is one
    em wide (the character, then 〃 for its other pieces), so they stand upright, every one labelled."""
    text = "两个黄鹂鸣翠柳，一行白鹭上青天"
    tokens = [
        f"{c}({k}/{n})" if n > 1 else c
        for c in text
        for n in [1 if c in "个，一上" else 2]
        for k in range(1, n + 1)
    ]
    fig = heatmap(np.full((len(tokens), len(tokens)), 1 / len(tokens)), tokens, tokens)
    axis = fig.layout.xaxis
    assert axis.tickangle == 0 and len(axis.tickvals) == len(tokens)
    assert axis.tickfont.size >= 12 and list(axis.ticktext[:3]) == ["两", "〃", "个"]
    assert all(em(t) <= 1.0 for t in axis.ticktext)
