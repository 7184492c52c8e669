"""The registry's capabilities (declared in each adapter's ``register``) match the loaded models.

Pages read these facts instead of naming model ids, so a capability that lies breaks a page:
each one is checked here against what the model really returns.
"""

from __future__ import annotations

import functools
import subprocess
import sys

import numpy as np
import pytest
import torch

from attention_atlas.models.registry import available, card_metrics, default_of, info, load
from tests.support import qk_weights

BUNDLED = ["couplet-rnn-additive", "couplet-rnn-dot", "couplet-transformer"]
BUNDLED += ["translate-gru-additive", "translate-lstm-dot"]
ALL = [*BUNDLED, "minilm", "smollm2", "gemma3-270m"]  # the last two load from their converted caches


@functools.cache
def adapter(model_id: str):
    """The model on the CPU, loaded once for this file; skips where its weights are not installed."""
    try:
        return load(model_id, torch.device("cpu"))
    except FileNotFoundError as err:  # weights or package not installed here
        pytest.skip(str(err))


def test_every_registered_model_is_checked_here():
    assert {m.id for m in available()} == set(ALL)


def test_listing_the_capabilities_loads_no_model():
    # A fresh interpreter: loading minilm or smollm2 would import transformers.
    code = (
        "import sys; from attention_atlas.models.registry import available; "
        "facts = [(m.layers, m.heads, m.kinds, m.example) for m in available()]; "
        "print(len(facts), 'transformers' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == [str(len(available())), "False"]
    for m in available():
        assert m.layers >= 1 and m.heads >= 1 and m.kinds and m.example.strip(), m.id


@pytest.mark.parametrize("model_id", ALL)
def test_declared_kinds_layers_and_heads_are_what_a_run_returns(model_id):
    declared = info(model_id)
    result = adapter(model_id).run(declared.example)
    assert list(result.records) == list(declared.kinds)
    for kind, record in result.records.items():
        assert record.weights.shape[:2] == (declared.layers, declared.heads), kind
    assert not [n for n in result.notices if "vocabulary" in n]  # the example is text the model knows


@pytest.mark.parametrize("model_id", ALL)
def test_queries_and_keys_are_declared_exactly_where_they_reproduce_the_weights(model_id):
    declared, model = info(model_id), adapter(model_id)
    if not declared.queries_keys:
        if hasattr(model, "queries_keys"):
            with pytest.raises(ValueError):
                model.queries_keys(declared.example, 0, 0)
        return
    layer, head = declared.layers - 1, declared.heads - 1
    q, k, tokens = model.queries_keys(declared.example, layer, head)
    record = next(iter(model.run(declared.example).records.values()))
    assert q.shape == k.shape and q.shape[0] == len(tokens) == len(record.query_tokens)
    weights = qk_weights(q, k, causal=declared.family == "causal")
    np.testing.assert_allclose(weights, record.head(layer, head), atol=1e-5)


@pytest.mark.parametrize("model_id", ALL)
def test_learned_positions_are_declared_exactly_where_the_model_has_a_table(model_id):
    declared, model = info(model_id), adapter(model_id)
    table = model.position_embeddings() if hasattr(model, "position_embeddings") else None
    if declared.learned_positions:
        assert table is not None and table.ndim == 2 and table.shape[0] >= 128
    else:
        assert table is None


def test_each_family_shows_at_most_one_model_first():
    families: dict[str, list[str]] = {}
    for m in available():
        families.setdefault(m.family, []).append(m.id)
    for family, ids in families.items():
        marked = [m for m in ids if info(m).default]
        assert len(marked) <= 1, family
        assert default_of(ids) == (marked or ids)[0]
    assert default_of([]) is None


@pytest.mark.parametrize("model_id", [*BUNDLED, "minilm"])
def test_a_bundled_models_card_is_found_where_its_weights_are(model_id):
    declared = info(model_id)
    if declared.card is None:
        assert card_metrics(model_id) is None
        return
    if not (declared.card.parent / "model.safetensors").is_file():
        pytest.skip(f"{model_id}: weights not installed")
    card = card_metrics(model_id)
    assert card["metrics"]["parameters"] == sum(
        p.numel() for p in adapter(model_id).bundle.model.parameters()
    )


@pytest.mark.parametrize("model_id", ALL)
def test_long_input_value_norms_and_masking_are_declared_exactly_where_the_model_has_them(model_id):
    """The pages decide from these without loading the model: each must say what the adapter does."""
    from attention_atlas.models.adapters import capture
    from attention_atlas.models.adapters import value_norms as vn

    declared, model = info(model_id), adapter(model_id)
    assert declared.long_input == (capture.supports(model) is None), capture.supports(model)
    assert declared.value_norms == vn.supports(model)
    assert declared.masking == hasattr(model, "run_masked")
    if declared.masking:
        record = next(iter(model.run(declared.example).records.values()))
        masked = next(iter(model.run_masked(declared.example, 1).records.values()))
        assert masked.weights.shape == record.weights.shape


def test_each_bundled_sample_opens_with_one_model_and_heavy_models_are_declared():
    from attention_atlas.models.corpus.inputs import SAMPLES

    for sample in SAMPLES:
        assert len([m for m in available() if sample in m.samples]) == 1, sample
    assert all(s in SAMPLES for m in available() for s in m.samples)
    assert [m.id for m in available() if m.heavy] == ["gemma3-270m", "smollm2"]  # those over 100 M parameters
