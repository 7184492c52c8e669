"""What the page tests share: run a page under AppTest, read back the figures it sends."""

from __future__ import annotations

import json
from collections.abc import Callable

from streamlit.testing.v1 import AppTest


def page_runner(page: str, timeout: float) -> Callable[[AppTest | None], AppTest]:
    """``run(at=None)``: run ``page`` (or rerun ``at``) and fail on any exception it shows."""

    def run(at: AppTest | None = None) -> AppTest:
        at = (at or AppTest.from_file(page, default_timeout=timeout)).run()
        assert not at.exception, [e.message for e in at.exception]
        return at

    return run


def charts(at: AppTest) -> list[dict]:
    """Every figure on the page: first those drawn by ui.live_heads (model view, head view), then
    the ``st.plotly_chart`` ones, each in page order."""
    live = [json.loads(json.loads(c.proto.json)["figure"]) for c in at.get("bidi_component")]
    return live + [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def check_unknown_long_and_empty(run: Callable, key: str, unknown: str, long: str, cut: str) -> None:
    """A text input's bad input: symbols outside the vocabulary and a text cut to ``cut``
    each get a warning; a blank text gets a prompt and no chart."""
    at = run()
    at.text_input(key=key).set_value(unknown)
    at = run(at)
    assert any("vocabulary" in w.value for w in at.warning)
    at.text_input(key=key).set_value(long)
    at = run(at)
    assert any(cut in w.value for w in at.warning)
    at.text_input(key=key).set_value("   ")
    at = run(at)
    assert at.info and not at.get("plotly_chart")
