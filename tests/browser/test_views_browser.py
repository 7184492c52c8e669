"""The views BertViz and Dodrio users look for, in chromium: the line view and the open head framed."""

import numpy as np
import pytest

from harness.browser import EXCEPTION_BOX, PLOT_DRAWN
from tests.support import click_tile

pytestmark = pytest.mark.browser
TEXT = "The cat sat on the mat because it was tired."
VISIBLE_LINES = "() => [...document.querySelectorAll('svg.atlas-line-view line')].filter((l) => l.style.display !== 'none')"


@pytest.fixture(scope="module")
def page(app_url, new_page):
    with new_page(height=3000) as pg:
        pg.base_url = app_url
        pg.goto(f"{app_url}/transformer")
        pg.wait_for_selector(PLOT_DRAWN, timeout=120_000)
        pg.wait_for_selector("svg.atlas-line-view", timeout=60_000)
        yield pg


def test_the_open_head_is_framed_in_the_model_view(page):
    frame = page.evaluate("() => document.querySelectorAll('.js-plotly-plot')[0].layout.shapes?.[0]")
    assert frame is not None  # the first load's head (layer 3, head 0) is framed already
    click_tile(page, 1, 2)
    page.locator(".gtitle", has_text="layer 1, head 2").first.wait_for(timeout=30_000)
    picks = page.evaluate(
        "() => { const t = document.querySelectorAll('.js-plotly-plot')[0]._fullData[1];"
        " return {x: Array.from(t.x), y: Array.from(t.y)}; }"
    )
    frame = page.evaluate("() => document.querySelectorAll('.js-plotly-plot')[0].layout.shapes[0]")
    inside = [
        (i, j)
        for i in range(6)
        for j in range(12)
        if frame["x0"] < picks["x"][i * 12 + j] < frame["x1"]
        and frame["y0"] < picks["y"][i * 12 + j] < frame["y1"]
    ]
    assert inside == [(1, 2)]  # exactly the clicked tile, nothing else
    page.get_by_text("CSV: minilm_layer1_2").wait_for(timeout=30_000)


def test_line_view_lines_are_the_weights_and_hover_isolates_a_token(page):
    from attention_atlas.models.registry import load

    weights = load("minilm").run(TEXT).records["self"].head(1, 2)  # the head the last test opened
    page.wait_for_function(
        f"() => ({VISIBLE_LINES})().length === {int((weights >= 0.01).sum())}", timeout=30_000
    )
    token = page.locator("svg.atlas-line-view .atlas-line-q text").nth(3)
    token.hover()
    shown = page.evaluate(
        f"() => ({VISIBLE_LINES})().map((l) => [+l.dataset.q, +l.dataset.k, +l.getAttribute('stroke-opacity')])"
    )
    assert {q for q, _, _ in shown} == {3}
    assert len(shown) == int((weights[3] >= 0.01).sum())
    for _, k, w in shown:
        assert w == pytest.approx(weights[3, k], abs=1e-3)
    page.mouse.move(5, 5)  # leave the column: every line again
    page.wait_for_function(f"() => ({VISIBLE_LINES})().length === {int((weights >= 0.01).sum())}")
    assert page.locator(EXCEPTION_BOX).count() == 0


def test_line_view_shows_html_in_a_token_as_text(page):
    box = page.get_by_label("text")
    box.fill("<img src=x onerror=alert(1)> cat")
    box.press("Enter")
    page.wait_for_function(
        "() => [...document.querySelectorAll('svg.atlas-line-view text')].some((t) => t.textContent === '<')",
        timeout=60_000,
    )
    assert page.locator("svg.atlas-line-view img, img[src='x']").count() == 0
    assert np.isfinite(page.evaluate("() => document.querySelectorAll('svg.atlas-line-view line').length"))
    box.fill(TEXT)
    box.press("Enter")


def test_value_norm_weighting_redraws_the_head_from_alpha_times_value_norms(page):
    from attention_atlas.models.adapters.value_norms import value_norms, weighted
    from attention_atlas.models.registry import load

    # opened as a link, so that nothing the tests before left in the page (a text being rerun) races it
    page.goto(f"{page.base_url}/transformer?layer=1&head=2&values=1")
    page.get_by_text("Every view below shows value-weighted attention").wait_for(timeout=60_000)
    page.locator(".gtitle", has_text="layer 1, head 2").first.wait_for(timeout=30_000)
    adapter = load("minilm")
    expected = weighted(adapter.run(TEXT).records["self"].weights, value_norms(adapter, TEXT))[1, 2]
    # Plotly decodes the figure's typed arrays into _fullData; wait for the value-weighted head there
    drawn_z = "() => Array.from(document.querySelectorAll('.js-plotly-plot')[1]._fullData[0].z, (r) => Array.from(r))"
    page.wait_for_function(
        f"(e) => {{ const z = ({drawn_z})(); return z.length === e.length && Math.abs(z[1][0] - e[1][0]) < 2e-3; }}",
        arg=expected.tolist(),
        timeout=60_000,
    )
    drawn = page.evaluate(drawn_z)
    assert np.allclose(np.array(drawn, dtype=float), expected, atol=2e-3)
    assert page.locator(EXCEPTION_BOX).count() == 0


def test_translation_side_by_side_draws_the_difference(page):
    page.goto(f"{page.base_url}/translation?both=1")
    page.get_by_text("Difference: translate-gru-additive − translate-lstm-dot").wait_for(timeout=120_000)
    page.wait_for_function(
        "() => [...document.querySelectorAll('.gtitle, .annotation-text')].some((t) => t.textContent.includes('−'))"
    )
    assert page.locator(EXCEPTION_BOX).count() == 0


def test_a_transformer_link_opens_its_head_and_a_click_moves_the_link(page):
    page.goto(f"{page.base_url}/transformer?layer=2&head=5&text=A+small+test+sentence.")
    page.locator(".gtitle", has_text="layer 2, head 5").first.wait_for(timeout=120_000)
    assert page.get_by_label("text").input_value() == "A small test sentence."
    click_tile(page, 4, 1)
    page.locator(".gtitle", has_text="layer 4, head 1").first.wait_for(timeout=30_000)
    page.wait_for_function("() => /layer=4/.test(location.search) && /head=1(&|$)/.test(location.search)")
    assert "text=A+small+test+sentence." in page.url
    assert page.locator(EXCEPTION_BOX).count() == 0
