"""A lesson link's ``section`` (Home's lessons, ``ui.url_state.section``): the page scrolls that
heading into view once, the setting leaves the URL without a notice, and a later rerun does not
scroll again. That it really lands there is tests/browser/test_lesson_links_browser.py."""

from attention_atlas.ui.url_state import SECTION
from tests.pages.test_links import open_link, rerun


def scrolls(at) -> list[str]:
    return [e.proto.body for e in at.get("html") if "scrollIntoView" in e.proto.body]


def test_a_lesson_section_scrolls_once_and_leaves_the_url():
    at = open_link("scoring", {"source": "random", "d": "128", SECTION: "why-divide-by-sqrt-d"})
    assert not at.warning, [w.value for w in at.warning]  # not "setting “section” does not apply here"
    (script,) = scrolls(at)
    assert '"why-divide-by-sqrt-d"' in script and SECTION not in at.query_params
    assert at.query_params["d"] == "128"
    assert scrolls(rerun(at)) == []  # the visitor moves on: no second jump


def test_a_section_the_page_lacks_scrolls_nowhere():
    at = open_link("scoring", {SECTION: "no-such-part"})
    assert not at.warning and not scrolls(at) and SECTION not in at.query_params
