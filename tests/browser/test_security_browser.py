"""Security review in chromium (issue 15, docs/SECURITY.md): markup typed as text stays text in
every view, the live model and head views included, Markdown typed into a heading stays text,
and the served app fetches nothing from another host.

``<img src=x onerror=alert(1)>`` is typed into Transformer heads, Couplets, Translation and
Scoring (a real model's text). On each page: no dialog opens, no ``<img src="x">`` exists in any
frame, no element carries an ``onerror`` attribute, the token text is on the page as text (the
charts' tick labels hold its pieces, ``<`` and ``>`` among them where the tokenizer keeps them), and no Streamlit
exception box shows. Every request the browser
made went to the app's own loopback address.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from urllib.parse import urlsplit

import pytest

from harness.browser import EXCEPTION_BOX, PLOT_DRAWN

pytestmark = pytest.mark.browser
PAYLOAD = "<img src=x onerror=alert(1)>"
FRENCH = "[cliquez ici](http://example.com) **gras** `code` $x^2$ ![img](http://127.0.0.1:9/x.png)"
MAIN = '[data-testid="stMain"]'


@pytest.fixture(scope="module")
def page(app_url, new_page):
    with new_page(height=2400) as pg:
        pg.base_url = app_url
        pg.requested, pg.dialogs = [], []
        pg.on("request", lambda request: pg.requested.append(request.url))
        pg.on("dialog", lambda dialog: (pg.dialogs.append(dialog.message), dialog.dismiss()))
        yield pg


def type_into(page, label: str, text: str) -> None:
    box = page.get_by_role("textbox", name=label, exact=True)  # the sidebar's language switch is "English" too
    box.fill(text)
    box.press("Enter")


def chart_text(page) -> list[str]:
    """Every SVG text node of every Plotly chart on the page (tick labels, titles, annotations)."""
    return page.evaluate(
        """() => Array.from(document.querySelectorAll('.js-plotly-plot svg text'))
            .map((t) => t.textContent)"""
    )


def injected(page) -> list[str]:
    """``<img src="x">`` elements in any frame of the page (the payload rendered as markup)."""
    return [f.url for f in page.frames for _ in range(f.locator('img[src="x"]').count())]


def settle(page, expected: str) -> list[str]:
    """Wait until a chart shows ``expected`` in its text, then let the page go quiet; its chart text."""
    page.wait_for_function(
        """(word) => Array.from(document.querySelectorAll('.js-plotly-plot svg text'))
            .some((t) => t.textContent.includes(word))""",
        arg=expected,
        timeout=120_000,
    )
    page.wait_for_load_state("networkidle")
    page.wait_for_timeout(1500)  # an onerror would fire by now
    return chart_text(page)


def check_page(page, texts: list[str], words: tuple[str, ...]) -> None:
    assert page.dialogs == [], page.dialogs
    assert injected(page) == []
    for word in words:  # the tokens, shown as text
        assert any(word in t for t in texts), (word, texts[:60])
    assert page.evaluate("() => document.querySelectorAll('[onerror]').length") == 0
    assert page.locator(EXCEPTION_BOX).count() == 0


def test_transformer_heads_model_and_head_views(page):
    """The live component (ui/live_heads.js): model view tiles and the head view's token axes."""
    page.goto(f"{page.base_url}/transformer")
    page.wait_for_selector(PLOT_DRAWN, timeout=180_000)
    type_into(page, "text", PAYLOAD)
    check_page(page, settle(page, "alert"), ("alert", "<", ">", "im"))  # minilm: < im ##g sr ##c …


def test_couplets(page):
    page.goto(f"{page.base_url}/couplets")
    page.wait_for_selector(PLOT_DRAWN, timeout=120_000)
    type_into(page, "Upper line 上联", PAYLOAD)
    check_page(page, settle(page, "<"), ("<", ">", "="))
    heading = page.locator("h3", has_text="onerror").first.inner_text()
    assert "<imgsrc=xonerror=alert(1)>" in heading.replace("\u2060", "")  # the line as typed, spaces dropped


def test_translation(page):
    page.goto(f"{page.base_url}/translation")
    page.wait_for_selector(PLOT_DRAWN, timeout=120_000)
    type_into(page, "English", PAYLOAD)
    check_page(page, settle(page, "img"), ("img",))


def test_scoring_with_a_real_model(page):
    page.goto(f"{page.base_url}/scoring")
    page.wait_for_selector(PLOT_DRAWN, timeout=120_000)
    page.get_by_text("real: minilm", exact=True).first.click()  # word pieces: "alert" is one token
    page.get_by_label("text", exact=True).wait_for(timeout=120_000)
    type_into(page, "text", PAYLOAD)
    check_page(page, settle(page, "alert"), ("alert", "<", ">"))


def markup_from(page, words: tuple[str, ...]) -> list[str]:
    """Links, bold, code, images and math in the page's main area that hold one of ``words``."""
    return page.locator(MAIN).evaluate(
        """(main, words) => Array.from(main.querySelectorAll('a, strong, em, code, img, .katex'))
            .filter((e) => !(e.tagName === 'A' && e.getAttribute('href').startsWith('#')))  // heading anchors
            .map((e) => e.tagName + ' ' + (e.textContent || '') + ' ' + (e.getAttribute('href') || e.getAttribute('src') || ''))
            .filter((s) => words.some((w) => s.includes(w)))""",
        list(words),
    )


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


def test_an_upload_without_the_xsrf_token_is_refused(page):
    """XSRF protection is on in the served app: a cross-site upload (no ``_streamlit_xsrf`` cookie
    and header) gets 403 before any byte reaches a session."""
    request = urllib.request.Request(
        f"{page.base_url}/_stcore/upload_file/session/file",
        data=b"--b\r\nContent-Disposition: form-data; name=file; filename=x.pt\r\n\r\nx\r\n--b--\r\n",
        headers={"Content-Type": "multipart/form-data; boundary=b"},
        method="PUT",
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    assert refused.value.code == 403 and "xsrf" in refused.value.read().decode().lower()


def test_the_browser_fetched_nothing_from_another_host(page):
    """Run last: every request of the tests above (pages, scripts, fonts, plotly.min.js)."""
    assert len(page.requested) > 20
    hosts = {urlsplit(u).hostname for u in page.requested if not u.startswith(("data:", "blob:", "about:"))}
    assert hosts == {"127.0.0.1"}, f"the browser fetched from {hosts}"
