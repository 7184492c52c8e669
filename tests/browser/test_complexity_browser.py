"""The self-attention / CNN / RNN comparison in chromium: it measures, draws its three charts (log-log
time and memory, the path graphs) and shows no exception box, also in projector mode."""

from __future__ import annotations

import pytest

from harness.browser import EXCEPTION_BOX, PLOT_DRAWN

pytestmark = pytest.mark.browser
CHARTS = "document.querySelectorAll('.js-plotly-plot .main-svg .cartesianlayer').length >= 3"


@pytest.mark.parametrize(
    ("query", "size"),
    [
        ("", dict(width=1280, height=720)),
        ("?present=1&to=256", dict(width=853, height=480, device_scale_factor=1.5)),
    ],
)
def test_the_comparison_draws_its_charts_without_exception(app_url, new_page, query, size):
    with new_page(**size) as page:
        page.goto(f"{app_url}/complexity{query}")
        page.wait_for_selector(PLOT_DRAWN, timeout=180_000)
        page.wait_for_function(CHARTS, timeout=180_000)
        assert page.locator(EXCEPTION_BOX).count() == 0
        time_chart = page.locator(".js-plotly-plot").first
        assert "slope" in time_chart.locator(".legend").text_content()
        assert "sequence length n" in time_chart.locator(".xtitle").text_content()
        paths = page.locator(".js-plotly-plot").nth(2)
        titles = paths.locator(".annotation-text").all_text_contents()
        assert any(t.startswith("self-attention: 1 layer") for t in titles)
