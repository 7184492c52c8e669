"""The Contributions tab of "Inside a prediction" (issue 24, item 3) under AppTest with SmolLM2: the
routes, the heads of an edge and a head's maps are those ``models.analysis.contributions`` computes on its own."""


import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

from attention_atlas.models import registry
from attention_atlas.models.analysis import contributions as cb
from tests.support import PACKAGE, chart, page_runner, values, z_of

PAGE = "app_pages/prediction.py"
run = page_runner(PAGE, 300)
TEXT = "The sun rises in the east and sets in the"  # the page's first text



@pytest.fixture(scope="module")
def own():
    return cb.contributions(registry.load("smollm2", torch.device("cpu")), TEXT, keep_attention=True)


@pytest.fixture(scope="module")
def opened():
    at = AppTest.from_file(PACKAGE / PAGE, default_timeout=300)
    at.query_params["tab"] = "Contributions"
    return run(at)


def test_the_routes_are_the_models_own(opened, own):
    graph = cb.routes(own, own.positions - 1, 0.04)
    fig = chart(opened, "contrib_routes")
    drawn = sum(len([x for x in t["x"] if x is not None]) // 2 for t in fig["data"] if t["mode"] == "lines")
    assert drawn == len(graph.edges) > 0
    assert any(f"{len(graph.edges)} edges at or above 0.04" in c.value for c in opened.caption)


def test_the_heads_of_an_edge_and_a_heads_maps(opened, own):
    """First opened (issue 40 item 19): the strongest edge into the traced token from another token,
    not a sink's "0 · The → 0 · The", and the maps of the head that carries it most, not block 0's
    head 0 (almost blank)."""
    last = own.positions - 1
    into = [e for e in cb.routes(own, last, 0.04).edges if e.kind == "attention"]
    into = [e for e in into if e.target.position == last and e.source.position != last]
    top = max(into, key=lambda e: e.contribution)
    layer, target, source = opened.selectbox(key="contrib_edge").value
    assert (layer, target, source) == (top.target.layer, last, top.source.position)
    bars = chart(opened, "contrib_heads")["data"][0]
    ranked = cb.heads_of_edge(own, layer, target, source)
    assert np.allclose(values(bars["y"]), [c for _, c in ranked], atol=1e-5)
    head = ranked[0][0]
    assert opened.slider(key="contrib_layer").value == layer and opened.selectbox(key="contrib_head").value == head
    maps = chart(opened, "contrib_maps")["data"]
    assert np.allclose(z_of(maps[0]), own.attn[layer, head], atol=2e-3)
    assert np.allclose(z_of(maps[1]), own.attention[layer, head], atol=2e-3)


def test_a_higher_threshold_keeps_fewer_edges(opened):
    at = opened
    before = len(chart(at, "contrib_routes")["data"])
    at.slider(key="contrib_threshold").set_value(0.3)
    at = run(at)
    kept = [c.value for c in at.caption if "at or above 0.30" in c.value]
    assert kept and before >= len(chart(at, "contrib_routes")["data"])


def test_an_empty_text_asks_for_one():
    at = AppTest.from_file(PACKAGE / PAGE, default_timeout=300)
    at.query_params["tab"] = "Contributions"
    at = run(at)
    at.text_input(key="lens_text").set_value("  ")
    at = run(at)
    assert any("Type a text to see where its prediction came from" in i.value for i in at.info)
