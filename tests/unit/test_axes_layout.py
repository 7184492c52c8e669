"""Tick font and stride follow the token count and the plot's size; the model view uses the width
(issue 17, items 7 and the 512-position part of 11).

The checks measure the produced layouts with their own rough text metrics (a CJK character or emoji
is 1 em wide, anything else 0.6 em; a line of text needs 1.2 em), so they hold whatever rule the
builders follow inside, as long as the labels fit.
"""

import unicodedata

import numpy as np
import pytest

from attention_atlas.viz_core.figures import PLOT_WIDTH, heatmap, heatmap_row, larger_ticks
from attention_atlas.viz_core.model_view import model_view
from attention_atlas.viz_core.record import AttentionRecord

SENTENCE = ["[CLS]", "the", "cat", "sat", "on", "the", "mat", "because", "it", "was", "tired", ".", "[SEP]"]
COUPLET_7 = list("两个黄鹂鸣翠柳")
COUPLET_32 = list("春眠不觉晓处处闻啼鸟夜来风雨声花落知多少床前明月光疑是地上霜举头")
CHROME_X = 150  # px of a full-width chart that are not plot: y labels, colour bar, margins
CHROME_Y = 150  # px of a heatmap's height that are not plot: title, x labels, margins


def em(label: str) -> float:
    return sum(1.0 if unicodedata.east_asian_width(c) in "WF" else 0.6 for c in label)


def axes(fig, letter: str) -> list[dict]:
    layout = fig.to_plotly_json()["layout"]
    return [v for k, v in sorted(layout.items()) if k.startswith(letter + "axis") and v.get("tickvals")]


def font(fig, axis: dict) -> float:
    return (axis.get("tickfont") or {}).get("size") or fig.layout.font.size or 12


def check_x_fits(fig, width: int) -> None:
    """Each shown x label fits in the slots it stands for: across if horizontal, a line's height if turned."""
    for axis in axes(fig, "x"):
        n = len(axis["categoryarray"])
        stride = n / len(axis["tickvals"])
        lo, hi = axis.get("domain", [0, 1])
        slot = (hi - lo) * (width - CHROME_X) / n * stride
        size = font(fig, axis)
        angle = axis.get("tickangle", "auto")
        if angle == "auto":  # plotly turns labels that would overlap; they must still fit turned
            assert 1.2 * size <= slot, (size, slot)
        elif angle in (0, None):
            widest = max(em(t) for t in axis["ticktext"])
            assert widest * size + 4 <= slot, (axis["ticktext"], size, slot)
        else:
            assert abs(angle) == 90 and 1.2 * size <= slot, (angle, size, slot)


def check_y_fits(fig) -> None:
    for axis in axes(fig, "y"):
        n = len(axis["categoryarray"])
        stride = n / len(axis["tickvals"])
        lo, hi = axis.get("domain", [0, 1])
        assert 1.2 * font(fig, axis) <= (hi - lo) * (fig.layout.height - CHROME_Y) / n * stride


def test_512_tokens_are_thinned_to_a_readable_stride():
    tokens = [f"t{i}" for i in range(512)]
    fig = heatmap(np.full((512, 512), 1 / 512), tokens, tokens)
    check_x_fits(fig, PLOT_WIDTH)
    check_y_fits(fig)
    for axis in axes(fig, "x") + axes(fig, "y"):
        assert 16 <= len(axis["tickvals"]) <= 128  # thinned, yet still a label every few dozen positions
        assert font(fig, axis) >= 9


def test_a_32_character_couplet_gets_a_smaller_font_than_a_7_character_one():
    assert len(COUPLET_32) == 32

    def fig(line):
        return larger_ticks(heatmap(np.eye(len(line)), line, line), 24)

    short, long = fig(COUPLET_7), fig(COUPLET_32)
    assert font(short, short.layout.xaxis.to_plotly_json()) == 24
    assert font(long, long.layout.xaxis.to_plotly_json()) < 24
    assert font(long, long.layout.yaxis.to_plotly_json()) < 24
    check_x_fits(long, PLOT_WIDTH)
    check_y_fits(long)
    assert len(long.layout.xaxis.tickvals) == 32  # every character still labelled


