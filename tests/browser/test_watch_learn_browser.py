"""Watch attention learn in chromium, one trainer for the server (ATLAS_MAX_TRAININGS=1): the first
visitor trains and sees the probe heatmap redrawn, a second one waits in line, and when the first
closes the tab their run stops and the second one's starts. Screenshots at 1400 × 900 and 1280 × 720."""

from __future__ import annotations

import re

import pytest

from harness.browser import EXCEPTION_BOX, PLOT_DRAWN
from tests.support import SHOTS

pytestmark = [pytest.mark.browser, pytest.mark.timeout(900)]  # a busy machine loads the corpus slowly
STEP = re.compile(r"training: \d+ of 120 s of training per model · [^·]+ on the clock · additive step (\d+)")


def step_shown(page) -> int:
    m = STEP.search(page.locator('[data-testid="stProgress"]').first.inner_text())
    return int(m.group(1)) if m else -1


def test_one_trainer_two_visitors_the_second_waits_until_the_first_leaves(own_server, new_page):
    # A server of its own: one trainer for the whole server (ATLAS_MAX_TRAININGS=1, read by the
    # server), and no other visitor's run in it.
    url = own_server(ATLAS_MAX_TRAININGS="1")
    SHOTS.mkdir(exist_ok=True)
    with new_page(1400, 900) as first, new_page(1280, 720) as second:
        first.goto(f"{url}/watch-learn")
        # before Start: the untrained model's attention, spread evenly (the corpus loads once per server)
        first.get_by_text("step 0, untrained").wait_for(timeout=600_000)
        first.wait_for_selector(PLOT_DRAWN, timeout=60_000)
        first.screenshot(path=SHOTS / "watch_learn_untrained_1400x900.png")
        first.get_by_role("button", name="▶ Start").click()
        first.get_by_text(STEP).wait_for(timeout=300_000)
        seen = step_shown(first)
        first.wait_for_function(
            f"() => /additive step (\\d+)/.exec(document.body.innerText)?.[1] > {seen}", timeout=60_000
        )  # redrawn while it trains
        assert first.locator(EXCEPTION_BOX).count() == 0
        # the probe heatmap, alignment, loss; while the fragment redraws, a stale copy may linger a moment
        first.wait_for_function("() => document.querySelectorAll('.js-plotly-plot').length === 3", timeout=30_000)
        first.screenshot(path=SHOTS / "watch_learn_1400x900.png")

        second.goto(f"{url}/watch-learn")
        second.get_by_role("button", name="▶ Start").click()
        second.get_by_text("Waiting for a free trainer (position 1)").wait_for(timeout=60_000)
        second.screenshot(path=SHOTS / "watch_learn_waiting_1280x720.png")

        first.close()  # the first visitor leaves: their run stops, the trainer is free
        second.wait_for_selector(PLOT_DRAWN, timeout=300_000)
        second.get_by_text(STEP).wait_for(timeout=60_000)
        assert second.locator(EXCEPTION_BOX).count() == 0
        width = second.evaluate("document.scrollingElement.scrollWidth")
        assert width <= 1280, width  # no horizontal scrolling at 1280 × 720
        second.screenshot(path=SHOTS / "watch_learn_1280x720.png")
