"""The Generate tab of "Inside a prediction" (issue 24, item 1) under AppTest with SmolLM2: the
continuation is the one ``models.analysis.generate`` makes on its own, the charts hold the new token's own
attention row, the continuation can become the page's text, and a request the model cannot serve is
one line."""

import json

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

from attention_atlas.models import registry
from attention_atlas.models.analysis.generate import generate
from tests.support import PACKAGE, chart, page_runner, z_of

PAGE = "app_pages/prediction.py"
run = page_runner(PAGE, 300)
TEXT = "The sun rises in the east and sets in the"  # the page's first text
NEW = 5


def opened(**params) -> AppTest:
    at = AppTest.from_file(PACKAGE / PAGE, default_timeout=300)
    at.query_params.update({"tab": "Generate", **params})
    return run(at)



@pytest.fixture(scope="module")
def smollm2():
    return registry.load("smollm2", torch.device("cpu"))


@pytest.fixture(scope="module")
def generated():
    at = opened()
    assert any("Press **Generate**" in i.value for i in at.info)  # nothing runs before the click
    at.slider(key="gen_max").set_value(NEW)
    at.button(key="gen_go").click()
    return run(at)


def test_the_continuation_is_the_models_own(generated, smollm2):
    own = generate(smollm2, TEXT, NEW)
    assert generated.code[0].value == own.text  # as written, spaces and line breaks kept
    assert generated.get("button_group")[0].proto.default == [0]  # the first new token is open


def test_the_charts_hold_the_new_tokens_attention_row(generated, smollm2):
    own = generate(smollm2, TEXT, NEW)
    k, seen = 0, own.prompt_len
    layers = z_of(chart(generated, "gen_layers")["data"][0])
    assert layers.shape == (smollm2.n_layers, seen)
    assert np.allclose(layers, own.attention[:, :, k, :seen].mean(1), atol=2e-3)
    heads = z_of(chart(generated, "gen_heads")["data"][0])
    assert np.allclose(heads, own.attention[-1, :, k, :seen], atol=2e-3)  # the last layer first
    assert np.allclose(heads.sum(-1), 1, atol=5e-3)  # a query's weights over the keys it saw


def test_every_head_of_the_new_tokens_in_the_model_head_and_line_views(generated, smollm2):
    own = generate(smollm2, TEXT, NEW)
    live = [json.loads(c.proto.json) for c in generated.get("bidi_component")]
    model_view = next(d for d in live if d.get("role") == "model")
    assert model_view["heads"]["shape"][:2] == [smollm2.n_layers, smollm2.n_heads]
    head_view = json.loads(next(d for d in live if d.get("role") == "head")["figure"])
    assert head_view["layout"]["title"]["text"] == f"layer {smollm2.n_layers - 1}, head 0"
    z = z_of(head_view["data"][0])  # the new tokens (rows) over every token (columns)
    assert z.shape == (NEW, own.prompt_len + NEW)
    assert np.allclose(z, own.attention[-1, 0], atol=2e-3)
    lines = next(d for d in live if "queries" in d)  # the line view: new tokens left, every token right
    assert lines["queries"] == own.tokens[own.prompt_len :] or len(lines["queries"]) == NEW
    assert len(lines["keys"]) == own.prompt_len + NEW and lines["heads"][0]["head"] == 0
    assert not generated.exception


def test_the_continuation_becomes_the_pages_text(generated, smollm2):
    at = generated
    at.button(key="gen_use").click()
    at = run(at)
    assert at.text_input(key="lens_text").value == TEXT + generate(smollm2, TEXT, NEW).text


def test_an_empty_prompt_and_a_prompt_past_the_context_are_one_line():
    at = opened()
    at.text_input(key="lens_text").set_value("   ")
    at = run(at)
    assert any("Type a prompt" in i.value for i in at.info)
    at.text_input(key="lens_text").set_value("word " * 700)  # cut at the app's 512 tokens: no room left
    at = run(at)
    at.button(key="gen_go").click()
    at = run(at)
    assert [w.value for w in at.warning] == ["the prompt is 701 tokens; smollm2 reads at most 512"]
    assert not at.exception

