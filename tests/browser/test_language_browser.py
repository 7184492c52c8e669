"""The interface's language in chromium (issue 37), in one visit: a shared link with ``lang=zh`` opens
in Chinese in a fresh browser context (no cookie, no earlier choice), and the sidebar's English / 中文
switch keeps what the visitor did: the typed text, the layer and the head open on the Transformer
page stay as they were, in English and back in Chinese."""

import pytest

from harness.browser import EXCEPTION_BOX, PLOT_DRAWN
from tests.browser.test_projector_browser import settle

pytestmark = pytest.mark.browser
TEXT = "The switch keeps what was typed."
WORDS = {  # the page's words in each language
    "en": {"title": "🧠 Transformer heads", "text": "text", "layer": "layer", "head": "head"},
    "zh": {"title": "🧠 Transformer 的注意力头", "text": "文本", "layer": "层", "head": "头"},
}
HEAD_TITLE = {"en": "layer 4, head 3", "zh": "第 4 层第 3 个头"}


def state(page, lang: str) -> tuple[str, str, str]:
    """The text box's text, the layer slider's value and the head box's value, found by their labels
    in ``lang``."""
    words = WORDS[lang]
    return (
        page.get_by_role("textbox", name=words["text"]).input_value(),
        page.locator('[data-testid="stSlider"]', has_text=words["layer"])
        .locator('[data-testid="stSliderThumbValue"]')
        .first.inner_text(),
        page.get_by_role("combobox", name=words["head"]).first.input_value(),
    )


def switch(page, lang: str) -> None:
    """The sidebar's switch to ``lang``, then the page rerun in it."""
    page.locator('[data-testid="stSidebar"]').get_by_text(
        {"en": "English", "zh": "中文"}[lang], exact=True
    ).click()
    page.locator("h1", has_text=WORDS[lang]["title"]).wait_for(timeout=60_000)
    settle(page, plots=True)
    titles = page.evaluate("[...document.querySelectorAll('.gtitle')].map(t => t.textContent)")
    assert any(HEAD_TITLE[lang] in t for t in titles), titles  # the open head, its title in the language


def test_a_chinese_link_opens_in_chinese_and_the_switch_keeps_the_text_and_the_open_head(app_url, new_page):
    with new_page(1280, 900) as page:
        page.goto(f"{app_url}/transformer?lang=zh", timeout=120_000)
        settle(page, plots=True)
        assert page.locator("h1").first.inner_text() == WORDS["zh"]["title"]
        assert page.get_by_role("radio", name="中文").is_checked()

        box = page.get_by_role("textbox", name="文本")
        box.fill(TEXT)
        box.press("Enter")
        page.locator(".xtick", has_text="switch").first.wait_for(timeout=120_000)  # the new text's tokens
        page.get_by_role("slider", name="层").focus()
        page.keyboard.press("ArrowRight")  # layer 3 → 4
        page.locator(".gtitle", has_text="第 4 层第 0 个头").first.wait_for(timeout=60_000)
        page.get_by_role("combobox", name="头").first.click()
        page.get_by_role("option", name="3", exact=True).click()
        page.locator(".gtitle", has_text=HEAD_TITLE["zh"]).first.wait_for(timeout=60_000)
        settle(page, plots=True)
        assert state(page, "zh") == (TEXT, "4", "3")

        switch(page, "en")
        assert state(page, "en") == (TEXT, "4", "3")
        assert "lang=en" in page.url or "lang=" not in page.url
        switch(page, "zh")
        assert state(page, "zh") == (TEXT, "4", "3")
        assert "lang=zh" in page.url
        assert page.locator(EXCEPTION_BOX).count() == 0
        assert page.locator(PLOT_DRAWN).count() >= 2
