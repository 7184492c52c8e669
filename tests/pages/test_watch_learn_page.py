"""The Watch attention learn page under AppTest: start → the probe heatmap and curves; pause; reset;
the waiting line. A tiny preset on a made-up cipher corpus keeps it fast (the page code is the same)."""

from __future__ import annotations

import random
import re
import time

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from attention_atlas import i18n
from attention_atlas.models.training import classroom as cr
from attention_atlas.serve.lanes import trainings
from tests.support import PACKAGE, charts, page_runner, z_of

PAGE = "app_pages/watch_learn.py"
K = "learn_"
ALPHABET = "春夏秋冬山水风月花鸟云雨江河日星天地人心金木火土东西南北"
CIPHER = dict(zip(ALPHABET, ALPHABET[7:] + ALPHABET[:7], strict=True))
PROBE = ("春山花月江风心", "".join(CIPHER[c] for c in "春山花月江风心"))
TINY = cr.Preset(embed=16, hidden=32, vocab_size=100, batch_size=64, lr=1e-2, measure_every=5, probe=PROBE)

run = page_runner(PAGE, 60)


@pytest.fixture
def tiny(tmp_path, monkeypatch):
    rng = random.Random(0)
    uppers = ["".join(rng.choice(ALPHABET) for _ in range(rng.choice((5, 7)))) for _ in range(2000)]
    path = tmp_path / "cipher.tsv"
    path.write_text("".join(f"{u}\t{''.join(CIPHER[c] for c in u)}\n" for u in uppers), encoding="utf-8")
    data = cr.data_for(TINY, path, valid_size=100)
    monkeypatch.setitem(cr.PRESETS, "classroom", TINY)
    monkeypatch.setattr(cr, "data_for", lambda p, *a, **k: data)
    yield
    assert trainings().busy == 0  # every run of the test has given its slot back


def until(at, cond, timeout: float = 60.0):
    end = time.monotonic() + timeout
    while not cond(at):
        assert time.monotonic() < end, "timed out"
        time.sleep(0.3)
        at = run(at)
    return at


def progress_text(at) -> str:
    bars = at.get("progress")
    return bars[0].proto.text if bars else ""


def _stop_all(at) -> None:
    got = at.session_state["learn_run"] if "learn_run" in at.session_state else None  # noqa: SIM401 (no .get)
    if got:
        got[0].stop(wait=10)


def untrained_heatmaps(at) -> list[dict]:
    """The probe heatmaps drawn before Start, each checked to be its model's step-0 frame."""
    titles = [m.value for m in at.markdown if m.value.endswith("step 0, untrained")]
    heats = [f for f in charts(at) if f["data"][0]["type"] == "heatmap"]
    assert len(heats) == len(titles) and any("Before any training" in c.value for c in at.caption)
    for title, fig in zip(titles, heats, strict=True):
        z = z_of(fig["data"][0])
        assert np.allclose(z, cr.untrained_probe(title.split("**")[1], TINY), atol=1e-3)
    return heats


def test_first_load_draws_the_untrained_attention_spread_evenly(tiny):
    at = run()
    assert any("Start" in i.value for i in at.info)
    (heat,) = untrained_heatmaps(at)  # Additive: one model, before any Start
    z = z_of(heat["data"][0])
    assert z.shape == (7, 7) and np.allclose(z, 1 / 7, atol=0.05)  # spread evenly: no diagonal yet
    at.radio(key=K + "mode").set_value("Race: additive vs dot")
    assert len(untrained_heatmaps(run(at))) == 2
    # 30 s taught nothing (bench/RESULTS.md): the shortest run on offer is a minute per model
    assert at.slider(key=K + "seconds").min >= 60 and "per model" in at.slider(key=K + "seconds").label


