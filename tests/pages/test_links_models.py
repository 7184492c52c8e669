"""Links that reproduce a view on the model pages (issue 14): Transformer heads and Translation.

The Corpus page's search links to the Transformer page with ``model``, ``text``, ``layer``,
``head`` and ``kind``; a link must open that head of that text."""

import pytest

from tests.pages.test_links import open_link, rerun, widget
from tests.support import charts

pytestmark = pytest.mark.slow  # loads minilm, the couplet Transformer and the translation models
TEXT = "The dog chased the ball across the yard."


def test_a_transformer_link_opens_that_head_of_that_text():
    link = {"text": TEXT, "layer": "4", "head": "7", "merge": "1", "tab": "Head statistics"}
    at = open_link("transformer", link)
    assert not at.warning, [w.value for w in at.warning]
    assert widget(at, "tf_text").value == TEXT and widget(at, "tf_merge").value is True
    assert widget(at, "tf_layer").value == 4 and widget(at, "tf_head").value == "7"
    assert "layer 4, head 7" in charts(at)[1]["layout"]["title"]["text"]
    assert dict(at.query_params) == link
    widget(at, "tf_head").set_value("average")
    at = rerun(at)
    assert at.query_params["head"] == "average" and at.query_params["text"] == TEXT


def test_a_link_reopens_the_masked_token():
    """The Mask a token tab keeps the clicked token in the link (a fresh browser masked the middle
    token instead before)."""
    link = {"text": "The quick brown fox jumps over the lazy dog.", "tab": "Mask a token", "masked": "4"}
    at = open_link("transformer", link)
    assert not at.warning, [w.value for w in at.warning]
    assert any("token 4·fox masked" in s.value for s in at.subheader), [s.value for s in at.subheader]
    assert dict(at.query_params) == link


def test_a_corpus_search_hit_opens_the_couplet_transformers_cross_attention():
    link = {"model": "couplet-transformer", "text": "春风得意马蹄疾", "layer": "2", "head": "3", "kind": "cross"}
    at = open_link("transformer", link)
    assert not at.warning, [w.value for w in at.warning]
    assert widget(at, "tf_kind").value == "cross" and widget(at, "tf_layer").value == 2
    assert "layer 2, head 3" in charts(at)[1]["layout"]["title"]["text"]


def test_a_bad_transformer_link_opens_with_defaults_and_one_notice():
    at = open_link("transformer", {"model": "gpt-9", "layer": "99", "head": "<b>x</b>", "text": "a" * 10_001})
    notices = [w.value for w in at.warning if w.value.startswith("This link's")]
    assert len(notices) == 1 and "\n" not in notices[0]
    for words in ("“gpt-9” is unknown", "layer 99 is out of range (0–5)", "text is longer than 10,000"):
        assert words in notices[0].replace("\\", ""), notices[0]
    assert "<b>" not in notices[0]
    assert widget(at, "tf_model").value == "minilm" and widget(at, "tf_head").value == "0"
    assert charts(at)


def test_a_translation_link_round_trips():
    link = {"model": "translate-lstm-dot", "text": "He's calm.", "beam": "4"}
    at = open_link("translation", link)
    assert not at.warning, [w.value for w in at.warning]
    assert widget(at, "translate_model").value == "translate-lstm-dot" and widget(at, "translate_beam").value == 4
    assert dict(at.query_params) == link
    widget(at, "translate_both").set_value(True)
    at = rerun(at)
    assert at.query_params["both"] == "1" and at.query_params["text"] == "He's calm."
    bad = open_link("translation", {"model": "google", "beam": "0"})
    assert len([w for w in bad.warning if w.value.startswith("This link's")]) == 1
    assert widget(bad, "translate_beam").value == 1


def test_a_corpus_link_opens_that_sample_head_and_tab():
    link = {"sample": "english", "n": "100", "layer": "2", "head": "5", "tab": "Search"}
    at = open_link("corpus", link)
    assert not [w.value for w in at.warning if w.value.startswith("This link's")]
    assert widget(at, "corpus_layer").value == 2 and widget(at, "corpus_head").value == 5
    assert at.session_state["corpus_tab"] == "Search" and widget(at, "corpus_token").value
    bad = open_link("corpus", {"sample": "wikipedia", "layer": "99"})
    notices = [w.value for w in bad.warning if w.value.startswith("This link's")]
    assert len(notices) == 1 and "“wikipedia” is unknown" in notices[0]


def test_a_watch_learn_link_sets_the_race_and_its_time():
    at = open_link("watch_learn", {"mode": "Race: additive vs dot", "seconds": "60"})
    assert widget(at, "learn_mode").value == "Race: additive vs dot" and widget(at, "learn_seconds").value == 60
    bad = open_link("watch_learn", {"seconds": "45"})
    assert any("seconds “45” is not on offer" in w.value for w in bad.warning)
    assert widget(bad, "learn_seconds").value == 120


def test_a_checkpoint_link_opens_the_demo_with_its_input():
    at = open_link("checkpoint", {"demo": "1", "text": "白日依山尽"})
    assert not [w.value for w in at.warning if w.value.startswith("This link's")]
    assert any(m.label == "architecture" for m in at.metric)  # the exported demo model is loaded
    assert "白" in str(charts(at)[0]["data"][0]["x"])
    assert at.query_params["demo"] == "1" and at.query_params["text"] == "白日依山尽"
