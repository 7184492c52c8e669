"""The Transformer page's 'Neuron view' and 'Switch off heads' tabs under AppTest, with minilm (and
SmolLM2 for the next token, slow): the charts' numbers are those of the model run directly or of a
copy of it built by hand without the head, and bad input is a one-line message."""

import copy

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

from attention_atlas.ui.compare import row_change
from tests.support import PACKAGE, chart, page_runner, qk_weights, values, z_of

PAGE = "app_pages/transformer.py"
TEXT = "The cat sat on the mat because it was tired."
NEURON, ABLATE = "Neuron view", "Switch off heads"
run_page = page_runner(PAGE, 300)


def run(tab: str, at: AppTest | None = None, **params) -> AppTest:
    if at is None:
        at = AppTest.from_file(PACKAGE / PAGE, default_timeout=300)
        at.query_params.update({"tab": tab, **params})
    return run_page(at)



def has_chart(at: AppTest, key: str) -> bool:
    return any(c.proto.id.endswith(f"-{key}_chart") for c in at.get("plotly_chart"))


@pytest.fixture(scope="module")
def minilm():
    from attention_atlas.models.registry import load

    return load("minilm", "cpu")


@pytest.fixture(scope="module")
def neuron_page():
    return run(NEURON)


def test_neuron_view_asks_for_a_query_then_draws_the_heads_weights(neuron_page, minilm):
    at = neuron_page
    assert any(i.value == "Click a query token above to see how its weights are made." for i in at.info)
    assert not has_chart(at, "tf_neuron_chart")
    pills = next(b for b in at.get("button_group") if b.key == "tf_neuron_query_self")
    assert [o.content for o in pills.proto.options][:3] == ["the₁", "cat", "sat"]  # no [CLS], [SEP]
    pills.set_value(2)  # "cat"
    at.slider(key="tf_neuron_layer").set_value(3)
    at.selectbox(key="tf_neuron_head").set_value(7)
    at = run(NEURON, at)
    assert any(s.value == "Layer 3, head 7: query 2 · cat" for s in at.subheader)
    fig = chart(at, "tf_neuron_chart")
    weights = values(fig["data"][4]["x"])
    record = minilm.run(TEXT).records["self"].weights[3, 7, 2]
    assert np.allclose(weights, record, atol=1e-5)
    q, k = z_of(fig["data"][0]), z_of(fig["data"][1])  # as sent: 10 mantissa bits
    assert q.shape == (1, 32) and k.shape == (13, 32)
    assert np.allclose(qk_weights(q, k, causal=False)[0], record, atol=2e-2)
    assert fig["data"][1]["y"][2] == "2 · cat"


def test_neuron_view_of_an_input_of_special_tokens_only(neuron_page):
    at = neuron_page
    at.text_input(key="tf_text").set_value("\u200b")  # a zero-width space: [CLS] [SEP] and nothing else
    at = run(NEURON, at)
    assert any("Every token of this input is a special token" in i.value for i in at.info)
    assert not has_chart(at, "tf_neuron_chart")


def test_neuron_view_refuses_a_model_without_queries_and_keys_in_one_line():
    def page():
        from attention_atlas.ui.neuron import neuron_tab

        neuron_tab("couplet-rnn-dot", "两个黄鹂鸣翠柳", "cross")

    at = AppTest.from_function(page, default_timeout=60).run()
    assert not at.exception
    [message] = [i.value for i in at.info]
    lead = "The neuron view needs a model's queries and keys; couplet-rnn-dot does not hand them over ("
    assert message.startswith(lead) and message.endswith(" do).")
    able = message[len(lead) : -len(" do).")].split(", ")
    assert {"couplet-transformer", "minilm", "smollm2"} <= set(able)
    assert "couplet-rnn-dot" not in able and able == sorted(able)


@pytest.fixture(scope="module")
def ablate_page():
    return run(ABLATE)


def without_head(adapter, layer: int, head: int):
    """A copy of ``adapter`` whose layer's output projection reads nothing from ``head``: those
    weight columns set to 0, written out by hand for BERT (no hook)."""
    twin = copy.deepcopy(adapter)
    dense = twin.model.encoder.layer[layer].attention.output.dense
    d = dense.in_features // adapter.n_heads
    with torch.no_grad():
        dense.weight[:, head * d : (head + 1) * d] = 0
    return twin


def test_switching_off_a_head_matches_a_model_built_without_it(ablate_page, minilm):
    at = ablate_page
    assert at.multiselect(key="tf_ablate_heads_minilm").value == [(0, 0)]
    shown = z_of(chart(at, "tf_ablate_grid")["data"][0])
    before = minilm.run(TEXT).records["self"].weights
    after = without_head(minilm, 0, 0).run(TEXT).records["self"].weights
    expected = row_change(before, after, [])
    assert shown.shape == (6, 12) and np.allclose(shown, expected, rtol=2e-3, atol=1e-5)
    assert np.allclose(shown[0], 0, atol=1e-6) and shown[1:].min() > 0
    top = at.dataframe[-1].value
    assert top["change (TV)"].iloc[0] == pytest.approx(expected.max(), rel=1e-4)
    assert has_chart(at, "tf_ablate_pair") and not has_chart(
        at, "tf_ablate_next"
    )  # an encoder: no next token


def test_switching_off_no_head_asks_for_one(ablate_page):
    at = ablate_page
    at.multiselect(key="tf_ablate_heads_minilm").set_value([])
    at = run(ABLATE, at)
    assert any(i.value == "Pick one or more heads to switch off." for i in at.info)
    assert not has_chart(at, "tf_ablate_grid")


@pytest.mark.slow
def test_switching_off_a_layer_of_smollm2_shows_the_next_token_before_and_after():
    from attention_atlas.models.analysis.ablation import next_token
    from attention_atlas.models.registry import info, load

    at = run(ABLATE, model="smollm2")
    at.multiselect(key="tf_ablate_heads_smollm2").set_value([(2, h) for h in range(9)])
    at = run(ABLATE, at)
    fig = chart(at, "tf_ablate_next")
    smollm2 = load("smollm2", "cpu")
    text = info("smollm2").example
    ids = smollm2.encode(text).ids
    with torch.no_grad():
        plain = torch.softmax(smollm2.model(input_ids=ids).logits[0, -1], -1).numpy()
    before, after = values(fig["data"][0]["y"]), values(fig["data"][1]["y"])
    assert np.isclose(before.max(), plain.max(), rtol=1e-4)  # the unhooked model's own top token
    assert np.isclose(after.max(), next_token(smollm2, text, [(2, h) for h in range(9)]).max(), rtol=1e-4)
    grid = z_of(chart(at, "tf_ablate_grid")["data"][0])
    assert np.allclose(grid[:3], 0, atol=1e-6) and grid[3:].min() > 0
    lens = next(d.value for d in at.dataframe if "top token before" in d.value.columns)  # last block first
    assert list(lens["after block"]) == list(range(29, -1, -1))
    from attention_atlas.viz_core.tokens import shown

    assert lens["top token before"].iloc[0] == shown(smollm2.tokenizer.decode([int(plain.argmax())]))
    assert np.isclose(lens["probability after"].iloc[0], after.max(), rtol=1e-4)
    early = lens[lens["after block"] < 2]  # blocks before the switched-off layer 2 read the same stream
    assert (early["top token before"] == early["top token after"]).all()
