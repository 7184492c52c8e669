"""ui/watch_learn.SessionWatch: a run goes on while its page redraws and its browser is connected."""

from __future__ import annotations

from attention_atlas.ui.watch_learn import SessionWatch


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_watch_says_gone_after_idle_seconds_without_a_redraw():
    clock = Clock()
    watch = SessionWatch("s", idle=60, grace=10, connected=lambda _: True, clock=clock)
    for _ in range(30):  # the page redrawn every 2 s
        clock.now += 2
        watch.beat()
        assert watch()
    clock.now += 59
    assert watch()
    clock.now += 2
    assert not watch()


def test_a_saturated_server_redrawing_late_does_not_stop_a_visitor_still_watching():
    """Issue 40: under saturation the redraws came 30, 45, then 70 s apart and the run stopped at 60 s
    though the visitor was still there; twice the last gap is allowed where it is longer than idle."""
    clock = Clock()
    watch = SessionWatch("s", idle=60, grace=10, connected=lambda _: True, clock=clock)
    for gap in (30, 45, 70):
        clock.now += gap
        assert watch()
        watch.beat()
    clock.now += 139
    assert watch()  # under 2 × 70 s since the last redraw
    clock.now += 2
    assert not watch()


def test_watch_allows_a_short_disconnect_but_not_a_long_one():
    clock, link = Clock(), {"up": True}
    watch = SessionWatch("s", idle=600, grace=10, connected=lambda _: link["up"], clock=clock)
    link["up"] = False
    assert watch()  # a network blip: the browser may reconnect
    clock.now += 5
    assert watch()
    link["up"] = True
    assert watch()
    link["up"] = False
    clock.now += 5
    assert watch()  # the grace starts again after a reconnect
    clock.now += 11
    assert not watch()


def test_outside_a_server_only_the_redraws_count():
    watch = SessionWatch(None)  # AppTest, or a script: no runtime to ask
    assert watch()
