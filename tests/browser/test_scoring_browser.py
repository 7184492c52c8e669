"""The Scoring page in chromium with a real model's text: a long paste is cut in the box and the page
says so; an out-of-range layer is refused with a message and the chart follows the layer kept."""

from __future__ import annotations

import re

import pytest

from harness.browser import PLOT_DRAWN

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def page(app_url, new_page):
    with new_page(height=2400) as pg:
        pg.base_url = app_url
        yield pg


def type_into(page, label: str, text: str) -> None:
    box = page.get_by_label(label, exact=True)
    box.fill(text)
    box.press("Enter")


def test_a_long_paste_into_scoring_is_cut_in_the_box_and_said(page):
    page.goto(f"{page.base_url}/scoring")
    page.wait_for_selector(PLOT_DRAWN, timeout=60_000)
    page.get_by_text("real: minilm").click()
    page.get_by_label("text", exact=True).wait_for(timeout=60_000)
    type_into(page, "text", "the cat sat on the mat " * 130)  # 2,990 characters, pasted at once
    page.get_by_text("The text had 2,990 characters").wait_for(timeout=60_000)
    # the notice and the box's new value come in one run, but are drawn one after the other
    box = page.get_by_label("text", exact=True).element_handle()
    page.wait_for_function("box => box.value.length === 200", arg=box, timeout=60_000)


def test_an_out_of_range_layer_is_refused_with_a_message(page):
    page.goto(f"{page.base_url}/scoring")
    page.wait_for_selector(PLOT_DRAWN, timeout=60_000)
    page.get_by_text("real: minilm").click()
    layer = page.get_by_label(re.compile(r"^layer"))
    layer.wait_for(timeout=60_000)
    layer.fill("9")
    layer.press("Enter")
    page.get_by_text("layer 9 is outside 0–5; 5 is used.").wait_for(timeout=60_000)
    assert layer.input_value() == "5"
    page.locator("p", has_text="minilm's layer 5").first.wait_for(timeout=30_000)
