"""The layout rules that side-by-side figures share with the single view (issue 27, items 1 and 9).

Measured on the figures' own layout (margins, fonts, tick lists) with rough text metrics (a CJK
character 1 em, anything else 0.6 em, a line 1.2 em), so the checks hold whatever the builders do
inside, as long as what they draw fits.
"""

from __future__ import annotations

import unicodedata

import numpy as np
import pytest

from attention_atlas.viz_core.figures import heatmap, larger_ticks
from attention_atlas.viz_core.layout import column_width, every_label_shown, projector

COUPLET_18 = list("腾飞上铁，锐意改革谋发展，勇当千里马")
SENTENCE_17 = (
    "my brother and i went to the old market yesterday to buy some fresh bread and cheese . <eos>".split()
)
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
