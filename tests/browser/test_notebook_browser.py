"""A notebook view's saved file in chromium, offline (issue 25): opened from a file:// path with every
request that is not that file aborted, it draws the model view, a tile click opens its head, the
arrow keys step, and the line view isolates a hovered token's lines. No request leaves the page.
The head view is BertViz's (issue 41 item 5): a layer selector, a colour box per head that switches
its lines, and lines that follow the layer a tile or an arrow key opens."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import torch

from attention_atlas.notebook import head_view, show
from harness.browser import hover_tile
from tests.support import assert_lines, click_tile, minilm_loaded

pytestmark = pytest.mark.browser

TEXT = "The cat sat on the mat because it was tired."


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The model view of ``show()`` on an SDPA-loaded minilm, and the head view of its eager
    ``outputs.attentions``, saved as files."""
    m = minilm_loaded(TEXT)
    tokenizer, sdpa, attentions, tokens = m["tokenizer"], m["sdpa"], m["attentions"], m["tokens"]
    where = tmp_path_factory.mktemp("notebook")
    model = show(sdpa, tokenizer, TEXT).save(where / "model.html")
    head = head_view(attentions, tokens, layer=2, heads=[0, 3]).save(where / "head.html")
    grid = head_view(attentions, tokens).save(where / "grid.html")
    return {"model": model, "head": head, "grid": grid, "weights": torch.cat(attentions).numpy()}


def offline(page) -> list[str]:
    """Abort every request but the file itself; the list of what was tried and aborted."""
    tried: list[str] = []

    def route(r):
        if r.request.url.startswith("file:"):
            r.continue_()
        else:
            tried.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    return tried


def title(page) -> str:
    return page.locator(".atlas-head-view .gtitle").text_content()


def test_the_saved_model_view_draws_offline_and_a_tile_opens_its_head(new_page, files):
    with new_page(1400, 1000) as page:
        tried, errors = offline(page), []
        page.on("pageerror", lambda err: errors.append(str(err)))
        page.goto(files["model"].as_uri())
        page.wait_for_selector(".atlas-model-view .js-plotly-plot .scatterlayer .point", timeout=30_000)
        page.wait_for_selector(".atlas-head-view .js-plotly-plot", timeout=30_000)
        assert page.locator(".atlas-model-view .scatterlayer .point").count() == 6 * 12
        assert title(page) == "layer 3, head 0"
        hover_tile(page, 1, 5, 12)
        page.mouse.down()
        page.mouse.up()
        page.wait_for_function(
            "document.querySelector('.atlas-head-view .gtitle').textContent === 'layer 1, head 5'"
        )
        frame = page.evaluate("document.querySelector('.atlas-model-view .js-plotly-plot').layout.shapes[0]")
        assert (frame["x0"], frame["y0"]) == (5 * 14 - 0.5, 1 * 14 - 0.5)  # 13 tokens + the gutter a tile
        page.locator(".atlas-head-view .js-plotly-plot").click()
        page.keyboard.press("ArrowRight")
        page.keyboard.press("ArrowDown")
        assert title(page) == "layer 2, head 6"
        drawn = page.evaluate(
            "Array.from(document.querySelector('.atlas-head-view .js-plotly-plot').data[0].z, r => Array.from(r))"
        )
        np.testing.assert_allclose(drawn, files["weights"][2, 6], rtol=2**-10, atol=1e-6)  # head 6 of layer 2
        assert tried == [] and errors == []


def test_the_saved_head_view_isolates_a_hovered_tokens_lines(new_page, files):
    with new_page(1400, 1000) as page:
        tried = offline(page)
        page.goto(files["head"].as_uri())
        page.wait_for_selector(".atlas-line-view line", state="attached", timeout=30_000)
        lines = page.locator(".atlas-line-view line")
        total = lines.count()
        page.locator(".atlas-line-q .atlas-token").nth(2).hover()  # "cat"
        visible = page.evaluate(
            "Array.from(document.querySelectorAll('.atlas-line-view line')).filter(l => l.style.display !== 'none').map(l => l.dataset.q)"
        )
        assert 0 < len(visible) < total and set(visible) == {"2"}
        assert tried == []


TILES_AT_LAYER_4 = """() => { const d = document.querySelector('.atlas-model-view .js-plotly-plot');
  const tq = d.layout.meta.tile[0]; return d.layout.yaxis.range[1] === 4 * (tq + 1) - 0.5; }"""


def pressed(page) -> list[int]:
    boxes = page.locator(".atlas-head-box")
    return [
        int(b.get_attribute("data-head")) for b in boxes.all() if b.get_attribute("aria-pressed") == "true"
    ]


