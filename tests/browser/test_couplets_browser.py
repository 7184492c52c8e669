"""The Couplets page in chromium: the step-through marks the character being written in bold (the
line rendered by Streamlit's Markdown, no asterisk left over)."""

from __future__ import annotations

import pytest

from harness.browser import PLOT_DRAWN

pytestmark = pytest.mark.browser


def test_the_step_through_marks_the_character_being_written_in_bold(app_url, new_page):
    with new_page(height=2400) as page:
        page.goto(f"{app_url}/couplets")
        page.wait_for_selector(PLOT_DRAWN, timeout=120_000)
        box = page.get_by_label("Force a lower line 下联 (optional; empty: the model writes one)", exact=True)
        box.fill("一行白鹭上青天")
        box.press("Enter")
        page.locator("h3", has_text="一行白鹭上青天").first.wait_for(timeout=60_000)
        page.get_by_role("slider", name="Step").focus()
        page.keyboard.press("End")
        line = page.locator("p", has_text="Writing character").first
        line.filter(has_text="7 of 7").wait_for(timeout=30_000)
        assert "一行白鹭上青[天]" in line.inner_text() and "*" not in line.inner_text()
        assert line.locator("strong", has_text="天").count() == 1  # the character being written, in bold
