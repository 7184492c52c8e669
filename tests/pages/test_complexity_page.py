"""The comparison of self-attention with a convolution and a recurrent layer under AppTest: the
defaults measure and draw, changing n or d measures again, a range of one size says so."""

from __future__ import annotations

import pytest

from tests.support import charts, page_runner

run = page_runner("app_pages/complexity.py", 240)


def _names(fig: dict) -> list[str]:
    return [t.get("name", "") for t in fig["data"]]


@pytest.mark.slow  # over 3.5 s here: make test runs it, make check does not
def test_defaults_measure_and_draw_time_memory_and_paths():
    at = run()
    time_chart, memory_chart, paths = charts(at)
    assert time_chart["layout"]["xaxis"]["type"] == "log" and time_chart["layout"]["yaxis"]["type"] == "log"
    lines = _names(time_chart)
    assert any(n.startswith("self-attention: slope") and n.endswith("(tutorial 2)") for n in lines)
    assert any(n.startswith("GRU: slope") for n in lines)
    assert "n = d = 64: the tutorial's crossover" in lines
    measured = [t for t in time_chart["data"] if "slope" in t.get("name", "")]
    assert all(len(t["x"]) >= 2 for t in measured)  # at least two sizes each, within the budget
    assert len(memory_chart["data"]) == 3
    assert [a["text"] for a in paths["layout"]["annotations"]] == [
        "self-attention: 1 layer",
        "convolution, k = 3: 7 layers",
        "GRU: 8 steps",
    ]
    table = at.table[0].value
    assert list(table.columns) == ["self-attention", "convolution, k = 3", "GRU"]
    assert table.loc["path length at n = 8 (counted)"].tolist() == ["1", "7", "8"]
    assert {m.label for m in at.metric} >= {"tutorial: attention costs more than the GRU from"}


def test_changing_d_and_the_range_measures_again():
    at = run()
    at.select_slider(key="cx_to").set_value(128)
    at.select_slider(key="cx_d").set_value(16)
    at.radio(key="cx_rnn").set_value("LSTM")
    at = run(at)
    time_chart = charts(at)[0]
    measured = [t for t in time_chart["data"] if "slope" in t.get("name", "")]
    assert [t["x"] for t in measured] == [[16, 32, 64, 128]] * 3
    assert "n = d = 16: the tutorial's crossover" in _names(time_chart)
    assert any(m.value == "n = d = 16" for m in at.metric)
    assert at.radio(key="cx_clock").value == "CPU time"  # the tests run torch with one thread
    at.radio(key="cx_clock").set_value("wall clock")
    at = run(at)
    assert charts(at)[0]["layout"]["yaxis"]["title"]["text"] == "wall clock per forward"
    at.slider(key="cx_tokens").set_value(4)
    at = run(at)
    assert at.table[0].value.loc["path length at n = 4 (counted)"].tolist() == ["1", "3", "4"]


def test_a_range_of_one_size_asks_for_a_longer_one():
    at = run()
    at.select_slider(key="cx_to").set_value(16)
    at = run(at)
    assert any("Pick a longest n above the shortest (16)" in i.value for i in at.info)
    assert not at.get("plotly_chart")


def test_the_page_in_chinese():
    from tests.pages.test_lesson_pages import in_chinese

    at = in_chinese("complexity", {"to": "128", "d": "16"}, timeout=240)
    time_chart, memory_chart, paths = charts(at)
    assert time_chart["layout"]["xaxis"]["title"]["text"] == "序列长度 n"
    assert memory_chart["layout"]["yaxis"]["title"]["text"] == "内存"
    assert any(n.startswith("自注意力：斜率") for n in _names(time_chart))
    assert [a["text"] for a in paths["layout"]["annotations"]] == [
        "自注意力：1 层",
        "卷积，k = 3：7 层",
        "GRU：8 步",
    ]
    table = at.table[0].value
    assert list(table.columns) == ["自注意力", "卷积，k = 3", "GRU"]
    assert table.loc["n = 8 时的路径长度（计数）"].tolist() == ["1", "7", "8"]
    assert at.radio(key="cx_clock").value in ("CPU time", "wall clock")  # the value, as the URL names it
