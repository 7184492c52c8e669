"""The Transformer page's long-input mode under AppTest: refusals with the count and the limit, the
model view, head view overview and zoom window, statistics and queries-and-keys views, uploads."""

import json

import pytest
from streamlit.testing.v1 import AppTest

from tests.support import charts, page_runner

run = page_runner("app_pages/transformer.py", 300)
SENTENCE = "The cat sat on the mat because it was tired. "  # 11 tokens in minilm and in smollm2


def long_mode(model: str = "minilm") -> AppTest:
    at = run()
    if model != "minilm":
        at.selectbox(key="tf_model").set_value(model)
        at = run(at)
    at.toggle(key="tf_long").set_value(True)
    return run(at)


def with_text(at: AppTest, text: str) -> AppTest:
    at.text_area(key="tfl_text").set_value(text)
    return run(at)


def model_view(at: AppTest) -> dict:
    data = [json.loads(c.proto.json) for c in at.get("bidi_component")]
    return json.loads(next(d["figure"] for d in data if d.get("role") == "model"))


def titled(at: AppTest, start: str) -> list[dict]:
    return [f for f in charts(at) if (f["layout"].get("title") or {}).get("text", "").startswith(start)]


@pytest.fixture(scope="module")
def minilm_long():
    return long_mode()


def test_first_load_is_the_bundled_text_cut_to_whole_paragraphs_within_the_context(minilm_long):
    at = minilm_long
    text = at.text_area(key="tfl_text").value
    assert text.startswith("You are to do as I tell you.") and text.endswith((".", "!", "?"))
    count = next(c.value for c in at.caption if "tokens** of the 512" in c.value)
    assert 400 < int(count.split("**")[1].split()[0].replace(",", "")) <= 512
    assert not at.warning and model_view(at)["data"][1]["customdata"]["shape"] == "72, 2"


def test_over_the_context_says_the_count_and_the_limit_and_draws_nothing(minilm_long):
    at = with_text(minilm_long, SENTENCE * 55)  # 55 × 11 + 2 = 607 tokens
    assert not at.exception
    (warning,) = at.warning
    assert (
        "607 tokens" in warning.value and "at most 512" in warning.value and "nothing is cut" in warning.value
    )
    assert not at.get("plotly_chart") and not at.get("bidi_component")


def test_about_300_tokens_give_model_view_head_view_window_statistics_and_queries_keys(minilm_long):
    at = with_text(minilm_long, SENTENCE * 27)  # 299 tokens
    assert not at.warning
    assert any("299 tokens" in c.value for c in at.caption)
    grid = model_view(at)
    assert [t["type"] for t in grid["data"]] == ["heatmap", "scatter"]
    assert "max-pooled" in grid["data"][1]["hovertemplate"] and not grid["layout"].get("shapes")  # all done
    (overview,) = titled(at, "layer 3, head 0: 299 tokens")
    assert "every token" in overview["layout"]["title"]["text"]  # 299 < 512 cells: nothing pooled
    (window,) = titled(at, "layer 3, head 0: queries")
    assert "every token" in window["layout"]["title"]["text"] and window["data"][0]["y"][0].startswith(
        "85 · "
    )
    table = at.dataframe[0].value
    assert len(table) == 6 * 12 and set(table.columns) >= {
        "entropy (bits)",
        "mean distance",
        "special share",
        "pattern",
    }
    (qk,) = titled(at, "layer 3, head 0: 299 queries")
    assert [t["type"] for t in qk["data"]][:2] == ["scattergl", "scattergl"]
    top = at.dataframe[1].value
    assert len(top) == 10 and top["weight"].is_monotonic_decreasing


def test_another_head_and_window_and_query(minilm_long):
    at = with_text(minilm_long, SENTENCE * 27)
    at.slider(key="tfl_layer").set_value(5)
    at.selectbox(key="tfl_head").set_value("7")
    at.number_input(key="tfl_q0").set_value(250)
    at.number_input(key="tfl_k0").set_value(10)
    at.number_input(key="tfl_kn").set_value(20)
    at.number_input(key="tfl_query").set_value(12)
    at = run(at)
    assert titled(at, "layer 5, head 7: 299 tokens")
    (window,) = titled(at, "layer 5, head 7: queries 250–298 × keys 10–29")  # stops at the last token
    assert len(window["data"][0]["x"]) == 20 and len(window["data"][0]["y"]) == 49
    assert any("stops at the last token" in c.value for c in at.caption)
    assert "Query 12" in "".join(m.value for m in at.markdown)


def test_an_upload_that_is_not_utf8_is_refused_in_one_line():
    at = long_mode()
    at.file_uploader(key="tfl_file").set_value(("notes.txt", "café au lait".encode("latin-1"), "text/plain"))
    at = run(at)
    (warning,) = at.warning
    assert "notes.txt is not UTF-8" in warning.value and "\n" not in warning.value
    assert not at.get("plotly_chart")
    at.file_uploader(key="tfl_file").set_value(("notes.txt", (SENTENCE * 3).encode(), "text/plain"))
    at = run(at)
    assert not at.warning and any("35 tokens" in c.value for c in at.caption)
    assert any("Reading notes.txt" in c.value for c in at.caption)


def test_text_the_memory_estimate_refuses_up_front(minilm_long, monkeypatch):
    monkeypatch.setenv("ATLAS_MAX_CAPTURE_MB", "1")
    at = with_text(minilm_long, SENTENCE * 20)
    (error,) = at.error
    assert "222 tokens need about" in error.value and "the limit is 1 MB" in error.value
    assert not at.get("plotly_chart")


@pytest.mark.slow
def test_smollm2_at_about_1500_tokens_draws_every_view():
    at = run()
    at.selectbox(key="tf_model").set_value("smollm2")
    at.session_state["tfl_text"] = SENTENCE * 136  # 1,497 tokens, instead of the 2,042 of the first text
    at.toggle(key="tf_long").set_value(True)
    at = run(at)
    assert any("1,497 tokens** of the 8,192" in c.value for c in at.caption)
    grid = model_view(at)
    assert grid["data"][1]["customdata"]["shape"] == "270, 2"
    (overview,) = titled(at, "layer 15, head 0: 1,497 tokens, max-pooled to 512 × 512 cells")
    assert "reduced" in overview["layout"]["xaxis"]["title"]["text"]
    assert overview["data"][0]["x"][0].startswith("0–2 · ")  # three tokens a cell, named in the hover
    assert titled(at, "layer 15, head 0: queries 684–811 × keys 684–811")
    assert titled(at, "layer 15, head 0: 1,497 queries")
