"""A gpt-oss-style model with learned sink logits, uploaded to the Checkpoint inspector (issue 26):
its rows sum to 1 − the sink's mass, and the page shows it (the record refused it before), with
the notice saying how much the sink takes."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from harness.tiny_variants import tiny_variant
from tests.support import folder_zip, hf_folder, page_runner

run = page_runner("app_pages/checkpoint.py", 120)


def test_a_sink_model_upload_is_shown_with_its_sink_notice(tmp_path):
    model = tiny_variant("gpt_oss", num_hidden_layers=2)  # learned sinks drawn to take visible mass
    data = folder_zip(hf_folder(model, tmp_path), "tiny-gpt-oss")
    at: AppTest = run()
    at.file_uploader(key="ckpt_file").set_value(("tiny-gpt-oss.zip", data, "application/octet-stream"))
    at = run(at)
    assert not at.exception and not at.error, [e.value for e in at.error]
    shown = " ".join(str(x.value) for x in [*at.caption, *at.info, *at.warning, *at.markdown])
    assert "learned sink logits" in shown and "sum to 1 minus the mass its sink takes" in shown
