"""The "Inside a prediction" page (the logit lens) in chromium: its grid is drawn without an exception
box, the top-right cell reads ' Paris', and hovering it lists the top 10 tokens with their
probabilities; a longer text's grid fills in under a progress bar. Screenshots at 1400 × 900."""

import pytest

from harness.browser import EXCEPTION_BOX, PLOT_DRAWN
from tests.support import SHOTS

pytestmark = pytest.mark.browser
IDLE = '[data-test-script-state="notRunning"]'


def test_the_grid_is_drawn_and_its_hover_lists_the_top_tokens(app_url, new_page):
    with new_page(1400, 900) as page:
        page.goto(f"{app_url}/prediction", timeout=120_000)
        page.wait_for_selector(PLOT_DRAWN, timeout=180_000)
        page.wait_for_selector(IDLE, timeout=180_000)
        assert page.locator(EXCEPTION_BOX).count() == 0
        grid = page.locator(".js-plotly-plot").first
        assert grid.locator(".heatmaplayer text", has_text="Paris").count() == 1  # the cell at the top right
        box = grid.locator(".nsewdrag").first.bounding_box()
        # the top-right cell: the last position, after the last block
        page.mouse.move(box["x"] + box["width"] * 0.9, box["y"] + 5)
        hover = page.locator(".hoverlayer .hovertext").first
        hover.wait_for(timeout=10_000)
        text = hover.text_content()
        assert "after block 29" in text and "4 · is" in text and "' Paris' 0." in text
        assert text.count("0.") >= 10  # ten probabilities
        SHOTS.mkdir(exist_ok=True)
        page.screenshot(path=SHOTS / "prediction.png", full_page=True)


def test_a_long_text_fills_in_under_a_progress_bar(app_url, new_page):
    text = "The cat sat on the mat because it was tired. " * 20  # 220 tokens: 64 first, then the rest
    with new_page(1400, 900) as page:
        page.goto(
            f"{app_url}/prediction?text={text.strip().replace(' ', '+')}&width=16&from=0", timeout=120_000
        )
        page.get_by_text("are still being read").or_(page.locator(PLOT_DRAWN)).first.wait_for(timeout=180_000)
        page.locator(".js-plotly-plot .heatmaplayer").first.wait_for(timeout=240_000)  # position 0 arrives
        assert page.locator(EXCEPTION_BOX).count() == 0
        page.get_by_text("Every position, from the end back").wait_for(state="detached", timeout=240_000)
        ticks = page.locator(".js-plotly-plot").first.locator(".xtick text").all_text_contents()
        SHOTS.mkdir(exist_ok=True)
        page.screenshot(path=SHOTS / "prediction-long.png", full_page=True)
        assert ticks[:3] == ["The", "cat", "sat"], ticks
