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
    """Every figure on the page: first those drawn by live_heads (model view, head view), then
    the ``st.plotly_chart`` ones, each in page order."""
    live = [json.loads(json.loads(c.proto.json)["figure"]) for c in at.get("bidi_component")]
    return live + [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