def test_scoring_random_mode_labels_do_not_run_together():
    keys = [f"k{i}" for i in range(8)]
    queries = [f"q{i}" for i in range(8)]
    panels = {
        name: np.full((8, 8), 1 / 8)
        for name in ("dot", "scaled_dot", "additive", "general", "cosine", "gaussian")
    }
    check_x_fits(heatmap_row(panels, queries, keys, zmax=1.0), PLOT_WIDTH)


def test_all_heads_side_by_side_have_readable_key_labels():
    panels = {f"head {h}": np.full((13, 13), 1 / 13) for h in range(12)}
    fig = heatmap_row(panels, SENTENCE, SENTENCE, zmax=1.0)
    check_x_fits(fig, PLOT_WIDTH)
    assert len(fig.data) == 12


@pytest.mark.parametrize("width", [PLOT_WIDTH, 470])  # 470 px: the chart at 150 % zoom on 1400 × 900
def test_a_sentence_never_collides_along_x(width):
    fig = heatmap(np.full((13, 13), 1 / 13), SENTENCE, SENTENCE, width=width)
    check_x_fits(fig, width)
    check_y_fits(fig)


def test_model_view_of_30_by_9_uses_the_width():
    rec = AttentionRecord(
        np.full((30, 9, 12, 12), 1 / 12, dtype=np.float32), ["a"] * 12, ["b"] * 12, "self", "m"
    )
    fig = model_view(rec)
    assert fig.layout.yaxis.scaleanchor is None  # tiles are not held square inside a narrow strip
    tile_w = (PLOT_WIDTH - 80) / 9
    tile_h = (fig.layout.height - 130) / 30
    assert tile_w >= 70 and 20 <= tile_h <= tile_w and tile_w / tile_h <= 2.5
    small = AttentionRecord(
        np.full((3, 4, 7, 7), 1 / 7, dtype=np.float32), ["a"] * 7, ["b"] * 7, "cross", "m"
    )
    tall = model_view(small)  # a small grid keeps its tiles no taller than wide
    assert (tall.layout.height - 130) / 3 <= (PLOT_WIDTH - 80) / 4


@pytest.mark.parametrize("rows, cols", [(1, 1), (1, 6), (2, 3), (3, 4), (5, 2), (12, 1)])
@pytest.mark.parametrize("across, down", [(0.03, 0.03), (0.2, 0.0123), (20 / 617.4, 36 / 1187.5)])
def test_the_panel_grid_is_the_layout_make_subplots_writes(rows, cols, across, down):
    """heatmap_row writes its grid itself (make_subplots built a whole figure: a third of its time):
    the same axis domains and anchors, to the last bit, and the same panel titles, where there are
    fewer titles than cells and where one is empty."""
    from plotly.subplots import make_subplots

    from attention_atlas.viz_core.figures import _grid_layout

    titles = tuple(["dot", "", "注意力 head 3"] * 4)[: max(rows * cols - 1, 1)]
    fig = make_subplots(rows, cols, subplot_titles=titles, horizontal_spacing=across, vertical_spacing=down)
    expected = {k: v for k, v in fig.layout.to_plotly_json().items() if k != "template"}
    assert _grid_layout(rows, cols, titles, across, down) == expected


def test_long_key_labels_stand_upright_and_short_ones_side_by_side():
    """Issue 40 item 22: merged words at Plotly's own 30° overlapped each other and the axis title
    "key" above them. Labels too long to stand side by side are turned to read upwards (-90°), the
    room above the plot as tall as the longest; short ones stay side by side (0°)."""
    words = ["[CLS]", "unbelievably", ",", "the", "extraordinarily", "talkative", "ornithologists"]
    words += ["disagreed", "vehemently", "about", "photosynthesis", "yesterday", ".", "[SEP]"]
    n = len(words)
    fig = heatmap(np.full((n, n), 1 / n), words, words, title="layer 2, head 3")
    (x,) = axes(fig, "x")
    assert x["tickangle"] == -90
    size = font(fig, x)
    assert fig.layout.margin.t >= em("photosynthesis") * size  # the longest label fits above the plot
    short = ["the", "cat", "sat", "on", "the", "mat", "."]
    (x,) = axes(heatmap(np.full((7, 7), 1 / 7), short, short), "x")
    assert x["tickangle"] == 0
