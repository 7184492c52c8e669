"""The Transformer page's 'Compare two inputs' and 'Mask a token' tabs under AppTest, with minilm:
charts drawn, their numbers those of the adapter run directly, bad input a one-line message."""


import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from attention_atlas.ui.compare import align, aligned_difference, mean_abs, row_change
from tests.support import PACKAGE, chart, page_runner, z_of

PAGE = "app_pages/transformer.py"
TEXT = "The cat sat on the mat because it was tired."
run_page = page_runner(PAGE, 300)
COMPARE, MASK = "Compare two inputs", "Mask a token"


def run(at: AppTest | None = None, tab: str | None = None) -> AppTest:
    """The page, its tab ``tab`` opened the way a link opens it (the two tabs draw only when open)."""
    if at is None:
        at = AppTest.from_file(PACKAGE / PAGE, default_timeout=300)
        tab = tab or COMPARE
    if tab:
        at.query_params["tab"] = tab
    return run_page(at)



@pytest.fixture(scope="module")
def minilm():
    from attention_atlas.models.registry import load

    return load("minilm", "cpu")


@pytest.fixture(scope="module")
def first_load():
    return run()


def test_compare_tab_starts_with_one_word_changed_and_matches_the_adapter(first_load, minilm):
    at = first_load
    assert at.text_input(key="tf_cmp_text").value == "The dog sat on the mat because it was tired."
    assert any("13 of 13 positions" in m.value and "cat｜dog" in m.value for m in at.markdown)
    a = minilm.run(TEXT).records["self"]
    b = minilm.run("The dog sat on the mat because it was tired.").records["self"]
    al = align(a.query_tokens, b.query_tokens)
    grid = mean_abs(aligned_difference(a.weights, b.weights, al, al))
    shown = z_of(chart(at, "tf_cmp_grid")["data"][0])
    assert shown.shape == (6, 12) and np.allclose(shown, grid, rtol=2e-3, atol=1e-6)
    diff = chart(at, "tf_cmp_diff")["data"][0]
    top = np.unravel_index(np.argmax(grid), grid.shape)  # the open head: the one that differs most
    assert np.allclose(z_of(diff), a.weights[top] - b.weights[top], atol=2e-3)
    assert "2 · cat｜dog" in diff["y"]


def test_changing_the_second_text_aligns_an_insertion(first_load):
    at = first_load
    at.text_input(key="tf_cmp_text").set_value("The big cat sat on the mat because it was tired.")
    at = run(at)
    line = next(m.value for m in at.markdown if "positions of the first input" in m.value)
    assert "13 of 13 positions of the first input line up with 13 of 14" in line
    assert any("second: 2·big" in c.value for c in at.caption)
    diff = chart(at, "tf_cmp_diff")["data"][0]
    assert len(diff["y"]) == 13 and not any("big" in y for y in diff["y"])


def test_html_in_the_second_text_is_shown_as_text(first_load):
    at = first_load
    at.text_input(key="tf_cmp_text").set_value("<b>The</b> cat sat on the **mat**")
    at = run(at)
    left = next(c.value for c in at.caption if c.value.startswith("Left out"))
    assert "\\<" in left and "<b>" not in left  # escaped for Markdown: shown as typed
    assert not any("**mat**" in m.value for m in at.markdown)


def test_empty_second_text_is_one_line_message(first_load):
    at = first_load
    at.text_input(key="tf_cmp_text").set_value("   ")
    at = run(at)
    assert any(i.value == "Type a second text to compare with the first." for i in at.info)
    assert not any(c.proto.id.endswith("-tf_cmp_grid_chart") for c in at.get("plotly_chart"))


