"""Real uploads through chromium: Playwright's ``set_input_files`` on the page's file input. A good
checkpoint, then a hostile one; a refused file type, and the sizes the page gives in the uploader's units."""

from __future__ import annotations

import hashlib
import re

import pytest
import torch

from harness.browser import EXCEPTION_BOX, PLOT_DRAWN
from tests.support import SHOTS, SystemCall, torch_bytes

pytestmark = pytest.mark.browser


def test_upload_a_checkpoint_then_a_hostile_file(app_url, new_page, tiny_rnn_checkpoint, tmp_path):
    good = tiny_rnn_checkpoint
    marker = tmp_path / "pwned"
    evil = tmp_path / "evil.pt"
    evil.write_bytes(torch_bytes({"w": torch.zeros(2), "x": SystemCall(marker)}))
    SHOTS.mkdir(exist_ok=True)
    with new_page(height=2400) as page:
        page.goto(f"{app_url}/checkpoint")
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


def test_a_refused_file_type_is_said_on_the_page_and_sizes_match_the_uploader(
    app_url, new_page, tiny_rnn_checkpoint, tmp_path
):
    notes = tmp_path / "notes.txt"
    notes.write_text("just some notes\n")
    SHOTS.mkdir(exist_ok=True)
    with new_page(height=2400) as page:
        page.goto(f"{app_url}/checkpoint")
        page.get_by_text("No checkpoint yet").wait_for(timeout=60_000)
        page.locator('input[type="file"]').first.set_input_files(str(notes))
        page.get_by_text("Refused: notes.txt").wait_for(timeout=60_000)
        assert ".safetensors" in page.get_by_text("Refused: notes.txt").inner_text()
        assert page.get_by_text("No checkpoint yet").count() == 0
        page.screenshot(path=SHOTS / "checkpoint_refused_type.png")

        page.locator('input[type="file"]').first.set_input_files(str(tiny_rnn_checkpoint))
        page.wait_for_selector(PLOT_DRAWN, timeout=90_000)
        shown = page.locator('[data-testid="stFileUploader"]').inner_text()  # e.g. "tiny.safetensors 42.1KB"
        (uploader_size,) = re.findall(r"([\d.,]+)\s*KB", shown)
        caption = page.get_by_text("model id upload:").first.inner_text()
        assert f"{uploader_size} kB" in caption, (shown, caption)


def test_an_uploaded_causal_lm_opens_its_neuron_view_and_its_logit_lens(app_url, new_page, tiny_hf_folders, tmp_path):
    from tests.support import folder_zip

    upload = tmp_path / "tiny-gpt2.zip"
    upload.write_bytes(folder_zip(tiny_hf_folders["causal"], "tiny-gpt2"))
    SHOTS.mkdir(exist_ok=True)
    with new_page(height=2400) as page:
        page.goto(f"{app_url}/checkpoint")
        page.get_by_text("No checkpoint yet").wait_for(timeout=60_000)
        page.locator('input[type="file"]').first.set_input_files(str(upload))
        panel = page.get_by_text("Neuron view: how q and k make one head's weights")
        panel.wait_for(timeout=90_000)
        panel.click()
        page.get_by_text("Click a query token above").wait_for(timeout=60_000)
        page.locator("[data-testid=stButtonGroup] button").nth(1).click(timeout=60_000)
        page.get_by_text("Layer 0, head 0: query 2").wait_for(timeout=60_000)
        page.locator(".annotation-text", has_text="q ∘ K").first.wait_for(timeout=60_000)
        assert page.locator(EXCEPTION_BOX).count() == 0
        page.screenshot(path=SHOTS / "checkpoint_neuron.png", full_page=True)
        page.get_by_text("Inside a prediction: the logit lens, generation and contributions").click()
        page.locator(".gtitle", has_text="Top token after each block").wait_for(timeout=90_000)
        assert page.locator(EXCEPTION_BOX).count() == 0
        page.screenshot(path=SHOTS / "checkpoint_inside.png", full_page=True)
