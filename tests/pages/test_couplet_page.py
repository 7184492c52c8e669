"""The Couplets page under AppTest, with the bundled models."""

from __future__ import annotations

import pytest
from markdown_it import MarkdownIt
from streamlit.testing.v1 import AppTest

from attention_atlas.ui.widgets import plain
from tests.support import PACKAGE, charts, check_unknown_long_and_empty, page_runner

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


# -- user text shown as typed; the step-through; counts that agree -----------------------------------


def headings(at: AppTest) -> list[str]:
    return [m.value for m in at.markdown if m.value.startswith("### ")]


def step_line(at: AppTest, model: str | None = None) -> list[str]:
    return [
        m.value for m in at.markdown if m.value.startswith("Writing character") and (model or "") in m.value
    ]


def test_markdown_in_an_upper_line_is_shown_as_typed():
    at = run()
    at.text_input(key=K + "upper").set_value("**春**风")
    at = run(at)
    (heading,) = headings(at)
    assert heading.startswith("### " + plain("**春**风") + " → ") and "**春**" not in heading


def test_the_step_through_marks_the_current_character_in_bold():
    at = run()
    at.text_input(key=K + "target").set_value("一行白鹭上青天")
    at = run(at)
    at.slider(key=K + "step").set_value(7)
    at = run(at)
    (line,) = step_line(at)
    html = MarkdownIt("commonmark").render(line)  # the CommonMark emphasis rules, as Streamlit's parser
    assert "一行白鹭上青[<strong>天</strong>]" in html and "*" not in html, html


def test_a_one_character_lower_line_is_one_character():
    at = run()
    at.text_input(key=K + "target").set_value("天")
    at = run(at)
    assert any("has 1 character and" in w.value for w in at.warning)
    assert not any("1 characters" in w.value for w in at.warning)


def test_side_by_side_steps_through_each_model():
    at = run()
    at.toggle(key=K + "both").set_value(True)
    at = run(at)
    at.slider(key=K + "step").set_value(3)
    at = run(at)
    assert len(step_line(at, "couplet-rnn-additive")) == 1 and len(step_line(at, "couplet-rnn-dot")) == 1
    assert all("character **3**" in line for line in step_line(at))
    bars = [f for f in charts(at) if f["layout"].get("title", {}).get("text") == "where the decoder looked"]
    assert len(bars) == 2 and bars[0]["data"][0]["y"] != bars[1]["data"][0]["y"]


def test_the_page_speaks_chinese():
    """In Chinese (the session's language): the labels, the alignment caption and the heatmap's axes."""
    import attention_atlas.ui.language  # noqa: F401  (registers the session's language with i18n)

    at = AppTest.from_file(PACKAGE / PAGE, default_timeout=120)
    at.session_state["lang"] = "zh"
    at = run(at)
    assert at.title[0].value == "🏮 对联"
    assert (
        at.text_input(key=K + "upper").label == "上联"
        and at.slider(key=K + "beam").label == "束宽（1 = 贪心）"
    )
    assert any("，贪心：" in c.value and "的权重在对角线上" in c.value for c in at.caption)
    layout = charts(at)[0]["layout"]
    assert (
        layout["xaxis"]["title"]["text"] == "上联（键）"
        and layout["yaxis"]["title"]["text"] == "下联（查询）"
    )
    assert at.subheader[0].value == "逐步查看解码"


def test_a_run_made_for_an_english_visitor_tells_a_chinese_one_its_notices_in_chinese():
    """The models' runs are cached for every visitor: a line with spaces, too long and with letters,
    typed first on the English page, then on the Chinese one, gets its three warnings in Chinese."""
    import attention_atlas.ui.language  # noqa: F401  (registers the session's language with i18n)

    line = "两个 黄鹂鸣翠柳abc" + "山" * 40
    english = run()
    english.text_input(key=K + "upper").set_value(line)
    shown = [w.value for w in run(english).warning]
    assert any("Spaces in the upper line" in w for w in shown) and len(shown) == 3
    chinese = AppTest.from_file(PACKAGE / PAGE, default_timeout=120)
    chinese.session_state["lang"] = "zh"
    chinese = run(chinese)
    chinese.text_input(key=K + "upper").set_value(line)
    assert [w.value for w in run(chinese).warning] == [
        "上联中的空格已去掉：一个字就是一个词元。",
        "上联有 50 个字，只用前 32 个。",
        "上联中有 3 个字不在模型的词表中（abc）；模型把它们读作 \\<unk\\>。",
    ]


def test_the_forced_lower_lines_placeholder_reads_as_a_hint_in_both_languages():
    """Issue 40, item 21: the grey 一行白鹭上青天 stayed in the empty box under any upper line, and a
    student read it as the target; it says "e.g." and what an empty box does."""
    import attention_atlas.ui.language  # noqa: F401  (registers the session's language with i18n)

    at = run()
    at.text_input(key=K + "upper").set_value("春眠不觉晓")
    at = run(at)
    hint = at.text_input(key=K + "target").proto.placeholder
    assert hint.startswith("e.g. 一行白鹭上青天") and "leave empty" in hint
    chinese = AppTest.from_file(PACKAGE / PAGE, default_timeout=120)
    chinese.session_state["lang"] = "zh"
    hint = run(chinese).text_input(key=K + "target").proto.placeholder
    assert hint.startswith("例如 一行白鹭上青天") and "留空" in hint
