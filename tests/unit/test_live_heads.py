"""ui.live_heads: what the browser gets to redraw a head by itself, and what a click may ask for."""

import base64
import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import plotly.io as pio
import pytest
from streamlit.components.lib.local_component_registry import LocalComponentRegistry
from streamlit.components.v1 import component_registry as v1

from attention_atlas.ui import live_heads
from attention_atlas.viz_core import wire
from attention_atlas.viz_core.figures import display_precision, head_view
from attention_atlas.viz_core.record import AttentionRecord


def record(layers: int, heads: int, n: int, seed: int = 0) -> AttentionRecord:
    rng = np.random.default_rng(seed)
    scores = rng.normal(size=(layers, heads, n, n)) * 3
    weights = np.exp(scores) / np.exp(scores).sum(-1, keepdims=True)
    tokens = [f"t{i}" for i in range(n)]
    return AttentionRecord(weights.astype(np.float32), tokens, tokens, "self", "test")


def unpack16(codes: np.ndarray) -> np.ndarray:
    """What ui/live_heads.js does with the codes, in numpy."""
    codes = codes.astype(np.uint32)
    bits = np.where(codes == 0, 0, ((codes >> 10) + 64) << 23 | (codes & 1023) << 13)
    return bits.astype(np.uint32).view(np.float32)


def test_16_bit_codes_hold_display_precision_weights_exactly():
    rng = np.random.default_rng(1)
    weights = np.concatenate([rng.random(50_000) ** 30, [0.0, 1.0, 2.0**-62, 2.0**-63, 1e-30, 0.5]])
    weights = weights.astype(np.float32)
    assert np.array_equal(unpack16(wire.pack16(weights)), display_precision(weights))


def test_every_head_redrawn_from_the_payload_matches_pythons_figure():
    rec = record(3, 4, 9)
    payload = wire.all_heads(rec, "rid")
    codes = np.frombuffer(base64.b64decode(payload["weights"]), "<u2")
    weights = unpack16(codes).reshape(payload["shape"])
    for layer in range(3):
        for head in range(4):
            fig = json.loads(pio.to_json(head_view(rec, layer, head), validate=False))
            trace, i = fig["data"][0], layer * 4 + head
            z = np.frombuffer(base64.b64decode(trace["z"]["bdata"]), trace["z"]["dtype"]).reshape(9, 9)
            assert np.array_equal(weights[layer, head], z)  # the same bytes, not just close
            assert payload["zmax"][i] == trace["zmax"]
            assert payload["titles"][i] == fig["layout"]["title"]["text"]


def test_records_too_big_to_send_whole_get_no_payload():
    rec = record(2, 2, 8)
    assert wire.all_heads(rec, "rid") is not None
    n = int((wire.MAX_HEADS_BYTES / (2 * 2 * 2)) ** 0.5) + 1  # 2 layers × 2 heads × 2 bytes
    assert wire.all_heads(record(2, 2, n), "rid") is None


@pytest.mark.parametrize(
    "pick, expected",
    [
        ({"layer": 1, "head": 2}, (1, 2)),
        ({"layer": "1", "head": "2"}, (1, 2)),
        ({"layer": 6, "head": 0}, None),  # no layer 6
        ({"layer": 0, "head": -1}, None),
        ({"layer": "<script>", "head": 0}, None),
        ({"head": 0}, None),
        ("layer 1", None),
        (None, None),
    ],
)
def test_a_click_from_the_browser_is_checked_before_use(monkeypatch, pick, expected):
    monkeypatch.setattr(live_heads.st, "session_state", {"k_model": SimpleNamespace(pick=pick)})
    assert live_heads.picked("k", layers=6, heads=12) == expected


@pytest.mark.parametrize("base, prefix", [("", ""), ("/atlas/", "/atlas")])
def test_plotly_js_is_the_plotly_packages_own_file_served_as_a_components_folder(monkeypatch, base, prefix):
    registry = LocalComponentRegistry()
    server = SimpleNamespace(component_registry=registry)
    monkeypatch.setattr(live_heads, "runtime", SimpleNamespace(exists=lambda: True, get_instance=lambda: server))
    monkeypatch.setattr(v1, "get_instance", lambda: server)  # declare_component registers in a script run
    monkeypatch.setattr(v1, "get_script_run_ctx", lambda: object())
    monkeypatch.setattr(live_heads.st, "get_option", lambda name: base)
    url = live_heads.plotly_url()
    assert url == f"{prefix}/component/{live_heads.PLOTLY_COMPONENT}/plotly.min.js"
    folder = registry.get_component_path(live_heads.PLOTLY_COMPONENT)
    assert Path(folder, "plotly.min.js") == live_heads.PLOTLY_JS
    assert live_heads.plotly_url() == url and len(registry.get_components()) == 1  # registered once


def held_app():
    """A layer slider a button's callback sets with ``hold`` (as a click on a tile does), on a page
    that polls (its fragments rerun on a timer) unless the session says not."""
    import streamlit as st

    from attention_atlas.ui.widgets import hold, keep_held, last_poll

    st.button("pick layer 5", on_click=lambda: hold("g", {"layer": 5}))
    if st.button("last poll"):  # the timed run that finds the work done, as the long-input page's progress
        last_poll()
        st.session_state["polling"] = False
        st.rerun()
    keep_held("g", st.session_state.get("polling", True))
    st.slider("layer", 0, 9, key="layer")


def test_a_held_value_outlives_a_rerun_that_brings_the_old_one_back():
    """A timed rerun that left the browser before the click's run reached it carries the old value;
    the held value wins until the browser reports it back, and the slider is the user's again."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(held_app).run()
    at.slider(key="layer").set_value(2).run()
    at.button[0].click().run()
    assert at.slider(key="layer").value == 5
    at.slider(key="layer").set_value(2).run()  # the stale rerun: the browser still had 2
    assert at.slider(key="layer").value == 5
    at.run()  # the browser reports 5 back: no longer held
    at.slider(key="layer").set_value(7).run()  # the user's own move stands
    assert at.slider(key="layer").value == 7


def test_the_poll_that_ends_polling_keeps_a_held_value_against_the_old_one():
    """The last timed rerun (its work done, it reruns the page once to stop polling) may carry the
    old value too; the page that no longer polls opens with the held value, then lets it go."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(held_app).run()
    at.slider(key="layer").set_value(2).run()
    at.button[0].click().run()
    at.slider(key="layer").set_value(2)  # the browser has not drawn the click's run yet
    at.button[1].click().run()
    assert at.slider(key="layer").value == 5 and at.session_state["polling"] is False
    at.slider(key="layer").set_value(7).run()  # no longer held: the user's own move stands
    assert at.slider(key="layer").value == 7


def test_without_polling_the_next_rerun_is_the_users_own():
    """Where nothing reruns on a timer, the rerun after the click's is the user's: it stands."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(held_app)
    at.session_state["polling"] = False
    at.run()
    at.button[0].click().run()
    assert at.slider(key="layer").value == 5
    at.slider(key="layer").set_value(2).run()  # the user's move, right after the click
    assert at.slider(key="layer").value == 2
