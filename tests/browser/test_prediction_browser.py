"""The "Inside a prediction" page in chromium. Logit lens: its grid is drawn without an exception box,
the top-right cell reads ' west', hovering it lists the top 10 tokens with their probabilities, and a
click on a cell follows its position;
a longer text's grid fills in under a progress bar (screenshots at 1400 × 900). Generate: three new
tokens of SmolLM2's continuation and the attention of the last one, drawn. Contributions: the routes
graph drawn, and a higher threshold keeps fewer edges. Patching: its maps drawn, and a ranked head's
link opens that head on the Transformer page (screenshots at 1280 × 720)."""

import re

import pytest

from harness.browser import EXCEPTION_BOX, PLOT_DRAWN
from tests.support import SHOTS

pytestmark = pytest.mark.browser
IDLE = '[data-test-script-state="notRunning"]'
# A figure's tick labels and axis titles that cross its title's box.
CROSSING = """div => { const t = div.querySelector('.gtitle').getBoundingClientRect();
  return [...div.querySelectorAll('.xtick text, .g-xtitle text')].filter(e => { const r = e.getBoundingClientRect();
    return r.width && r.left < t.right && t.left < r.right && r.top < t.bottom && t.top < r.bottom; })
  .map(e => e.textContent); }"""


def test_the_grid_is_drawn_and_its_hover_lists_the_top_tokens(app_url, new_page):
    with new_page(1400, 900) as page:
        page.goto(f"{app_url}/prediction", timeout=120_000)
        page.wait_for_selector(PLOT_DRAWN, timeout=180_000)
        page.wait_for_selector(IDLE, timeout=180_000)
        assert page.locator(EXCEPTION_BOX).count() == 0
        grid = page.locator(".js-plotly-plot").first
        assert grid.locator(".heatmaplayer text", has_text="west").count() >= 1  # the top right and below it
        box = grid.locator(".nsewdrag").first.bounding_box()
        # the top-right cell: the last position, after the last block
        page.mouse.move(box["x"] + box["width"] * 0.95, box["y"] + 5)
        hover = page.locator(".hoverlayer .hovertext").first
        hover.wait_for(timeout=10_000)
        text = hover.text_content()
        assert "after block 29" in text and "9 · the" in text and "' west' 0." in text
        assert text.count("0.") >= 10  # ten probabilities
        SHOTS.mkdir(exist_ok=True)
        page.screenshot(path=SHOTS / "prediction.png", full_page=True)
        # A click on a cell of the first position follows that position below (it showed the last).
        assert page.locator(".gtitle", has_text="position 9 · the").count() == 1
        page.mouse.click(box["x"] + box["width"] * 0.05, box["y"] + 5)  # the top row: on screen
        page.locator(".gtitle", has_text="position 0 · The").wait_for(timeout=60_000)
        assert page.url.endswith("pos=0")  # the link follows the position clicked
        assert page.locator(EXCEPTION_BOX).count() == 0


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


def settled(page) -> None:
    """The page's run has ended with its charts drawn and no exception box."""
    page.wait_for_selector(IDLE, timeout=240_000)
    page.wait_for_selector(PLOT_DRAWN, timeout=60_000)
    assert page.locator(EXCEPTION_BOX).count() == 0


def test_generate_continues_the_text_and_draws_what_a_new_token_looked_at(app_url, new_page):
    with new_page(1280, 720) as page:
        page.goto(f"{app_url}/prediction?tab=Generate", timeout=120_000)
        page.get_by_text("Press Generate").wait_for(timeout=180_000)
        page.get_by_role("slider", name="new tokens at most").focus()
        page.keyboard.press("Home")  # 1, then 3: a short run
        page.keyboard.press("ArrowRight")
        page.keyboard.press("ArrowRight")
        page.wait_for_selector(IDLE, timeout=60_000)
        page.get_by_role("button", name="Generate", exact=True).click()
        page.get_by_text("The continuation").wait_for(timeout=240_000)
        settled(page)
        assert page.get_by_text("3 new tokens").count() == 1
        said = page.get_by_text("The continuation").locator("xpath=following::*[@data-testid='stCode'][1]")
        assert "west" in said.text_content()  # greedy: the logit lens's top token comes first
        assert page.get_by_text("What produced").count() == 1
        titles = page.locator(".js-plotly-plot .gtitle").all_text_contents()
        assert "every layer, heads averaged" in titles and "layer 29, each head" in titles, titles
        page.get_by_text("What produced").scroll_into_view_if_needed()  # the shot shows the first chart
        SHOTS.mkdir(exist_ok=True)
        page.screenshot(path=SHOTS / "prediction-generate.png")


