"""One real upload through chromium: Playwright's ``set_input_files`` on the page's file input."""

from __future__ import annotations

import hashlib

import pytest
import torch

from harness.browser import EXCEPTION_BOX, PLOT_DRAWN, browser_page, chromium_missing, streamlit_server
from tests.support import SHOTS, SystemCall, torch_bytes

pytestmark = pytest.mark.browser


def test_upload_a_checkpoint_then_a_hostile_file(tiny_rnn_checkpoint, tmp_path):
    problem = chromium_missing()
    assert problem is None, problem
    good = tiny_rnn_checkpoint
    marker = tmp_path / "pwned"
    evil = tmp_path / "evil.pt"
    evil.write_bytes(torch_bytes({"w": torch.zeros(2), "x": SystemCall(marker)}))
    SHOTS.mkdir(exist_ok=True)
    with streamlit_server() as url, browser_page(height=2400) as page:
        page.goto(f"{url}/checkpoint")
        page.get_by_text("No checkpoint yet").wait_for(timeout=60_000)
        page.screenshot(path=SHOTS / "checkpoint_empty.png")

        page.locator('input[type="file"]').first.set_input_files(str(good))
        page.wait_for_selector(PLOT_DRAWN, timeout=90_000)
        page.get_by_text(hashlib.sha256(good.read_bytes()).hexdigest()).first.wait_for(timeout=30_000)
        page.wait_for_load_state("networkidle")
        assert page.locator(EXCEPTION_BOX).count() == 0
        assert page.get_by_text("couplet-rnn", exact=True).first.is_visible()
        assert page.locator(".js-plotly-plot").count() >= 3  # the alignment, then it beside the bundled one
        page.screenshot(path=SHOTS / "checkpoint_upload.png", full_page=True)

        page.locator('input[type="file"]').first.set_input_files(str(evil))
        page.get_by_text("Refused: evil.pt").wait_for(timeout=60_000)
        assert page.locator(EXCEPTION_BOX).count() == 0 and not marker.exists()
        page.screenshot(path=SHOTS / "checkpoint_refused.png")
