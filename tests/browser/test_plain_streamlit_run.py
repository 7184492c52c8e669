"""``streamlit run app.py`` from the checkout's root, with nothing but a port: the Transformer page's
live model view and head view draw (their plotly.js is the plotly package's file, served as a
component's folder whatever the server's flags), and the server writes nothing into the package."""

import urllib.request

import pytest

from attention_atlas.ui.live_heads import PLOTLY_COMPONENT, PLOTLY_JS
from harness.browser import EXCEPTION_BOX, plain_streamlit_run
from tests.support import ROOT, package_files

pytestmark = pytest.mark.browser
# Both live views drawn (the model view's tiles, the head view's title), or one of them gave up.
SETTLED = """() => {
  const charts = [...document.querySelectorAll('.js-plotly-plot')];
  const drawn = charts.length >= 2 && charts.slice(0, 2).every((c) => c.querySelector('.main-svg .cartesianlayer'));
  return drawn || document.body.innerText.includes('could not be drawn');
}"""


def test_the_live_views_draw_under_plain_streamlit_run(new_page):
    before = package_files()
    with plain_streamlit_run(ROOT) as url, new_page(height=2000) as page:
        page.goto(f"{url}/transformer")
        page.wait_for_function(SETTLED, timeout=180_000)
        assert page.get_by_text("could not be drawn").count() == 0
        assert page.locator(EXCEPTION_BOX).count() == 0
        charts = page.locator(".js-plotly-plot")
        assert charts.first.locator(".scatterlayer .point").count() == 6 * 12  # minilm's heads, one tile each
        assert "head" in charts.nth(1).locator(".gtitle").text_content()  # "layer 3, head 0"
        with urllib.request.urlopen(f"{url}/component/{PLOTLY_COMPONENT}/{PLOTLY_JS.name}", timeout=30) as r:
            assert r.read() == PLOTLY_JS.read_bytes()
    assert package_files() == before
