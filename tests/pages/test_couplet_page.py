"""The Couplets page under AppTest, with the bundled models."""

from __future__ import annotations

import pytest

from tests.support import charts, check_unknown_long_and_empty, page_runner

pytestmark = pytest.mark.slow  # loads the bundled weights
PAGE = "app_pages/couplets.py"
K = "couplet_"


run = page_runner(PAGE, 120)


def test_default_line_shows_a_seven_by_seven_heatmap_and_the_step_view():
    at = run()
    heat = charts(at)[0]["data"][0]
    assert heat["type"] == "heatmap"
    assert len(heat["x"]) == 7 and len(heat["y"]) == 7
    assert [x.split(" · ")[1] for x in heat["x"]] == list("两个黄鹂鸣翠柳")
    assert any("两个黄鹂鸣翠柳 →" in m.value for m in at.markdown)
    assert len(at.dataframe) == 1  # top candidates of the first step
    at.slider(key=K + "step").set_value(7)
    run(at)


def test_forced_target_is_shown_as_the_rows():
    at = run()
    at.text_input(key=K + "target").set_value("一行白鹭上青天")
    at = run(at)
    heat = charts(at)[0]["data"][0]
    assert [y.split(" · ")[1] for y in heat["y"]] == list("一行白鹭上青天")


def test_side_by_side_draws_both_models_and_their_difference():
    at = run()
    at.toggle(key=K + "both").set_value(True)
    at = run(at)
    figs = charts(at)
    titles = [f["layout"].get("title", {}).get("text") for f in figs[:2]]
    assert titles == ["couplet-rnn-additive", "couplet-rnn-dot"]
    assert any("Difference" in s.value for s in at.subheader)


def test_unknown_characters_long_and_empty_input():
    check_unknown_long_and_empty(run, K + "upper", "abc😀两个", "风" * 40, "first 32")
