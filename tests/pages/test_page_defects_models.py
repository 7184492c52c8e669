"""Issue 17 under AppTest, on the pages that run the bundled and pretrained models: Couplets,
Translation, Transformer heads (items 4, 5, 6, 8, 11). Each test failed before its fix."""

from __future__ import annotations

import pytest
from markdown_it import MarkdownIt
from streamlit.testing.v1 import AppTest

from attention_atlas.models.registry import info
from attention_atlas.models.tasks.translation import tokenize
from attention_atlas.ui.widgets import plain
from tests.support import charts, page_runner

pytestmark = pytest.mark.slow  # loads the bundled weights and minilm
couplets = page_runner("app_pages/couplets.py", 120)
translation = page_runner("app_pages/translation.py", 180)
transformer = page_runner("app_pages/transformer.py", 300)
FRENCH = "[cliquez ici](http://example.com) **gras** `code` $x^2$ ![img](http://127.0.0.1:9/x.png)"


def headings(at: AppTest) -> list[str]:
    return [m.value for m in at.markdown if m.value.startswith("### ")]


def step_line(at: AppTest, model: str | None = None) -> list[str]:
    return [
        m.value for m in at.markdown if m.value.startswith("Writing character") and (model or "") in m.value
    ]


# -- item 4: user text in headings is shown as text --------------------------------------------------


def test_a_forced_french_sentence_is_a_heading_of_text_not_markdown():
    at = translation()
    at.text_input(key="translate_french").set_value(FRENCH)
    at = translation(at)
    (heading,) = headings(at)
    assert heading == "### " + plain(" ".join(tokenize(FRENCH)))  # the words the model was forced with
    assert "](" not in heading and "**" not in heading and "$x" not in heading


def test_markdown_in_an_upper_line_is_shown_as_typed():
    at = couplets()
    at.text_input(key="couplet_upper").set_value("**春**风")
    at = couplets(at)
    (heading,) = headings(at)
    assert heading.startswith("### " + plain("**春**风") + " → ") and "**春**" not in heading


# -- item 6: the step-through marks the character being written in bold, without asterisks -----------


def test_the_step_through_marks_the_current_character_in_bold():
    at = couplets()
    at.text_input(key="couplet_target").set_value("一行白鹭上青天")
    at = couplets(at)
    at.slider(key="couplet_step").set_value(7)
    at = couplets(at)
    (line,) = step_line(at)
    html = MarkdownIt("commonmark").render(line)  # the CommonMark emphasis rules, as Streamlit's parser
    assert "一行白鹭上青[<strong>天</strong>]" in html and "*" not in html, html


# -- item 8: what is shown is what is used ----------------------------------------------------------


def test_a_forced_french_sentence_cut_at_fifty_words_is_shown_cut():
    at = translation()
    at.text_input(key="translate_french").set_value(
        "je suis chez moi . " * 150
    )  # 600 words, 2,850 characters
    at = translation(at)
    assert any("only the first 50" in w.value for w in at.warning)
    (heading,) = headings(at)
    assert len(heading[4:].split()) == 50  # the 50 words the model was forced with, not the 600 typed


# -- item 5: a typed sentence survives a switch of model -------------------------------------------


def test_switching_the_model_keeps_the_typed_text_and_swaps_untouched_examples():
    def box(at: AppTest):  # by its label: the key was per model before
        return next(t for t in at.text_input if t.label == "text")

    at = transformer()
    assert box(at).value == info("minilm").example
    at.selectbox(key="tf_model").set_value("couplet-transformer")
    at = transformer(at)
    assert box(at).value == info("couplet-transformer").example  # not typed: the examples swap
    box(at).set_value("春风又绿江南岸")
    at = transformer(at)
    at.selectbox(key="tf_model").set_value("minilm")
    at = transformer(at)
    assert box(at).value == "春风又绿江南岸"  # typed: kept
    at.selectbox(key="tf_model").set_value("couplet-transformer")
    at = transformer(at)
    assert box(at).value == "春风又绿江南岸"


# -- item 11: counts agree; the step-through follows every model shown ------------------------------


def test_a_one_character_lower_line_is_one_character():
    at = couplets()
    at.text_input(key="couplet_target").set_value("天")
    at = couplets(at)
    assert any("has 1 character and" in w.value for w in at.warning)
    assert not any("1 characters" in w.value for w in at.warning)


def test_side_by_side_steps_through_each_model():
    at = couplets()
    at.toggle(key="couplet_both").set_value(True)
    at = couplets(at)
    at.slider(key="couplet_step").set_value(3)
    at = couplets(at)
    assert len(step_line(at, "couplet-rnn-additive")) == 1 and len(step_line(at, "couplet-rnn-dot")) == 1
    assert all("character **3**" in line for line in step_line(at))
    bars = [f for f in charts(at) if f["layout"].get("title", {}).get("text") == "where the decoder looked"]
    assert len(bars) == 2 and bars[0]["data"][0]["y"] != bars[1]["data"][0]["y"]
