"""The Transformer page's 'Mask a token' and 'Compare two inputs' tabs in chromium (issue 17): a click
on a token's pill reruns the model with that token masked, and the change grid is that run's."""

import numpy as np
import pytest

from harness.browser import EXCEPTION_BOX, PLOT_DRAWN

pytestmark = pytest.mark.browser
TEXT = "The cat sat on the mat because it was tired."
GRID = (
    "(title) => { const p = [...document.querySelectorAll('.js-plotly-plot')]"
    ".find((g) => (g.layout?.title?.text || '').includes(title)); return p ? p._fullData[0].z.map((r) => Array.from(r)) : null; }"
)


@pytest.fixture(scope="module")
def page(app_url, new_page):
    with new_page(width=1280, height=720) as pg:
        pg.goto(f"{app_url}/transformer")
        pg.wait_for_selector(PLOT_DRAWN, timeout=240_000)
        yield pg


@pytest.fixture(scope="module")
def minilm():
    from attention_atlas.models.registry import load

    return load("minilm", "cpu")


def test_clicking_a_token_pill_masks_it_and_draws_every_heads_change(page, minilm):
    from attention_atlas.ui.compare import row_change

    page.get_by_role("tab", name="Mask a token").click()
    page.get_by_text("Every head's change with token 6·mat masked").wait_for(timeout=60_000)
    page.locator("[data-testid=stButtonGroup] button", has_text="the₁").click()  # the first "the"
    page.get_by_text("Every head's change with token 1·the masked").wait_for(timeout=60_000)
    page.get_by_text("CSV: minilm_mask_1").first.wait_for(timeout=30_000)
    page.wait_for_function(f"() => ({GRID})('total variation per head') !== null", timeout=30_000)
    shown = np.array(page.evaluate(f"({GRID})", "total variation per head"), dtype=float)
    before = minilm.run(TEXT).records["self"].weights
    after = minilm.run_masked(TEXT, 1).records["self"].weights
    assert shown.shape == (6, 12)
    assert np.allclose(shown, row_change(before, after, [1]), rtol=2e-3, atol=1e-6)
    assert page.get_by_text("layer 5, head", exact=False).count() > 0
    assert page.locator(EXCEPTION_BOX).count() == 0


def test_compare_tab_draws_the_difference_grid_and_reacts_to_a_new_second_text(page):
    page.get_by_role("tab", name="Compare two inputs").click()
    page.get_by_text("cat｜dog").first.wait_for(timeout=60_000)
    box = page.get_by_label("second text")
    box.fill("<b>The</b> big cat sat on the mat")
    box.press("Enter")
    page.get_by_text("Left out (no partner)").wait_for(timeout=60_000)
    assert page.locator("b", has_text="The").count() == 0  # shown as text, never bold
    title = "mean |first − second| over the aligned cells"
    page.wait_for_function(f"() => ({GRID})('{title}') !== null", timeout=30_000)
    assert np.array(page.evaluate(f"({GRID})", title), dtype=float).shape == (6, 12)
    assert page.locator(EXCEPTION_BOX).count() == 0
