"""Issue 17 under AppTest, on the pages that need no bundled weights: Scoring, Attention pooling,
the Checkpoint inspector (items 3, 4, 8, 10, 11). Each test failed before its fix.

AppTest reads the Markdown source of an element (``.value``), so "shown as text" means the
user's text is there escaped (``ui.widgets.plain``) and none of its raw syntax is; the browser
tests render it (tests/browser/test_page_defects_browser.py).
"""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from attention_atlas.models.uploads import Limits
from attention_atlas.ui.widgets import plain
from tests.support import charts, page_runner

K = "ckpt_"
scoring = page_runner("app_pages/scoring.py", 300)
pooling = page_runner("app_pages/pooling.py", 120)
checkpoint = page_runner("app_pages/checkpoint.py", 120)


def upload(at: AppTest, name: str, data: bytes) -> AppTest:
    at.file_uploader(key=K + "file").set_value((name, data, "application/octet-stream"))
    return checkpoint(at)


def bodies(at: AppTest) -> list[str]:
    """Every element body that Streamlit renders as Markdown."""
    kinds = ("markdown", "subheader", "caption", "info", "warning", "error", "success")
    return [e.value for kind in kinds for e in at.get(kind)]


# -- item 3: nothing of one session's upload shows in another's ------------------------------------


def test_the_same_bytes_in_a_second_session_show_that_sessions_file_name(tiny_rnn_checkpoint):
    data = tiny_rnn_checkpoint.read_bytes()
    first = upload(checkpoint(), "couplet.safetensors", data)
    assert first.subheader[0].value == plain("couplet.safetensors")
    second = upload(checkpoint(), "my_run_v2.safetensors", data)  # another browser session, same server
    assert second.subheader[0].value == plain("my_run_v2.safetensors")
    assert not any("couplet.safetensors" in b for b in bodies(second))


# -- item 4: a file name is shown as text ----------------------------------------------------------


def test_an_uploaded_file_name_is_shown_as_text(tiny_transformer_checkpoint):
    name = "**bold** [x](#top) $x^2$ :smile: www.example.com.safetensors"  # a file name has no /
    at = upload(checkpoint(), name, tiny_transformer_checkpoint.read_bytes())
    assert at.subheader[0].value == plain(name)
    assert not any(raw in b for b in bodies(at) for raw in ("**bold**", "[x](", "$x^2$", ":smile:", "www."))


# -- item 8: a paste longer than a box's limit is cut, and the page says so ------------------------


def test_a_long_paste_into_scorings_box_is_cut_said_and_used():
    at = scoring()
    at.radio(key="scoring_source").set_value("real: minilm")
    at = scoring(at)
    before = charts(at)[0]["data"][0]["x"]
    at.text_input(key="scoring_text").set_value("the cat sat on the mat " * 130)  # 2,990 characters
    at = scoring(at)
    box = at.text_input(key="scoring_text")
    assert len(box.value) == 200 and "2,990 characters" in at.warning[0].value
    assert "first 200" in at.warning[0].value
    assert charts(at)[0]["data"][0]["x"] != before  # the cut sentence is what is drawn


# -- item 10: a refused file type and the sizes, said on the page in the uploader's units -----------


def test_a_refused_file_type_is_said_on_the_page_with_the_accepted_types():
    at = checkpoint()
    assert not at.file_uploader(key=K + "file").proto.type  # the browser would refuse it silently
    at = upload(at, "notes.txt", b"just some notes\n")
    (error,) = at.error
    assert error.value.startswith("Refused: notes.txt") and ".safetensors" in error.value
    assert ".zip" in error.value and not any("No checkpoint yet" in i.value for i in at.info)


def test_sizes_and_the_limit_are_in_the_uploaders_megabytes(tiny_rnn_checkpoint):
    data = tiny_rnn_checkpoint.read_bytes()
    at = upload(checkpoint(), "tiny.safetensors", data)
    uploader = at.file_uploader(key=K + "file").proto
    import streamlit as st

    server = int(st.get_option("server.maxUploadSize"))  # Streamlit refuses larger files itself
    cap = min(Limits.from_env().max_bytes // 1_000_000, server)  # the uploader's MB: 10⁶ bytes
    assert cap <= server
    assert uploader.max_upload_size_mb == cap and f"up to {cap:,} MB" in uploader.label
    assert any(f"{len(data) / 1000:,.1f} kB" in c.value for c in at.caption)  # as the uploader shows it


# -- item 11: out-of-range numbers are refused with a message; counts agree -------------------------


def test_an_out_of_range_layer_is_refused_with_a_message_and_the_chart_follows():
    at = scoring()
    at.radio(key="scoring_source").set_value("real: minilm")
    at = scoring(at)
    layer = at.number_input(key="scoring_layer")
    assert "(0–5)" in layer.label
    at = scoring(layer.set_value(9))
    assert any("9 is outside 0–5" in w.value for w in at.warning)
    assert at.number_input(key="scoring_layer").value == 5
    assert any("layer 5" in c.value for c in at.caption)
    at = scoring(at)
    assert not at.warning  # said once, for the number that was refused


def test_a_negative_seed_is_refused_with_a_message():
    for page, key in ((scoring, "scoring_seed"), (pooling, "pool_seed")):
        at = page()
        at = page(at.number_input(key=key).set_value(-5))
        assert any("-5 is outside 0–99,999" in w.value for w in at.warning), page
        assert at.number_input(key=key).value == 0
