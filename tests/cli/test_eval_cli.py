"""``cli.py eval``: a translation model's corpus BLEU with paired bootstrap intervals (issue 27,
item 11), run as a user would; bad input is one line."""

from __future__ import annotations

import json

import pytest

from attention_atlas.paths import WEIGHTS
from tests.support import run_cli


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--model", "no-such-model"), "neither a bundled model id nor a bundle folder"),
        (("--model", "translate-gru-additive", "--resamples", "10"), "--resamples 10 is too few"),
        (("--model", "translate-gru-additive", "--beam", "0"), "--beam 0 must be 1"),
        (("--model", "translate-gru-additive", "--first", "0"), "--first 0 must be 1 or more"),
        (("--model", "translate-gru-additive", "--split", "train"), "invalid choice: 'train'"),
        (("--model", "couplet-rnn-additive"), "is a couplet model; eval scores translation models"),
    ],
)
def test_bad_input_is_one_line(args, message):
    done = run_cli("eval", *args, timeout=120)
    assert done.returncode != 0 and done.stdout == ""
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1


@pytest.mark.slow  # translates the first 300 test pairs twice
def test_eval_reproduces_the_cards_bleu_and_a_model_against_itself_differs_by_zero():
    done = run_cli(
        "eval",
        "--model",
        "translate-gru-additive",
        "--against",
        WEIGHTS / "translate-gru-additive",
        "--first",
        "300",
        "--resamples",
        "200",
        "--json",
        timeout=280,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["split"], report["pairs"], report["resamples"]) == ("test", 300, 200)
    against, model, diff = report["rows"]
    card = json.loads((WEIGHTS / "translate-gru-additive" / "metrics.json").read_text(encoding="utf-8"))
    assert model["bleu"] == pytest.approx(card["metrics"]["bleu_first_300"], abs=0.01)
    assert against["bleu"] == pytest.approx(model["bleu"]) and model["low"] < model["bleu"] < model["high"]
    assert diff["name"].endswith("− " + str(WEIGHTS / "translate-gru-additive"))
    assert diff["bleu"] == diff["low"] == diff["high"] == 0
