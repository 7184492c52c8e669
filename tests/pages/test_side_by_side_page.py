"""Two models side by side follow the single view's label rule (issue 27, item 1): on Couplets,
Translation and the Checkpoint inspector, each alignment keeps a label per position that fits in
the width the chart is drawn at: half a row when the two stand in columns, the whole row when
they are stacked because half a row is too little (an 18-character couplet, a 17-word sentence).

The fit is measured with this test's own rough text metrics (CJK 1 em, anything else 0.6 em, a
turned label a line of 1.2 em) on the chart's JSON, so it holds whatever rule the builders follow.
"""

from __future__ import annotations

import json
import unicodedata

import pytest
from streamlit.testing.v1 import AppTest

from tests.support import page_runner

pytestmark = pytest.mark.slow  # loads the bundled weights

ROW = 820  # px: a full-width chart at 1280 × 720 (viz_core.layout.PLOT_WIDTH)
COLUMN = (ROW - 16) / 2  # px: one of two Streamlit columns
CHROME = 150  # px of a chart's width that are not plot: y labels, colour bar, margins
LONG_COUPLET = "腾飞上铁，锐意改革谋发展，勇当千里马"  # 18 characters
LONG_SENTENCE = "My brother and I went to the old market yesterday to buy some fresh bread and cheese."


def em(label: str) -> float:
    return sum(1.0 if unicodedata.east_asian_width(c) in "WF" else 0.6 for c in label)


def heatmaps(at: AppTest) -> list[tuple[dict, float]]:
    """Each heatmap chart's figure with the width it is drawn at (in a column of two, or full)."""
    in_columns = {c.proto.spec for col in at.columns for c in col.get("plotly_chart")}
    found = []
    for chart in at.get("plotly_chart"):
        fig = json.loads(chart.proto.spec)
        if fig["data"] and fig["data"][0]["type"] == "heatmap":
            found.append((fig, COLUMN if chart.proto.spec in in_columns else ROW))
    return found


def check_key_labels(fig: dict, width: float) -> None:
    """Every key position labelled, at 10 px or more, each label within its slot of ``width``."""
    axis = fig["layout"]["xaxis"]
    n = len(axis["categoryarray"])
    assert len(axis["tickvals"]) == n, f"{len(axis['tickvals'])} of {n} key labels shown"
    size = axis["tickfont"]["size"]
    slot = (width - CHROME) / n
    assert size >= 10
    if axis.get("tickangle") == 0:
        assert max(em(t) for t in axis["ticktext"]) * size + 4 <= slot, (size, slot, width)
    else:  # turned by Plotly where they would overlap: each must fit in a line's height
        assert 1.2 * size <= slot, (size, slot, width)


def test_couplets_stack_an_18_character_line_and_keep_a_short_one_side_by_side():
    run = page_runner("app_pages/couplets.py", 120)
    at = run()
    at.toggle(key="couplet_both").set_value(True)
    at = run(at)
    short = heatmaps(at)[:2]
    assert [width for _, width in short] == [COLUMN, COLUMN]  # seven characters: room in a column
    at.text_input(key="couplet_upper").set_value(LONG_COUPLET)
    at = run(at)
    both = heatmaps(at)[:2]
    assert [f["layout"]["title"]["text"] for f, _ in both] == ["couplet-rnn-additive", "couplet-rnn-dot"]
    for fig, width in short + both:
        check_key_labels(fig, width)


def test_translation_side_by_side_keeps_every_word_of_a_17_word_sentence_readable():
    run = page_runner("app_pages/translation.py", 120)
    at = run()
    at.toggle(key="translate_both").set_value(True)
    at.text_input(key="translate_english").set_value(LONG_SENTENCE)
    at = run(at)
    both = heatmaps(at)[:2]
    assert len(both[0][0]["layout"]["xaxis"]["categoryarray"]) >= 17
    for fig, width in both:
        check_key_labels(fig, width)


def test_checkpoint_beside_the_bundled_model_keeps_every_label(tiny_rnn_checkpoint):
    run = page_runner("app_pages/checkpoint.py", 120)
    at = run()
    at.file_uploader(key="ckpt_file").set_value(
        ("tiny.safetensors", tiny_rnn_checkpoint.read_bytes(), "application/octet-stream")
    )
    at = run(at)
    at.text_input(key="ckpt_text_couplet-rnn").set_value(LONG_COUPLET)
    at = run(at)
    sides = heatmaps(at)[1:3]  # the upload's alignment first, then the two side by side
    assert len(sides) == 2
    for fig, width in sides:
        check_key_labels(fig, width)
