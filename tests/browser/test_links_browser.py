"""Links that reproduce a view, in chromium (issue 14): a link opened in a fresh browser context shows
its view, a moved widget updates the address bar and survives a reload, a bad link shows one notice
line, and a lesson link on Home opens its page in the lesson's state."""

from urllib.parse import parse_qs, urlparse

import pytest

from harness.browser import EXCEPTION_BOX, PLOT_DRAWN, open_sidebar, wait_still

pytestmark = pytest.mark.browser
IDLE = '[data-test-script-state="notRunning"]'


@pytest.fixture
def fresh(new_page):
    """A page in a fresh browser context (no cookies, no session): as a student opening the link."""
    with new_page(1400, 1000) as page:
        yield page


def settle(page) -> None:
    page.wait_for_selector(PLOT_DRAWN, timeout=120_000)
    page.wait_for_selector(IDLE, timeout=120_000)
    page.wait_for_load_state("networkidle")
    wait_still(page)


def query(page) -> dict[str, str]:
    return {k: v[-1] for k, v in parse_qs(urlparse(page.url).query, keep_blank_values=True).items()}


def slider_value(page, label: str) -> str:
    box = page.locator('[data-testid="stSlider"]', has_text=label).first
    return box.locator('[data-testid="stSliderThumbValue"]').inner_text().strip()


def selected(page, label: str) -> str:
    return page.locator('[data-testid="stSelectbox"]', has_text=label).first.locator("input").input_value()


def test_a_scoring_link_shows_its_view_in_a_fresh_browser(fresh, app_url):
    fresh.goto(f"{app_url}/scoring?mask=strided&n=12&stride=4&relbias=1", timeout=120_000)
    settle(fresh)
    assert selected(fresh, "mask") == "strided"
    assert slider_value(fresh, "queries = keys") == "12" and slider_value(fresh, "stride") == "4"
    assert fresh.get_by_role("switch", name="add a relative position bias").is_checked()
    assert query(fresh) == {"mask": "strided", "n": "12", "stride": "4", "relbias": "1"}
    fresh.get_by_text("Link to this view").click()
    shown = fresh.locator('[data-testid="stSidebar"] code').inner_text()
    assert shown == f"{app_url}/scoring?mask=strided&n=12&stride=4&relbias=1"


def test_a_moved_widget_updates_the_address_and_a_reload_keeps_it(fresh, app_url):
    fresh.goto(f"{app_url}/couplets?text=白日依山尽", timeout=120_000)
    settle(fresh)
    assert fresh.get_by_label("Upper line 上联").input_value() == "白日依山尽"
    fresh.get_by_text("Dot and additive side by side").click()
    fresh.wait_for_function("location.search.includes('both=1')", timeout=60_000)
    settle(fresh)
    assert query(fresh) == {"text": "白日依山尽", "both": "1"}
    fresh.reload()
    settle(fresh)
    assert fresh.get_by_role("switch", name="Dot and additive side by side").is_checked()
    assert fresh.get_by_label("Upper line 上联").input_value() == "白日依山尽"
    assert fresh.locator(".js-plotly-plot").count() >= 3  # both heatmaps and the difference


def test_a_bad_link_opens_with_defaults_and_one_notice_line(fresh, app_url):
    fresh.goto(f"{app_url}/pooling?kernel=nope&n=9999&h=abc", timeout=120_000)
    settle(fresh)
    notices = fresh.locator('[data-testid="stAlert"]', has_text="This link's")
    assert notices.count() == 1
    text = notices.inner_text()
    assert "kernel “nope” is unknown" in text and "n 9999 is out of range (10–200)" in text
    assert "h “abc” is not a number" in text
    assert fresh.locator(EXCEPTION_BOX).count() == 0
    assert selected(fresh, "kernel") == "gaussian" and slider_value(fresh, "training points") == "50"
    assert query(fresh) == {}


def test_a_lesson_link_on_home_opens_its_page_in_the_lessons_state(fresh, app_url):
    fresh.goto(app_url, timeout=120_000)
    fresh.wait_for_selector("h1", timeout=120_000)
    fresh.get_by_text("Sparse masks and relative position bias").click()
    settle(fresh)
    assert urlparse(fresh.url).path == "/scoring"
    assert query(fresh) == {"n": "12", "mask": "local window", "window": "2", "relbias": "1"}
    assert selected(fresh, "mask") == "local window" and slider_value(fresh, "local window") == "2"
    assert fresh.get_by_role("switch", name="add a relative position bias").is_checked()


def test_projector_mode_stays_on_when_moving_to_another_page(fresh, app_url):
    fresh.goto(f"{app_url}/scoring?present=1", timeout=120_000)
    settle(fresh)
    open_sidebar(fresh)
    fresh.locator('[data-testid="stSidebarNav"]').get_by_text("Attention pooling").click()
    fresh.wait_for_url("**/pooling**", timeout=60_000)
    settle(fresh)
    assert query(fresh).get("present") == "1"
    open_sidebar(fresh)
    assert fresh.get_by_role("switch", name="Projector mode").is_checked()
