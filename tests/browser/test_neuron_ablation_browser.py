"""The Transformer page's 'Neuron view' and 'Switch off heads' tabs in chromium (issue 27): a click on
a query token draws that query's q, K, q∘K and the weights the record holds; switching off a head
draws every head's change, nothing before its layer; both fit a projector at 150 % (?present=1)."""

import numpy as np
import pytest

from harness.browser import EXCEPTION_BOX

pytestmark = pytest.mark.browser
TEXT = "The cat sat on the mat because it was tired."
TRACES = (
    "(title) => { const p = [...document.querySelectorAll('.js-plotly-plot')]"
    ".find((g) => (g.layout?.annotations || []).some((a) => (a.text || '').includes(title)) "
    "|| (g.layout?.title?.text || '').includes(title)); "
    "return p ? p._fullData.map((t) => ({x: Array.from(t.x || []), z: t.z ? t.z.map((r) => Array.from(r)) : null})) : null; }"
)


@pytest.fixture(scope="module")
def minilm():
    from attention_atlas.models.registry import load

    return load("minilm", "cpu")


def traces(page, title: str) -> list[dict]:
    page.wait_for_function(f"() => ({TRACES})({title!r}) !== null", timeout=60_000)
    return page.evaluate(f"({TRACES})", title)


def open_tab(page, url: str, tab: str) -> None:
    page.goto(f"{url}/transformer?tab={tab.replace(' ', '+')}")
    page.get_by_role("tab", name=tab).wait_for(timeout=240_000)


def test_clicking_a_query_token_draws_its_neuron_view(app_url, new_page, minilm):
    with new_page(width=1280, height=720) as page:
        open_tab(page, app_url, "Neuron view")
        page.get_by_text("Click a query token above").wait_for(timeout=240_000)
        page.locator("[data-testid=stButtonGroup] button", has_text="cat").first.click(timeout=120_000)
        page.get_by_text("Layer 0, head 0: query 2 · cat").wait_for(timeout=120_000)
        data = traces(page, "q ∘ K")
        weights = np.array(data[4]["x"], dtype=float)
        assert np.allclose(weights, minilm.run(TEXT).records["self"].weights[0, 0, 2], atol=1e-5)
        assert len(data[1]["z"]) == 13 and len(data[1]["z"][0]) == 32  # K: keys × d
        assert page.locator(EXCEPTION_BOX).count() == 0


def test_switching_off_a_head_draws_every_later_heads_change(app_url, new_page):
    with new_page(width=1280, height=720) as page:
        open_tab(page, app_url, "Switch off heads")
        heading = page.get_by_text("Every head's change with 1 head switched off")
        heading.wait_for(timeout=240_000)
        heading.scroll_into_view_if_needed()  # Streamlit draws a chart once it is near the screen
        grid = np.array(traces(page, "total variation per head")[0]["z"], dtype=float)
        assert grid.shape == (6, 12) and np.allclose(grid[0], 0, atol=1e-6) and grid[1:].min() > 0
        assert page.get_by_text("The 1 head that changed most").count() == 0  # ten are named
        assert page.get_by_text("The 10 heads that changed most").count() == 1
        assert page.locator(EXCEPTION_BOX).count() == 0


@pytest.mark.parametrize("tab", ["Neuron view", "Switch off heads"])
def test_both_tabs_fit_a_projector_at_150_percent(app_url, new_page, tab):
    with new_page(width=853, height=480, device_scale_factor=1.5) as page:
        page.goto(f"{app_url}/transformer?tab={tab.replace(' ', '+')}&present=1")
        if tab == "Neuron view":
            page.get_by_text("Click a query token above").wait_for(timeout=240_000)
            page.locator("[data-testid=stButtonGroup] button", has_text="cat").first.click(timeout=120_000)
            title = "q ∘ K"
        else:
            heading = page.get_by_text("Every head's change")
            heading.wait_for(timeout=240_000)
            heading.scroll_into_view_if_needed()
            title = "total variation per head"
        traces(page, title)
        widths = page.evaluate(
            "() => [...document.querySelectorAll('.js-plotly-plot')].filter((p) => p.offsetParent)"
            ".map((p) => [p.getBoundingClientRect().right, document.documentElement.clientWidth])"
        )
        assert widths and all(right <= width + 1 for right, width in widths)  # no chart runs off the screen
        assert page.locator(EXCEPTION_BOX).count() == 0
