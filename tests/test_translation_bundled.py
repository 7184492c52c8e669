"""The bundled translation models: they load, reproduce their model cards, and work from the command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from models.adapters.translate_rnn import WEIGHTS
from models.tasks.translation import CHECK_SIZE, SEED_EXAMPLES, bleu, load_split

pytestmark = pytest.mark.slow  # loads the bundled weights and the data set
ROOT = Path(__file__).resolve().parent.parent
IDS = ["translate-gru-additive", "translate-lstm-dot"]


def card(model_id: str) -> dict:
    return json.loads((WEIGHTS / model_id / "metrics.json").read_text(encoding="utf-8"))


def cli(*args, timeout=180):
    return subprocess.run(
        [sys.executable, "cli.py", *map(str, args)], cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture(scope="module")
def test_pairs():
    return load_split().test[:CHECK_SIZE]


@pytest.fixture(scope="module", params=IDS)
def adapter(request):
    from models.registry import load

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


@pytest.mark.parametrize("model_id", IDS)
def test_cli_extract_target_input_file_and_export(model_id, tmp_path):
    done = cli("extract", "--model", model_id, "--text", "I'm home.", "--json")
    assert done.returncode == 0, done.stderr
    obj = json.loads(done.stdout)
    (rec,) = obj["records"]
    assert rec["kind"] == "cross" and rec["key_tokens"] == ["i'm", "home", ".", "<eos>"]
    done = cli(
        "extract", "--model", model_id, "--text", "I'm home.", "--target", "Je suis chez moi.", "--json"
    )
    forced = json.loads(done.stdout)["records"][0]
    assert forced["query_tokens"] == ["je", "suis", "chez", "moi", ".", "<eos>"]
    lines = tmp_path / "in.tsv"
    lines.write_text("Go.\n\nHe's calm.\tIl est calme.\n我爱你\n", encoding="utf-8")
    done = cli("extract", "--model", model_id, "--input-file", lines)
    assert done.returncode == 0, done.stderr
    objs = [json.loads(x) for x in done.stdout.splitlines()]
    assert len(objs) == 4 and "empty" in objs[1]["error"] and "records" in objs[3]
    assert objs[2]["records"][0]["query_tokens"][:3] == ["il", "est", "calme"]
    out = tmp_path / "mine.safetensors"
    assert cli("export", "--model", model_id, "--out", out).returncode == 0
    again = json.loads(cli("extract", "--checkpoint", out, "--text", "I'm home.", "--json").stdout)
    assert again["output"] == obj["output"]
    np.testing.assert_array_equal(np.array(again["records"][0]["weights"]), np.array(rec["weights"]))
