"""The bundled translation models: they load and reproduce their model cards."""

from __future__ import annotations

import json

import pytest

from attention_atlas.models.tasks.translation import CHECK_SIZE, SEED_EXAMPLES, bleu, load_split
from attention_atlas.paths import WEIGHTS

pytestmark = pytest.mark.slow  # loads the bundled weights and the data set
IDS = ["translate-gru-additive", "translate-lstm-dot"]


def card(model_id: str) -> dict:
    return json.loads((WEIGHTS / model_id / "metrics.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def test_pairs():
    return load_split().test[:CHECK_SIZE]


@pytest.fixture(scope="module", params=IDS)
def adapter(request):
    from attention_atlas.models.registry import load

    return load(request.param, "cpu")


def test_bundle_is_small_and_describes_itself(adapter):
    folder = WEIGHTS / adapter.model_id
    assert (folder / "model.safetensors").stat().st_size < 25e6
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    assert config["format"] == "attention-atlas/seq2seq-rnn" and config["task"] == "translation"
    rnn, attention = {
        "translate-gru-additive": ("gru", "additive"),
        "translate-lstm-dot": ("lstm", "scaled_dot"),
    }[adapter.model_id]
    assert (config["config"]["rnn"], config["config"]["attention"]) == (rnn, attention)
    text = (folder / "MODEL_CARD.md").read_text(encoding="utf-8")
    assert "python cli.py train translate" in text and "Tatoeba" in text


def test_bleu_reproduces_the_model_card(adapter, test_pairs):
    tr = adapter.runner
    out = [tr.text(d) for d in tr.generate([en for en, _ in test_pairs])]
    got = bleu(out, [[" ".join(fr)] for _, fr in test_pairs])["bleu"]
    assert got == pytest.approx(card(adapter.model_id)["metrics"][f"bleu_first_{CHECK_SIZE}"], abs=0.01)


def test_the_seeds_four_sentences_translate_as_the_card_says(adapter):
    examples = card(adapter.model_id)["examples"]
    assert list(examples) == list(SEED_EXAMPLES)
    for english, french in examples.items():
        r = adapter.run(english)
        assert " ".join(r.records["cross"].query_tokens[:-1]) == french
        assert r.records["cross"].meta["finished"]


def test_additive_model_reaches_bleu_30():
    assert card("translate-gru-additive")["metrics"]["bleu"] >= 30
