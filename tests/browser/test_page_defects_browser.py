"""Issue 17 in chromium: what the browser itself does with user text, a long paste, a refused
file, an out-of-range number (items 4, 6, 8, 10, 11). Each test failed before its fix."""

from __future__ import annotations

import re

import pytest

from harness.browser import EXCEPTION_BOX, PLOT_DRAWN, browser_page, chromium_missing, streamlit_server
from tests.support import SHOTS

pytestmark = pytest.mark.browser
FRENCH = "[cliquez ici](http://example.com) **gras** `code` $x^2$ ![img](http://127.0.0.1:9/x.png)"
MAIN = '[data-testid="stMain"]'


@pytest.fixture(scope="module")
def page():
    problem = chromium_missing()
    assert problem is None, problem
    with streamlit_server() as url, browser_page(height=2400) as pg:
        pg.base_url = url
        pg.requested = []
        pg.on("request", lambda request: pg.requested.append(request.url))
        yield pg


def type_into(page, label: str, text: str) -> None:
    box = page.get_by_label(label, exact=True)
    box.fill(text)
    box.press("Enter")


def markup_from(page, words: tuple[str, ...]) -> list[str]:
    """Links, bold, code, images and math in the page's main area that hold one of ``words``."""
    found = page.locator(MAIN).evaluate(
        """(main, words) => Array.from(main.querySelectorAll('a, strong, em, code, img, .katex'))
            .filter((e) => !(e.tagName === 'A' && e.getAttribute('href').startsWith('#')))  // heading anchors
            .map((e) => e.tagName + ' ' + (e.textContent || '') + ' ' + (e.getAttribute('href') || e.getAttribute('src') || ''))
            .filter((s) => words.some((w) => s.includes(w)))""",
        list(words),
    )
    return found


def test_markdown_in_a_forced_french_sentence_is_shown_as_text_and_fetches_nothing(page):
    page.goto(f"{page.base_url}/translation")
    page.wait_for_selector(PLOT_DRAWN, timeout=120_000)
    type_into(page, "Force a French sentence (optional; empty: the model translates)", FRENCH)
    page.locator("h3", has_text="cliquez").first.wait_for(timeout=60_000)
    page.wait_for_load_state("networkidle")
    assert markup_from(page, ("cliquez", "gras", "code", "example.com", "127.0.0.1", "img")) == []
    assert page.locator(f"{MAIN} .katex").count() == 0  # no $x^2$ typeset
    assert not [url for url in page.requested if "127.0.0.1:9" in url or "example.com" in url]
    heading = page.locator("h3", has_text="cliquez").first.inner_text()
    assert "[ cliquez ici ]" in heading and "* * gras * *" in heading  # the words it was forced with
    assert page.locator(EXCEPTION_BOX).count() == 0


def test_markdown_in_an_upper_line_is_shown_as_text(page):
    page.goto(f"{page.base_url}/couplets")
    page.wait_for_selector(PLOT_DRAWN, timeout=120_000)
    type_into(page, "Upper line 上联", "**春**风")
    page.locator("h3", has_text="春").first.wait_for(timeout=60_000)
    assert markup_from(page, ("春",)) == []
    assert "**春**风" in page.locator("h3", has_text="春").first.inner_text()


def test_the_step_through_marks_the_character_being_written_in_bold(page):
    page.goto(f"{page.base_url}/couplets")
    page.wait_for_selector(PLOT_DRAWN, timeout=120_000)
    type_into(page, "Force a lower line 下联 (optional; empty: the model writes one)", "一行白鹭上青天")
    page.locator("h3", has_text="一行白鹭上青天").first.wait_for(timeout=60_000)
    page.get_by_role("slider", name="Step").focus()
    page.keyboard.press("End")
    line = page.locator("p", has_text="Writing character").first
    line.filter(has_text="7 of 7").wait_for(timeout=30_000)
    assert "一行白鹭上青[天]" in line.inner_text() and "*" not in line.inner_text()
    assert line.locator("strong", has_text="天").count() == 1  # the character being written, in bold


def test_a_long_paste_into_scoring_is_cut_in_the_box_and_said(page):
    page.goto(f"{page.base_url}/scoring")
    page.wait_for_selector(PLOT_DRAWN, timeout=60_000)
    page.get_by_text("real: minilm").click()
    page.get_by_label("text", exact=True).wait_for(timeout=60_000)
    type_into(page, "text", "the cat sat on the mat " * 130)  # 2,990 characters, pasted at once
    page.get_by_text("The text had 2,990 characters").wait_for(timeout=60_000)
    assert len(page.get_by_label("text", exact=True).input_value()) == 200


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


def test_a_refused_file_type_is_said_on_the_page_and_sizes_match_the_uploader(
    page, tiny_rnn_checkpoint, tmp_path
):
    notes = tmp_path / "notes.txt"
    notes.write_text("just some notes\n")
    page.goto(f"{page.base_url}/checkpoint")
    page.get_by_text("No checkpoint yet").wait_for(timeout=60_000)
    page.locator('input[type="file"]').first.set_input_files(str(notes))
    page.get_by_text("Refused: notes.txt").wait_for(timeout=60_000)
    assert ".safetensors" in page.get_by_text("Refused: notes.txt").inner_text()
    assert page.get_by_text("No checkpoint yet").count() == 0
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=SHOTS / "checkpoint_refused_type.png")

    page.locator('input[type="file"]').first.set_input_files(str(tiny_rnn_checkpoint))
    page.wait_for_selector(PLOT_DRAWN, timeout=90_000)
    shown = page.locator('[data-testid="stFileUploader"]').inner_text()  # e.g. "tiny.safetensors 42.1KB"
    (uploader_size,) = re.findall(r"([\d.,]+)\s*KB", shown)
    caption = page.get_by_text("model id upload:").first.inner_text()
    assert f"{uploader_size} kB" in caption, (shown, caption)