def test_the_saved_head_views_layer_selector_and_colour_boxes_redraw_its_lines(new_page, files):
    """``head_view(…, layer=2, heads=[0, 3])``: layer 2's row of tiles, a selector of the six layers,
    a box of its own colour for each of the 12 heads with 0 and 3 on; a click switches a head's lines,
    a double-click leaves that head alone, and another layer redraws the lines, the row and the matrix."""
    weights = files["weights"]
    with new_page(1280, 720) as page:
        tried, errors = offline(page), []
        page.on("pageerror", lambda err: errors.append(str(err)))
        page.goto(files["head"].as_uri())
        page.wait_for_selector(".atlas-head-view .js-plotly-plot", timeout=30_000)
        select = page.locator("select.atlas-layer-select")
        assert select.input_value() == "2"
        assert select.locator("option").all_text_contents() == [str(layer) for layer in range(6)]
        boxes = page.locator(".atlas-head-box")
        colours = page.evaluate(
            "[...document.querySelectorAll('.atlas-head-box')].map(b => b.style.borderColor)"
        )
        assert boxes.count() == 12 and len(set(colours)) == 12
        assert pressed(page) == [0, 3]
        view = page.locator(".atlas-notebook")
        assert_lines(view, weights, 2, [0, 3])
        boxes.nth(5).click()
        assert pressed(page) == [0, 3, 5]
        assert_lines(view, weights, 2, [0, 3, 5])
        boxes.nth(0).click()
        assert_lines(view, weights, 2, [3, 5])
        boxes.nth(3).dblclick()
        assert pressed(page) == [3]
        assert_lines(view, weights, 2, [3])
        select.select_option("4")
        assert_lines(view, weights, 4, [3])
        page.wait_for_function(
            "document.querySelector('.atlas-head-view .gtitle').textContent === 'layer 4, head 0'"
        )
        page.wait_for_function(TILES_AT_LAYER_4)
        assert tried == [] and errors == []


def test_the_head_views_lines_follow_the_layer_a_tile_or_an_arrow_key_opens(new_page, files):
    """``head_view(attention, tokens)``: layer 0 with every head on, over every layer's tiles; a tile
    of layer 3 takes the selector and the lines to layer 3, ↓ in the matrix to layer 4."""
    weights = files["weights"]
    with new_page(1400, 1000) as page:
        offline(page)
        page.goto(files["grid"].as_uri())
        page.wait_for_selector(".atlas-model-view .js-plotly-plot .scatterlayer .point", timeout=30_000)
        page.wait_for_selector(".atlas-head-view .js-plotly-plot", timeout=30_000)
        select = page.locator("select.atlas-layer-select")
        assert select.input_value() == "0" and pressed(page) == list(range(12))
        view = page.locator(".atlas-notebook")
        assert_lines(view, weights, 0, range(12))
        click_tile(page, 3, 5, chart=page.locator(".atlas-model-view .js-plotly-plot"))
        page.wait_for_function(
            "document.querySelector('.atlas-head-view .gtitle').textContent === 'layer 3, head 5'"
        )
        assert select.input_value() == "3"
        assert_lines(view, weights, 3, range(12))
        page.locator(".atlas-head-view .js-plotly-plot").click()
        page.keyboard.press("ArrowDown")
        assert select.input_value() == "4"
        assert_lines(view, weights, 4, range(12))


def test_two_views_on_one_page_each_open_their_own_heads(new_page, files, tmp_path):
    """As a notebook shows them: two outputs' fragments in one document. Plotly.js runs once (the
    second view finds it), and a click in the second view opens its head there, not in the first."""
    from attention_atlas.notebook import model_view

    weights = files["weights"]
    tokens = [f"t{i}" for i in range(weights.shape[-1])]
    first, second = model_view(weights, tokens), model_view(weights[:, :6], tokens)
    page_file = tmp_path / "two.html"
    page_file.write_text(
        f"<!DOCTYPE html><html><body>{first.fragment()}{second.fragment()}</body></html>"
    )
    with new_page(1400, 1000) as page:
        tried, errors = offline(page), []
        page.on("pageerror", lambda err: errors.append(str(err)))
        page.goto(page_file.as_uri())
        page.wait_for_function("document.querySelectorAll('.atlas-head-view .js-plotly-plot').length === 2")
        views = page.locator(".atlas-model-view")
        assert views.nth(0).locator(".scatterlayer .point").count() == 72
        assert views.nth(1).locator(".scatterlayer .point").count() == 36
        titles = page.locator(".atlas-head-view .gtitle")

        def click(view: int, layer: int, head: int, heads: int) -> None:
            tile = views.nth(view).locator(".scatterlayer .point").nth(layer * heads + head)
            tile.scroll_into_view_if_needed()
            box = tile.bounding_box()
            page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)

        click(0, 1, 5, 12)
        page.wait_for_function(
            "document.querySelectorAll('.atlas-head-view .gtitle')[0].textContent === 'layer 1, head 5'"
        )
        assert titles.nth(1).text_content() == "layer 0, head 0"  # BertViz's calls open at layer 0
        click(1, 2, 4, 6)
        page.wait_for_function(
            "document.querySelectorAll('.atlas-head-view .gtitle')[1].textContent === 'layer 2, head 4'"
        )
        assert titles.nth(0).text_content() == "layer 1, head 5"
        assert page.evaluate("window.Plotly") is None  # the page's own global left as it was
        assert tried == [] and errors == []