def edges(page) -> tuple[int, str]:
    """The routes' edge count and threshold, as the caption under the graph says them."""
    said = page.get_by_text(re.compile(r"\d+ edges? at or above")).text_content()
    count, threshold = re.search(r"(\d+) edges? at or above (\d\.\d\d)", said).groups()
    return int(count), threshold


def test_contributions_draw_the_routes_and_a_higher_threshold_keeps_fewer(app_url, new_page):
    with new_page(1280, 720) as page:
        page.goto(f"{app_url}/prediction?tab=Contributions", timeout=120_000)
        routes = page.locator(".js-plotly-plot", has=page.locator(".gtitle", has_text="Routes into"))
        routes.locator(".scatterlayer .trace").first.wait_for(timeout=240_000)
        settled(page)
        before, threshold = edges(page)
        assert threshold == "0.04" and before > 0
        routes.scroll_into_view_if_needed()
        SHOTS.mkdir(exist_ok=True)
        page.screenshot(path=SHOTS / "prediction-contributions.png")
        page.get_by_role("slider", name="threshold").focus()
        page.keyboard.press("End")  # 0.50
        page.get_by_text(re.compile(r"at or above 0\.50")).wait_for(timeout=120_000)
        settled(page)
        after, _ = edges(page)
        assert 0 < after < before, (before, after)
        assert routes.locator(".scatterlayer .trace").count() >= 1  # redrawn with what is left
        page.screenshot(path=SHOTS / "prediction-contributions-0.50.png")


def test_patching_draws_its_maps_and_a_ranked_head_opens_on_the_transformer_page(app_url, new_page):
    """The Patching tab's first load with the heads kind: the layer × head map, one layer's heads by
    position with both prompts' tokens along x (▸ where they differ), the ranked heads; the first
    one's link opens that head of SmolLM2 on the Transformer page, on the clean prompt."""
    with new_page(1280, 720) as page:
        page.goto(f"{app_url}/prediction?tab=Patching&kind=heads", timeout=120_000)
        heads = page.locator(".js-plotly-plot", has=page.locator(".gtitle", has_text="each head's output, at every"))
        heads.locator(".heatmaplayer").wait_for(timeout=300_000)
        by_position = page.locator(".js-plotly-plot", has=page.locator(".gtitle", has_text="at one position"))
        by_position.locator(".heatmaplayer").wait_for(timeout=300_000)
        settled(page)
        z = heads.evaluate("div => div._fullData[0].z")  # decoded from the figure's base64
        assert [len(z), len(z[0])] == [30, 9]
        ticks = by_position.locator(".xtick text").all_text_contents()
        assert len([t for t in ticks if "▸" in t]) == 3, ticks  # " Eiffel Tower" ▸ " Colosseum": tokens 1–3
        for plot in (heads, by_position):  # the title stands clear of the top axis (the tokens crossed it)
            assert plot.evaluate(CROSSING) == [], plot.evaluate(CROSSING)
        link = page.get_by_role("link", name=re.compile(r"layer \d+, head \d+: effect")).first
        layer, head = map(int, re.search(r"layer (\d+), head (\d+)", link.text_content()).groups())
        link.scroll_into_view_if_needed()
        SHOTS.mkdir(exist_ok=True)
        page.screenshot(path=SHOTS / "prediction-patching.png")
        page.goto(link.get_attribute("href").replace("./", f"{app_url}/", 1), timeout=120_000)
        page.locator(".gtitle", has_text=f"layer {layer}, head {head}").first.wait_for(timeout=240_000)
        assert page.get_by_label("text").input_value().startswith("The Eiffel Tower")
        assert page.locator(EXCEPTION_BOX).count() == 0
