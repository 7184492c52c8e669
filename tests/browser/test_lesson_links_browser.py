"""Home's lesson links land on the part of the page the lesson discusses (``ui.url_state.section``),
not the top: the heading is in view once the page has drawn, at 1280 × 720 and in projector mode at
853 × 480 (scale 1.5). An address with ``#anchor`` opened afresh lands there too (Streamlit's own)."""

from __future__ import annotations

import re

import pytest

from harness.browser import EXCEPTION_BOX

pytestmark = [pytest.mark.browser, pytest.mark.timeout(900)]  # Couplets loads its models on a busy machine

LESSONS = [
    ("The couplet seq2seq", "step-through"),
    ("Scoring functions and √d", "why-divide-by-sqrt-d"),
    (r"Is attention an explanation\? \(1\)", "faithfulness"),
]
# the heading's place in the window once the scrolling is over: [top, bottom, window height]
PLACE = """id => { const el = document.getElementById(id); if (!el) return null;
  const r = el.getBoundingClientRect(); return [r.top, r.bottom, innerHeight]; }"""
SETTLED = f"""id => {{ const p = ({PLACE})(id); if (!p) return false;
  const was = window.__lastTop; window.__lastTop = p[0]; return was === p[0] && p[0] >= 0 && p[1] <= p[2]; }}"""


def landed(page, anchor: str) -> list[float]:
    page.locator(f"#{anchor}").wait_for(timeout=300_000)
    try:
        page.wait_for_function(SETTLED, arg=anchor, timeout=120_000, polling=1000)
    except Exception as e:
        raise AssertionError(f"{anchor} not settled in view: {page.evaluate(PLACE, anchor)}") from e
    assert page.locator(EXCEPTION_BOX).count() == 0
    return page.evaluate(PLACE, anchor)


@pytest.mark.parametrize(
    ("width", "height", "scale", "query"), [(1280, 720, 1, ""), (853, 480, 1.5, "?present=1")]
)
def test_a_lesson_link_scrolls_its_section_into_view(app_url, new_page, width, height, scale, query):
    with new_page(width, height, device_scale_factor=scale) as page:
        page.set_default_timeout(300_000)
        for label, anchor in LESSONS:
            page.goto(f"{app_url}/{query}")
            page.get_by_role("link", name=re.compile(label)).click()
            top, bottom, seen = landed(page, anchor)
            assert top >= 0 and bottom <= seen, (label, top, bottom, seen)
            scrolled = page.evaluate("document.querySelector('h1').getBoundingClientRect().bottom") < 0
            assert scrolled, label  # the page's title is out of view above
            assert "section=" not in page.url  # a setting of the landing only: not kept in the link


def test_an_address_with_an_anchor_lands_on_its_heading(app_url, new_page):
    with new_page(1280, 720) as page:
        page.goto(f"{app_url}/couplets?step=3#step-through", timeout=300_000)
        top, bottom, seen = landed(page, "step-through")
        assert top >= 0 and bottom <= seen