FILTER_RANGES = """() => { const d = document.querySelector('.atlas-head-view .js-plotly-plot');
  return [d.layout.xaxis.range, d.layout.yaxis.range, d.layout.title.text]; }"""


def test_sentence_b_start_offers_bertvizs_filter_and_it_stays_on_the_next_head(new_page, tmp_path):
    """Issue 41 item 6: BertViz's filter of a sentence pair (All, Sentence A → Sentence A, A → B,
    B → A, B → B) on the head view; another head opened keeps it."""
    tokens = ["[CLS]", "the", "cat", "sat", "[SEP]", "it", "was", "tired", "[SEP]"]
    weights = np.random.default_rng(0).random((2, 3, 9, 9)).astype(np.float32)
    weights /= weights.sum(-1, keepdims=True)
    path = head_view(weights, tokens, sentence_b_start=5, layer=1, heads=[0, 1]).save(tmp_path / "pair.html")
    with new_page(1400, 1000) as page:
        offline(page)
        page.goto(path.as_uri())
        page.wait_for_selector(".atlas-head-view .js-plotly-plot", timeout=30_000)
        select = page.locator("select.atlas-sentence-filter")
        assert select.locator("option").all_text_contents() == [
            "All", "Sentence A → Sentence A", "Sentence A → Sentence B", "Sentence B → Sentence A",
            "Sentence B → Sentence B",
        ]  # fmt: skip
        select.select_option(label="Sentence A → Sentence B")
        page.wait_for_function(f"() => ({FILTER_RANGES})()[0][0] === 4.5")
        assert page.evaluate(FILTER_RANGES)[:2] == [[4.5, 8.5], [4.5, -0.5]]  # queries 0–4, keys 5–8
        page.locator(".atlas-head-view .js-plotly-plot").click()
        page.keyboard.press("ArrowRight")  # the next head, drawn afresh
        page.wait_for_function(f"() => ({FILTER_RANGES})()[2] === 'layer 1, head 1'")
        page.wait_for_function(f"() => ({FILTER_RANGES})()[0][0] === 4.5")
        select.select_option(label="All")
        page.wait_for_function(f"() => ({FILTER_RANGES})()[0][0] === -0.5")


SHOWN = """() => [...document.querySelectorAll('.atlas-section')].map(s => [s.style.display !== 'none',
  Math.round(s.querySelector('.atlas-model-view .js-plotly-plot')?.getBoundingClientRect().width || 0)])"""


def test_the_encoder_decoder_keywords_show_one_attention_behind_bertvizs_selector(new_page, tmp_path):
    """Issue 41 item 7: BertViz draws one view with an Encoder / Decoder / Cross selector; the three
    sections were stacked. ``stacked=True`` keeps them stacked."""
    from attention_atlas.notebook import model_view

    rng = np.random.default_rng(0)

    def rows(*shape):
        w = rng.random(shape).astype(np.float32)
        return w / w.sum(-1, keepdims=True)

    source, target = ["▁the", "▁cat", "</s>"], ["<s>", "▁le", "▁chat", "</s>"]
    kwargs = dict(encoder_attention=rows(2, 2, 3, 3), decoder_attention=rows(2, 2, 4, 4))
    kwargs |= dict(cross_attention=rows(2, 2, 4, 3), encoder_tokens=source, decoder_tokens=target)
    path = model_view(**kwargs).save(tmp_path / "seq2seq.html")
    with new_page(1400, 1000) as page:
        offline(page)
        page.goto(path.as_uri())
        page.wait_for_selector(".atlas-model-view .js-plotly-plot", timeout=30_000)
        choice = page.locator("select.atlas-section-choice")
        assert choice.locator("option").all_text_contents() == [
            "encoder self-attention", "decoder self-attention", "cross-attention"
        ]  # fmt: skip
        assert [shown for shown, _ in page.evaluate(SHOWN)] == [True, False, False]
        choice.select_option(label="cross-attention")
        page.wait_for_function(f"() => ({SHOWN})()[2][0] && ({SHOWN})()[2][1] > 300")
        assert [shown for shown, _ in page.evaluate(SHOWN)] == [False, False, True]
    stacked = model_view(**kwargs, stacked=True).to_html()
    data = re.search(r'<script type="application/json" id="[^"]+-data">(.*?)</script>', stacked, re.S)
    assert json.loads(data.group(1))["choose"] is None and len(json.loads(data.group(1))["sections"]) == 3
