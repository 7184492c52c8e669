"""The Transformer page's long-input mode in chromium: SmolLM2 at its first text (2,042 tokens), a
click on a thumbnail opens that head, a box drawn on the overview opens that window with its tokens."""

import pytest

from attention_atlas.ui.long_views import POLL
from bench.bench_long_click import (
    click_tile,
    computing,
    draw_box,
    long_mode,
    open_transformer,
    overview_title,
    shown,
    wait_summaries,
)
from harness.browser import EXCEPTION_BOX
from tests.support import SHOTS

pytestmark = [pytest.mark.browser, pytest.mark.slow]
CLICK = 180  # s for a click to draw its head: generous, since thumbnails are still computed meanwhile


@pytest.fixture(scope="module")
def page(app_url, new_page):
    with new_page(1400, 900) as pg:
        open_transformer(pg, app_url, "smollm2")
        _, pg.tokens = long_mode(pg)
        yield pg


def test_the_first_text_is_about_2000_tokens_and_every_head_is_a_tile(page):
    assert page.tokens == 2042
    grid = page.locator(".js-plotly-plot").first
    assert grid.locator(".scatterlayer .point").count() == 30 * 9
    assert page.get_by_text("max-pooled", exact=False).first.is_visible()
    assert page.locator(EXCEPTION_BOX).count() == 0


@pytest.mark.timeout(900)  # four clicks of up to CLICK s each
def test_clicks_while_the_thumbnails_are_computed_are_not_lost(page):
    """The heads' fragment reruns every 2 s until every thumbnail is in; a click during those
    reruns still opens its head (a pick used to ride on one rerun request, and was lost when a
    timed rerun replaced it)."""
    during = []  # whether the fragment was still polling when each click went out
    for layer, head in [(5, 1), (9, 6), (2, 3), (7, 0)]:  # rows inside the 900-pixel window
        during.append(computing(page))
        title = f"layer {layer}, head {head}: 2,042 tokens"
        click_tile(page, layer, head, title, timeout=CLICK)
        # A timed rerun that carried the old layer and head from the browser used to undo the click
        # a moment after it was drawn: the head stays open over the next polls.
        page.wait_for_timeout(POLL * 1500)
        assert title in (overview_title(page) or ""), shown(page)
    assert page.locator(EXCEPTION_BOX).count() == 0
    if not during[0]:  # a fast machine may finish the 270 thumbnails first (6 s here when quiet)
        pytest.skip("the thumbnails were all in before the first click: the clicks raced nothing")


@pytest.mark.timeout(900)  # a loaded machine takes minutes over the thumbnails
def test_a_click_on_a_thumbnail_draws_that_head(page):
    # From here on every thumbnail is in: boxes and clicks below do not race a redraw.
    wait_summaries(page, timeout=600)
    click_tile(page, 3, 4, "layer 3, head 4: 2,042 tokens, max-pooled to 512 × 512 cells", timeout=CLICK)
    assert page.get_by_role("combobox", name="head").first.input_value() == "4"  # Python moved the widgets
    assert page.locator(EXCEPTION_BOX).count() == 0
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=SHOTS / "long_context_head.png")


def test_a_box_on_the_overview_opens_that_window_with_its_tokens(page):
    window = page.locator(".gtitle", has_text=": queries ").first
    before = window.text_content()
    draw_box(page, (0.5, 0.6), 0.04)  # about 20 cells a side below the diagonal: ~80 tokens each way
    page.wait_for_function(
        "before => [...document.querySelectorAll('.gtitle')].some("
        "e => e.textContent.includes(': queries ') && e.textContent !== before)",
        arg=before,
        timeout=60_000,
    )
    title = page.locator(".gtitle", has_text=": queries ").first.text_content()
    queries, keys = (part.split()[-1] for part in title.split(": ")[1].split(", ")[0].split(" × "))
    (q0, q1), (k0, k1) = (tuple(int(x.replace(",", "")) for x in span.split("–")) for span in (queries, keys))
    assert 0 < q1 - q0 < 512 and 0 < k1 - k0 < 512 and q0 > k0  # below the diagonal, as drawn
    plot = page.locator(".js-plotly-plot", has=page.locator(".gtitle", has_text=": queries ")).first
    labels = plot.evaluate("div => div.data[0].x")
    assert labels[0].startswith(f"{k0} · ") and len(labels) == k1 - k0 + 1  # the tokens, one a column
    assert page.locator(EXCEPTION_BOX).count() == 0


def test_a_click_on_a_query_joins_it_to_its_top_keys(page):
    page.get_by_role("tab", name="Queries and keys").click()
    plot = page.locator(".js-plotly-plot", has=page.locator(".gtitle", has_text="2,042 queries")).first
    plot.wait_for(timeout=60_000)
    plot.scroll_into_view_if_needed()
    query = 1500
    x, y = plot.evaluate(
        """(div, i) => {
            const xa = div._fullLayout.xaxis, ya = div._fullLayout.yaxis, box = div.getBoundingClientRect();
            return [box.left + xa._offset + xa.d2p(div._fullData[0].x[i]), box.top + ya._offset + ya.d2p(div._fullData[0].y[i])];
        }""",
        query,
    )
    page.mouse.move(x, y)
    page.wait_for_timeout(300)
    page.mouse.click(x, y)
    chosen = page.locator("p", has_text="its 10 largest weights").filter(has_not_text="Query 2041 (")
    chosen.first.wait_for(timeout=60_000)  # the list now follows the clicked query (2,041 before)
    picked = int(chosen.first.text_content().split()[1])
    px, py = plot.evaluate(
        """(div, i) => {
            const xa = div._fullLayout.xaxis, ya = div._fullLayout.yaxis, box = div.getBoundingClientRect();
            return [box.left + xa._offset + xa.d2p(div._fullData[0].x[i]), box.top + ya._offset + ya.d2p(div._fullData[0].y[i])];
        }""",
        picked,
    )
    assert abs(px - x) < 6 and abs(py - y) < 6, (query, picked)  # the query under the pointer
    assert plot.evaluate(f"div => div.data.some(t => t.name === 'query {picked}')")  # ringed and joined
    assert page.locator(EXCEPTION_BOX).count() == 0
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=SHOTS / "long_context_queries_keys.png")


def test_a_box_on_the_sentence_view_opens_those_sentences_in_the_zoom_window(page):
    page.get_by_role("tab", name="By sentence").click()
    chart = page.locator(".gtitle", has_text=" sentences of 2,042 tokens").first
    chart.wait_for(timeout=120_000)
    assert page.locator(EXCEPTION_BOX).count() == 0
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=SHOTS / "long_context_sentences.png")
    before = page.locator(".gtitle", has_text=": queries ").first.text_content()
    draw_box(page, (0.6, 0.62), 0.03, title=" sentences of ")  # a few sentences below the diagonal
    page.wait_for_function(  # the Heads tab again, its zoom window on the sentences boxed
        "before => [...document.querySelectorAll('.gtitle')].some("
        "e => e.textContent.includes(': queries ') && e.textContent !== before && e.checkVisibility())",
        arg=before,
        timeout=60_000,
    )
    assert page.get_by_role("tab", name="Heads").get_attribute("aria-selected") == "true"
    assert page.locator(EXCEPTION_BOX).count() == 0