@pytest.mark.slow
def test_start_draws_probe_heatmaps_and_curves_then_pause_and_reset(tiny):
    at = run()
    at.radio(key=K + "mode").set_value("Race: additive vs dot")
    at.button(key=K + "start").click()
    at = run(at)
    assert at.radio(key=K + "mode").disabled and at.button(key=K + "start").disabled
    try:
        at = until(at, lambda a: "training" in progress_text(a) and " step 1" in progress_text(a))
        figs = charts(at)
        heats = [f for f in figs if f["data"][0]["type"] == "heatmap"]
        assert len(heats) == 2 and [
            m.value.split(":")[0] for m in at.markdown if "probe alignment" in m.value
        ] == [
            "**additive**",
            "**dot**",
        ]
        assert [y.split(" · ")[1] for y in heats[0]["data"][0]["y"]] == list(PROBE[1])
        curves = [f for f in figs if f["data"][0]["type"] == "scatter"]
        assert {t["name"] for t in curves[0]["data"]} == {"additive", "dot"}
        # what the time counts, and the time on the clock beside it (both models' turns, measuring)
        assert re.search(
            r"of 120 s of training per model · \d+ (min \d\d )?s on the clock", progress_text(at)
        )

        at.button(key=K + "pause").click()
        at = run(at)
        assert at.button(key=K + "pause").label.startswith("▶ Resume")
        at = until(at, lambda a: progress_text(a).startswith("paused"))
        time.sleep(0.5)
        before = progress_text(run(at))
        time.sleep(1.0)
        assert progress_text(run(at)) == before  # no steps while paused

        at.button(key=K + "pause").click()
        at = run(at)
        at = until(at, lambda a: progress_text(a).startswith("training") and progress_text(a) != before)

        held = at.session_state["learn_run"][0]
        at.button(key=K + "reset").click()
        at = run(at)
        held.thread.join(10)
        assert not held.thread.is_alive()
        assert any("Start" in i.value for i in at.info) and len(untrained_heatmaps(at)) == 2
        assert not at.radio(key=K + "mode").disabled
    finally:
        _stop_all(at)


def test_a_third_visitor_waits_for_a_free_trainer(tiny):
    pool = trainings()
    others = [object() for _ in range(pool.capacity)]
    for o in others:
        pool.acquire(o)  # every trainer busy with other visitors
    at = run()
    try:
        at.button(key=K + "start").click()
        at = until(run(at), lambda a: any("Waiting for a free trainer" in w.value for w in a.warning))
        text = next(w.value for w in at.warning if "Waiting" in w.value)
        assert "position 1" in text and f"{pool.capacity} of {pool.capacity}" in text
        pool.release()
        at = until(at, lambda a: bool(charts(a)))
    finally:
        _stop_all(at)
        for _ in others[1:]:
            pool.release()


def test_the_page_speaks_chinese(tiny):
    """In Chinese (the session's language): the modes (their English values kept for the URL), the
    buttons, the untrained heatmap's title and caption, and a run's progress line."""
    import attention_atlas.ui.language  # noqa: F401  (registers the session's language with i18n)

    at = AppTest.from_file(PACKAGE / PAGE, default_timeout=60)
    at.session_state["lang"] = "zh"
    at = run(at)
    assert at.title[0].value == "🎬 看注意力如何学习"
    assert at.radio(key=K + "mode").options == ["加性", "点积", "比赛：加性对点积"]
    assert at.session_state[K + "mode"] == "Additive"  # the value the code and the URL read
    assert at.button(key=K + "start").label == "▶ 开始"
    assert "**加性**：第 0 步，未训练" in [m.value for m in at.markdown]
    assert any(c.value.startswith("训练之前：") for c in at.caption)
    at.button(key=K + "start").click()
    # AppTest sends a radio's label as the browser would, formatting the value here, outside the
    # page's session: the test's own thread speaks Chinese too
    with i18n.language("zh"):
        at = run(at)
        try:
            at = until(
                at, lambda a: progress_text(a).startswith("训练中：") and "加性 第 " in progress_text(a)
            )
            assert "秒 · 实际耗时 " in progress_text(at)
        finally:
            _stop_all(at)
