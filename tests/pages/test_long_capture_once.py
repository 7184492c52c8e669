"""Issue 27, item 7: on a loaded machine the long-input page captured the same text twice (the bar
reached 29/30 layers and started again at 0/30, "Captured … in 16.9 s" became "33.6 s") and showed
two progress bars. The server's janitor drops its caches once no page has asked for a model result
for its quiet spell; the long-input page never said it was asking, so a capture whose summaries
took longer than that spell was dropped while the page was working on it, and the next rerun
captured it again. Here the machine is made slow by pausing the summaries' own job (they never
finish, as on a machine far slower than the janitor's spell) and the spell is shortened (6 s)."""

import time

import pytest
from streamlit.testing.v1 import AppTest

from attention_atlas.ui import cached
from attention_atlas.ui import long_cached as lc
from tests.support import PACKAGE, page_runner

run = page_runner("app_pages/long_input.py", 300)
TEXT = "The cat sat on the mat because it was tired. " * 12  # 134 tokens in minilm
QUIET = 6.0  # s: the janitor's quiet spell (60 s on a server; a rerun here under load takes 1-3 s)


@pytest.fixture
def short_janitor(monkeypatch):
    """A fresh janitor whose quiet spell is ``QUIET``; afterwards it falls asleep and the next test
    gets the server's own."""
    monkeypatch.setattr(cached, "QUIET", QUIET)
    cached.janitor.clear()
    keeper = cached.janitor()
    yield keeper
    keeper.quiet = 1e9  # its thread sleeps for good after its current look
    monkeypatch.undo()
    cached.janitor.clear()


@pytest.fixture
def unfinished(monkeypatch, short_janitor):
    """The text's capture, its summaries a background job held paused: still being worked on."""
    monkeypatch.setattr(lc, "SYNC_CELLS", 0)
    lc.long_input.clear()
    long = lc.long_input("minilm", TEXT)
    long.summaries.job.pause()
    yield long
    long.summaries.job.stop()
    lc.long_input.clear()


@pytest.mark.slow
def test_a_text_the_page_is_working_on_is_captured_once_however_slow_and_shows_one_bar(
    unfinished, short_janitor
):
    at = AppTest.from_file(PACKAGE / "app_pages" / "long_input.py", default_timeout=300)
    at.query_params.update({"model": "minilm", "source": "text", "text": TEXT})
    at = run(at)  # the page's first run (its imports) before the clock starts
    short_janitor.used()  # a model run (another page, another visitor) starts the janitor's clock
    end = time.monotonic() + 2.5 * QUIET  # reruns for longer than the janitor's quiet spell
    while time.monotonic() < end:
        time.sleep(0.3)
        at = run(at)
        assert lc.long_input("minilm", TEXT) is unfinished, "the text was captured again"
    (bar,) = at.get("progress")  # one bar, above the tabs, however many views poll the work
    assert "0 of 6 layers" in bar.proto.text
    assert any(f"in {unfinished.seconds:.1f} s" in c.value for c in at.caption)