def test_mask_tab_offers_each_position_and_its_change_matches_the_adapter(first_load, minilm):
    at = run(first_load, MASK)
    pills = at.get("button_group")[0]
    assert pills.key == "tf_mask_token" and pills.value == 6  # the middle token, "mat"
    options = [o.content for o in pills.proto.options]
    assert options == ["the₁", "cat", "sat", "on", "the₅", "mat", "because", "it", "was", "tired", "."]
    pills.set_value(1)  # the first "the": Streamlit tells options apart by label, so labels differ
    at = run(at)
    assert any("token 1·the masked" in h.value for h in at.subheader)
    pills = at.get("button_group")[0]
    pills.set_value(2)
    at = run(at)
    before = minilm.run(TEXT).records["self"].weights
    after = minilm.run_masked(TEXT, 2).records["self"].weights
    grid = row_change(before, after, [2])
    shown = z_of(chart(at, "tf_mask_grid")["data"][0])
    assert np.allclose(shown, grid, rtol=2e-3, atol=1e-6) and shown.min() > 0
    pair = chart(at, "tf_mask_pair")
    assert "2 · cat｜[MASK]" in pair["data"][0]["y"]
    top = at.dataframe[-1].value
    assert len(top) == 10 and top["change (TV)"].iloc[0] == pytest.approx(grid.max(), rel=1e-5)
    assert any("replaced by \\[MASK\\]" in c.value for c in at.caption)  # as text, not a link


def test_a_piece_of_a_word_is_offered_as_a_piece_and_a_whole_word_first():
    """Issue 40 item 16: 'tor' of 'tortoise' was offered, first and titled, as if it were a word."""
    at = AppTest.from_file(PACKAGE / PAGE, default_timeout=300)
    at.query_params["text"] = "The hare and the tortoise raced."
    at = run(at, MASK)
    pills = at.get("button_group")[0]
    options = [o.content for o in pills.proto.options]
    assert options[4:7] == ["tor (of tortoise)", "to (of tortoise)", "ise (of tortoise)"]
    assert pills.value == 4  # the middle of the whole words: the, hare, and, the, raced, .
    pills.set_value(6)
    at = run(at)
    assert any("token 6·to (of tortoise) masked" in h.value for h in at.subheader)


def test_mask_with_pad_instead(first_load, minilm):
    at = run(first_load, MASK)
    at.radio(key="tf_mask_with_minilm").set_value("pad")
    at = run(at)
    after = minilm.run_masked(TEXT, 2, "pad").records["self"].weights
    grid = row_change(minilm.run(TEXT).records["self"].weights, after, [2])
    assert np.allclose(z_of(chart(at, "tf_mask_grid")["data"][0]), grid, rtol=2e-3, atol=1e-6)
    assert "2 · cat｜[PAD]" in chart(at, "tf_mask_pair")["data"][0]["y"]


def test_a_second_text_over_the_limit_is_cut_with_one_line():
    at = run()
    at.text_input(key="tf_cmp_text").set_value("The dog sat. " * 800)  # 10,400 characters
    at = run(at)
    assert any("the box keeps the first 10,000" in w.value for w in at.warning)
    assert any("attention is shown for the first 512" in c.value for c in at.caption)
    assert chart(at, "tf_cmp_grid")


def test_couplet_transformer_cross_attention_in_both_tabs(bundled_couplet_transformer):
    at = run()
    at.selectbox(key="tf_model").set_value("couplet-transformer")
    at = run(at)
    at.radio(key="tf_kind").set_value("cross")
    at = run(at)
    lines = [m.value for m in at.markdown if "positions of the first input" in m.value]
    assert len(lines) == 2 and "黄｜白" in lines[1]  # rows: the lower lines written; keys: the upper lines
    at = run(at, MASK)
    pills = at.get("button_group")[0]
    assert [o.content for o in pills.proto.options] == list("两个黄鹂鸣翠柳")
    pills.set_value(2)
    at = run(at)
    model = bundled_couplet_transformer
    result = model.run("两个黄鹂鸣翠柳")
    masked = model.run_masked("两个黄鹂鸣翠柳", 2, target=result.output)
    grid = row_change(result.records["cross"].weights, masked.records["cross"].weights, [])
    assert np.allclose(z_of(chart(at, "tf_mask_grid")["data"][0]), grid, rtol=2e-3, atol=1e-6)
    assert any("\\<unk\\> stands in" in c.value for c in at.caption)


@pytest.mark.slow
def test_smollm2_masks_with_its_pad_token():
    at = run()
    at.selectbox(key="tf_model").set_value("smollm2")
    at = run(at)
    assert any("13 of 13" in m.value or "11 of 11" in m.value for m in at.markdown)
    at = run(at, MASK)
    with_ = at.radio(key="tf_mask_with_smollm2")
    assert with_.options == ["pad: <|im_end|>", "unk: <|endoftext|>"] and with_.value == "pad"
    grid = z_of(chart(at, "tf_mask_grid")["data"][0])
    assert grid.shape == (30, 9) and grid.max() > 0
