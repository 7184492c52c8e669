"""The Translation page under AppTest, with the bundled models."""

from __future__ import annotations

import json

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from attention_atlas.models.registry import load
from attention_atlas.models.tasks.translation import tokenize
from attention_atlas.ui.widgets import plain
from tests.support import PACKAGE, axis_tokens, charts, check_unknown_long_and_empty, page_runner, z_of

pytestmark = pytest.mark.slow  # loads the bundled weights
PAGE = "app_pages/translation.py"
K = "translate_"
MODELS = ("translate-gru-additive", "translate-lstm-dot")


run = page_runner(PAGE, 180)


def test_first_load_translates_the_default_and_shows_the_cost_comparison():
    at = run()
    heat = charts(at)[0]["data"][0]
    assert heat["type"] == "heatmap"
    assert axis_tokens(heat["x"]) == ["i'm", "home", ".", "<eos>"]
    assert axis_tokens(heat["y"])[-1] == "<eos>"
    assert any(m.value.startswith("### ") and len(m.value) > 4 for m in at.markdown)
    bundled, cost = (d.value for d in at.dataframe)
    assert list(bundled["model"]) == ["translate-gru-additive", "translate-lstm-dot"]
    assert bundled["test BLEU (greedy)"].iloc[0] >= 30
    # the three variants across, their eleven measures down: nothing scrolls sideways (issue 27, item 9)
    assert list(cost.columns) == ["measure", "GRU + additive", "GRU + scaled dot", "LSTM + scaled dot"]
    assert "training memory MB" in list(cost["measure"]) and cost.iloc[0, 1] == "7,848,354"
    assert len(charts(at)) >= 3  # the heatmap, the loss curves, the BLEU curves


def test_seed_sentence_button_forced_french_and_both_models():
    at = run()
    at.button(key=K + "ex_He's calm.").click()
    at = run(at)
    assert axis_tokens(charts(at)[0]["data"][0]["x"]) == ["he's", "calm", ".", "<eos>"]
    at.text_input(key=K + "french").set_value("Il est calme.")
    at = run(at)
    assert axis_tokens(charts(at)[0]["data"][0]["y"]) == ["il", "est", "calme", ".", "<eos>"]
    at.toggle(key=K + "both").set_value(True)
    at = run(at)
    titles = [f["layout"].get("title", {}).get("text") for f in charts(at)[:2]]
    assert titles == ["translate-gru-additive", "translate-lstm-dot"]


def test_unknown_chinese_long_and_empty_input():
    check_unknown_long_and_empty(run, K + "english", "I love 你 zyxxyq", "word " * 500, "first 50")


def test_both_models_show_their_difference_on_the_same_french():
    at = run()
    at.toggle(key=K + "both").set_value(True)
    at = run(at)
    diff = next(
        f for f in charts(at) if "−" in json.dumps(f["layout"].get("annotations", []), ensure_ascii=False)
    )
    shown = z_of(diff["data"][0])
    # the same French (the first model's translation) forced through both models, subtracted row by row
    french = next(m.value[4:] for m in at.markdown if m.value.startswith("### "))
    a, b = (load(m).run("I'm home.", french).records["cross"].head() for m in MODELS)
    assert shown.shape == a.shape == b.shape
    assert np.allclose(shown, a - b, atol=1e-3)
    assert np.abs(a - b).max() > 0.01  # two different models: the difference is not empty


# -- a forced French sentence: shown as text, and as the model was forced with it ------------------

FRENCH = "[cliquez ici](http://example.com) **gras** `code` $x^2$ ![img](http://127.0.0.1:9/x.png)"


def headings(at: AppTest) -> list[str]:
    return [m.value for m in at.markdown if m.value.startswith("### ")]


def test_a_forced_french_sentence_is_a_heading_of_text_not_markdown():
    at = run()
    at.text_input(key=K + "french").set_value(FRENCH)
    at = run(at)
    (heading,) = headings(at)
    assert heading == "### " + plain(" ".join(tokenize(FRENCH)))  # the words the model was forced with
    assert "](" not in heading and "**" not in heading and "$x" not in heading


def test_a_forced_french_sentence_cut_at_fifty_words_is_shown_cut():
    at = run()
    at.text_input(key=K + "french").set_value("je suis chez moi . " * 150)  # 600 words, 2,850 characters
    at = run(at)
    assert any("only the first 50" in w.value for w in at.warning)
    (heading,) = headings(at)
    assert len(heading[4:].split()) == 50  # the 50 words the model was forced with, not the 600 typed


def test_the_tutorials_four_sentences_are_drawn_only_while_their_expander_is_open():
    """Folded, they cost nothing (four charts a model on every rerun before); opened, each is drawn."""
    at = run()
    closed = len(charts(at))
    at.session_state[K + "seeds_" + MODELS[0]] = True  # what a click on the expander sets
    at = run(at)
    assert not at.exception
    assert len(charts(at)) == closed + 4
    assert any(m.value.startswith("**He's calm.** → ") for m in at.markdown)


def test_the_page_speaks_chinese():
    """In Chinese (the session's language): the labels, the translation's caption, the axes, the cost section."""
    import attention_atlas.ui.language  # noqa: F401  (registers the session's language with i18n)

    at = AppTest.from_file(PACKAGE / PAGE, default_timeout=180)
    at.session_state["lang"] = "zh"
    at = run(at)
    assert at.title[0].value == "🗼 翻译"
    assert at.toggle(key=K + "both").label == "两个模型并排"
    assert any(c.value.startswith("translate-gru-additive，贪心 · 对数概率 ") for c in at.caption)
    layout = charts(at)[0]["layout"]
    assert (
        layout["xaxis"]["title"]["text"] == "英语（键）"
        and layout["yaxis"]["title"]["text"] == "法语（查询）"
    )
    assert at.header[0].value == "加性还是点积：替换的代价是什么？"
    measures = at.dataframe[-1].value.iloc[:, 0].tolist()  # the comparison's rows, named in Chinese
    assert "注意力参数" in measures and "每步秒数（中位数）" in measures
    # how the benchmark ran, said in Chinese from its numbers (the machine's facts stay as measured)
    assert any(c.value.startswith("每个变体训练 300 步，每步 128 个句对（0.56 轮") for c in at.caption)


def test_the_forced_french_placeholder_reads_as_a_hint_in_both_languages():
    """Issue 40, item 21: the grey "Je suis chez moi." stayed in the empty box under any English
    sentence, and read as the target; it says "e.g." and what an empty box does."""
    import attention_atlas.ui.language  # noqa: F401  (registers the session's language with i18n)

    hint = run().text_input(key=K + "french").proto.placeholder
    assert hint.startswith("e.g. Je suis chez moi.") and "leave empty" in hint
    chinese = AppTest.from_file(PACKAGE / PAGE, default_timeout=180)
    chinese.session_state["lang"] = "zh"
    hint = run(chinese).text_input(key=K + "french").proto.placeholder
    assert hint.startswith("例如 Je suis chez moi.") and "留空" in hint
