"""The Hugging Face adapter on the real pretrained models: minilm, and smollm2 (slow)."""

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attention_atlas.models.adapters.hf import InputError
from attention_atlas.models.adapters.minilm import model_folder
from tests.support import CPU


@pytest.fixture(scope="module")
def minilm():
    from attention_atlas.models.registry import load

    return load("minilm", CPU)


@pytest.mark.parametrize(
    "text", ["The cat sat on the mat.", "Attention is all you need, they said.", "unbelievably tokenized"]
)
def test_minilm_equals_transformers_own_output(minilm, text):
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_folder())
    ref = AutoModel.from_pretrained(model_folder(), attn_implementation="eager").eval()
    with torch.no_grad():
        expected = ref(**tok(text, return_tensors="pt"), output_attentions=True).attentions
    rec = minilm.run(text).records["self"]
    assert rec.weights.shape == (6, 12, len(rec.query_tokens), len(rec.key_tokens))
    np.testing.assert_allclose(rec.weights, torch.cat(expected).numpy(), atol=1e-6)
    assert rec.query_tokens == tok.convert_ids_to_tokens(tok(text)["input_ids"])


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(min_size=1, max_size=60))
def test_minilm_any_string(minilm, text):
    try:
        result = minilm.run(text)
    except InputError:
        assert not text.strip()
        return
    assert result.records["self"].weights.shape[:2] == (6, 12)


def test_minilm_queries_and_keys_reproduce_that_heads_weights(minilm):
    text = "The cat sat on the mat."
    q, k, tokens = minilm.queries_keys(text, layer=2, head=5)
    weights = torch.softmax(q @ k.T / q.shape[-1] ** 0.5, dim=-1).numpy()
    record = minilm.run(text).records["self"]
    assert tokens == record.query_tokens
    np.testing.assert_allclose(weights, record.head(2, 5), atol=1e-5)
    with pytest.raises(ValueError, match="layers 0–5 and heads 0–11"):
        minilm.queries_keys(text, layer=99, head=0)


@pytest.mark.slow
@pytest.mark.parametrize(
    "text",
    [
        "😀🙃 emoji only",
        "مرحبا بالعالم",
        "שלום עולם",
        "control\x00\x07\x1b chars",
        "<script>alert(1)</script>",
        "风" * 10_000,
    ],
)
def test_smollm2_takes_odd_scripts_and_huge_input(text):
    from attention_atlas.models.registry import load

    result = load("smollm2", CPU).run(text)
    rec = result.records["self"]
    assert rec.weights.shape[:2] == (30, 9) and rec.weights.shape[-1] <= 512
    assert (np.triu(rec.weights, k=1) == 0).all()
    if len(text) > 1000:
        assert any("first 512" in n for n in result.notices)


@pytest.fixture(scope="module")
def smollm2():
    from attention_atlas.models.registry import load

    return load("smollm2", CPU)


@pytest.mark.slow
@pytest.mark.timeout(900)  # 500 forwards of a 135 M model: 316 s on a loaded 2-core machine
@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(min_size=1, max_size=16))
def test_smollm2_any_string(smollm2, text):
    try:
        result = smollm2.run(text)
    except InputError as err:  # e.g. "\x06": this tokenizer drops control characters, leaving nothing
        assert not text.strip() or "no tokens" in str(err)
        return
    assert result.records["self"].weights.shape[:2] == (30, 9)
