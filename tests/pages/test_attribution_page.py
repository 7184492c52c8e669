"""The Does attention explain? page under AppTest, with the bundled couplet models: the first load
explains a forced couplet's last character by every method the model can do, the heatmap carries the
module's own scores, the faithfulness table its numbers, a link's settings are read, and a refusal is
one line."""

from __future__ import annotations

import numpy as np
import pytest

from attention_atlas.models.analysis import attribution as at
from attention_atlas.ui import attribution_views as views
from tests.support import charts, page_runner, z_of

pytestmark = pytest.mark.slow  # loads the bundled weights
PAGE = "app_pages/attribution.py"
K = "attribution_"

run = page_runner(PAGE, 180)


def test_first_load_explains_a_couplet_by_every_method():
    from attention_atlas.models.registry import load

    page = run()
    heat = charts(page)[0]["data"][0]
    assert heat["type"] == "heatmap"
    adapter = load(page.selectbox(key=K + "model").value, "cpu")
    want = at.attribute(at.subject_of(adapter, "两个黄鹂鸣翠柳", "一行白鹭上青天"))
    assert [y.removesuffix(" ±") for y in heat["y"]] == [views.named(m) for m in want.methods]  # named
    assert [x.split(" · ")[1] for x in heat["x"]] == list("两个黄鹂鸣翠柳")
    np.testing.assert_allclose(
        z_of({"z": heat["customdata"]}), np.stack([want.scores[m] for m in want.methods]), atol=1e-4
    )
    table = page.dataframe[0].value
    np.testing.assert_allclose(table["AOPC"].to_numpy(), want.aopc, atol=1e-4)
    assert any("rollout is not shown" in m.value for m in [*page.caption, *page.markdown])
    top = int(np.argmax(want.scores["attention"])), int(np.argmax(want.scores["occlusion"]))
    said = [
        m.value
        for m in [*page.info, *page.caption, *page.markdown]
        if m.value.startswith("Attention and occlusion")
    ]
    assert said and ("disagree" in said[0]) == (top[0] != top[1])  # the first load's lesson, whichever it is
    rho, tau = at.agreement(want)
    assert not np.allclose(rho, tau, atol=1e-2)  # so the matrix shown says which it is
    for rank, matrix in (("spearman", rho), ("kendall", tau)):  # the matrix of the rank agreement chosen
        if rank != "spearman":
            page.segmented_control(key=K + "rank").set_value(rank)
            page = run(page)
            assert page.query_params["rank"] == rank
        (agree,) = [c for c in charts(page) if c["layout"].get("title", {}).get("text", "").startswith("Rank agr")]
        assert ("τ" in agree["layout"]["title"]["text"]) == (rank == "kendall")
        np.testing.assert_allclose(z_of(agree["data"][0]), matrix, atol=1e-3)  # sent as float16


def test_a_link_picks_the_transformer_a_position_and_a_bad_position_is_one_line():
    page = run()
    page.selectbox(key=K + "model").set_value("couplet-transformer")
    page.number_input(key=K + "position").set_value(2)
    page = run(page)
    heat = charts(page)[0]["data"][0]
    assert "rollout" in heat["y"]
    assert any("'白'" in m.value or "**白**" in m.value for m in [*page.caption, *page.markdown])
    # the attention row of one layer and head (the last layer's heads averaged until one is picked)
    from attention_atlas.models.registry import load

    subject = at.subject_of(load("couplet-transformer", "cpu"), "两个黄鹂鸣翠柳", "一行白鹭上青天", 2)
    row = at.attribute(at.at_head(subject, 0, 3), ["attention"])
    assert not np.allclose(row.scores["attention"], subject.attention, atol=1e-3)
    page.selectbox(key=K + "layer_couplet-transformer").set_value(0)
    page.selectbox(key=K + "head_couplet-transformer").set_value(3)
    page = run(page)
    assert (page.query_params["layer"], page.query_params["head"]) == ("0", "3")
    heat = charts(page)[0]["data"][0]
    at_row = [y.removesuffix(" ±") for y in heat["y"]].index("attention")
    np.testing.assert_allclose(z_of({"z": heat["customdata"]})[at_row], row.scores["attention"], atol=1e-4)
    table = page.dataframe[0].value
    assert table["AOPC"].to_numpy()[at_row] == pytest.approx(float(row.aopc[0]), abs=1e-4)
    page.number_input(key=K + "position").set_value(20)
    page = run(page)
    assert any("--target-position 20 is out of range" in i.value for i in page.info)
