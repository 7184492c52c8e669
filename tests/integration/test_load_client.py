"""harness/st_client and bench/bench_load against real `streamlit run` servers: a real
script_finished, widgets found by key and set as the browser sets them, a fragment rerun,
an exception seen, and a short load run of the real app with its memory."""

from __future__ import annotations

import asyncio
import re

import pytest

from attention_atlas.serve.launcher import serve
from bench import bench_load
from harness.st_client import Session

TOY = """
import streamlit as st

word = st.text_input("word", "a", key="word")
on = st.toggle("on", key="on")
pick = st.selectbox("pick", ["x", "y"], key="pick")
st.write(f"got {word} {on} {pick}")

@st.fragment
def part():
    n = st.slider("n", 0, 10, 1, key="n")
    st.write(f"n is {n}")

part()
if word == "boom":
    raise ValueError("boom was typed")
"""


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    script = tmp_path_factory.mktemp("toy") / "toy_app.py"
    script.write_text(TOY, encoding="utf-8")
    with serve(script=str(script)) as server:
        yield server.url


async def _toy_session(url: str):
    async with Session(url) as s:
        first = await s.open()
        keys = {k: w.kind for k, w in s.widgets.items()}
        typed = await s.set("word", "hello")
        toggled = await s.set("on", True)
        picked = await s.set("pick", "y")
        fragment = await s.set("n", 7)
        boom = await s.set("word", "boom")
        return keys, first, typed, toggled, picked, fragment, boom


def test_the_client_speaks_the_protocol(toy):
    keys, first, typed, toggled, picked, fragment, boom = asyncio.run(_toy_session(toy))
    assert keys == {"word": "text_input", "on": "checkbox", "pick": "selectbox", "n": "slider"}
    for run in (first, typed, toggled, picked):
        assert run.status == "FINISHED_SUCCESSFULLY" and run.ok and run.elements >= 5
    assert "got hello True y" in picked.markdown  # every value kept on the server, the last three set
    assert fragment.status == "FINISHED_FRAGMENT_RUN_SUCCESSFULLY" and "n is 7" in fragment.markdown
    assert fragment.elements < first.elements  # only the fragment ran
    assert not boom.ok and boom.exceptions == ["ValueError: boom was typed"]


def test_an_unknown_widget_is_a_clear_error(toy):
    async def go():
        async with Session(toy) as s:
            await s.open()
            await s.set("nope", 1)

    with pytest.raises(KeyError, match="no widget 'nope' on this page; known: n, on, pick, word"):
        asyncio.run(go())


@pytest.mark.slow
def test_a_short_load_run_of_the_app(capsys):
    with serve() as server:
        args = bench_load.parse(["--minutes", "0.3", "--leave-minutes", "0.05", "--think", "0.5,1"])
        args.sessions = 2  # one run (the command line takes a list: 10,30,60)
        result = asyncio.run(bench_load.load_run(server.url, server.process.pid, args))
    assert result["problems"] == 0, result["problem_examples"]
    assert result["requests"] >= 6 and set(result["pages"]) >= {"home"}
    assert all(s["p95"] > 0 for s in result["pages"].values())
    assert 50 < result["memory_mb"]["idle"] < 8000 and result["memory_trace"]
    assert len(bench_load.verdicts(result)) == 4


@pytest.mark.slow
def test_a_chinese_session_stays_chinese_when_it_opens_a_page_again():
    """Every rerun carries every widget's value, as a browser sends them: with only the widget
    just set, the sidebar's language switch was forgotten and a page opened again after typing
    came back in English (bench_request_cost's Chinese 'open again' measured English pages)."""
    cjk = re.compile(r"[\u4e00-\u9fff]")

    async def go(url: str):
        async with Session(url) as s:
            first = await s.open("couplets", "lang=zh")
            typed = await s.set("couplet_upper", "春风得意")
            again = await s.open("couplets", "lang=zh")
            return first, typed, again

    with serve() as server:
        runs = asyncio.run(go(server.url))
    for run in runs:
        assert run.ok, run.problems
        assert "设备" in run.markdown and "Device" not in run.markdown, run.markdown[:200]
        assert len(cjk.findall(run.markdown)) > 100
