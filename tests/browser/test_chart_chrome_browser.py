"""What lies over a chart in chromium (issue 27, items 1 and 9): Plotly's toolbar, shown while the
pointer is on a chart, covers neither the Pooling page's legend nor the Scoring page's panel titles
(at 1280 × 720, and on a projector: 853 × 480 at scale 1.5 with ``?present=1``); a side-by-side
alignment's title does not run across its key axis title, and its key labels do not run together."""

from __future__ import annotations

import itertools
import urllib.parse

import pytest

from harness.browser import PLOT_DRAWN

pytestmark = pytest.mark.browser

SCREENS = {
    "1280x720": ((1280, 720), {}, ""),
    "projector": ((853, 480), {"device_scale_factor": 1.5}, "?present=1"),
}


def overlap(a: dict, b: dict) -> bool:
    """Whether two bounding boxes share more than a pixel each way."""
    dx = min(a["x"] + a["width"], b["x"] + b["width"]) - max(a["x"], b["x"])
    dy = min(a["y"] + a["height"], b["y"] + b["height"]) - max(a["y"], b["y"])
    return dx > 1 and dy > 1


def hovered_chart(page, url: str, index: int = 0):
    """The page's ``index``-th chart, in the middle of the window, with the pointer on it (toolbar shown)."""
    page.goto(url)
    page.wait_for_selector(PLOT_DRAWN, timeout=120_000)
    chart = page.locator(".js-plotly-plot").nth(index)
    chart.evaluate("(e) => e.scrollIntoView({block: 'center'})")
    page.wait_for_timeout(500)
    box = chart.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    chart.locator(".modebar").wait_for(timeout=10_000)
    return chart


@pytest.mark.parametrize("screen", list(SCREENS))
def test_the_toolbar_covers_neither_a_legend_nor_a_panel_title(app_url, new_page, screen):
    (width, height), options, query = SCREENS[screen]
    with new_page(width, height, **options) as page:
        chart = hovered_chart(page, f"{app_url}/pooling{query}")
        toolbar = chart.locator(".modebar").bounding_box()
        assert not overlap(toolbar, chart.locator(".legend").bounding_box())
        chart = hovered_chart(page, f"{app_url}/scoring{query}")
        toolbar = chart.locator(".modebar").bounding_box()
        titles = chart.locator(".annotation-text")
        assert titles.count() >= 6  # dot, scaled_dot, additive, general, cosine, gaussian
        for i in range(titles.count()):
            assert not overlap(toolbar, titles.nth(i).bounding_box()), titles.nth(i).text_content()


def test_side_by_side_titles_and_key_labels_stand_clear(app_url, new_page):
    text = urllib.parse.quote("腾飞上铁，锐意改革谋发展，勇当千里马")
    with new_page(1280, 720) as page:
        page.goto(f"{app_url}/couplets?text={text}&both=1")
        page.wait_for_selector(PLOT_DRAWN, timeout=120_000)
        for index in range(2):
            chart = page.locator(".js-plotly-plot").nth(index)
            chart.evaluate("(e) => e.scrollIntoView({block: 'center'})")
            title = chart.locator(".gtitle").bounding_box()
            assert not overlap(title, chart.locator(".xtitle").bounding_box())
            labels = [chart.locator(".xtick text").nth(i).bounding_box() for i in range(18)]
            assert chart.locator(".xtick text").count() == 18  # one label per character
            assert not any(overlap(a, b) for a, b in itertools.pairwise(labels))
