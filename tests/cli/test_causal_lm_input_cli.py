"""Bad input to the causal-LM verbs (``lens``, ``generate``, ``contributions``), as a user runs them
(subprocess) on the tiny GPT-2 zip: one table for all three, each row refused in one line on stderr,
nothing on stdout, no traceback; and a model that is not a causal LM refused by every verb."""

import pytest

from tests.support import run_cli as cli

TEXT = "the cat sat on the mat"
NEEDS = {"lens": [], "generate": ["--max-new-tokens", "3"], "contributions": []}  # each verb's required rest
COMMON = [
    (["--text", "   ", "--json"], "the text is empty"),
    (["--text", TEXT, "--out", "x.csv"], "writes .npz"),
    (["--text", TEXT, "--json", "--out", "x.npz"], "not allowed with"),
]
OWN = {
    "lens": [
        (["--text", TEXT, "--top", "100000"], "keep between 1 and 100"),
        (["--text", TEXT, "--token", "-3"], "not in the vocabulary"),
    ],
    "generate": [
        (["--text", TEXT, "--max-new-tokens", "0"], "max new tokens 0: give 1 to 1024"),
        (["--text", TEXT, "--max-new-tokens", "100"], "ask for at most"),
        (["--text", TEXT, "--max-new-tokens", "3", "--temperature", "0"], "temperature 0.0 must be above 0"),
        (["--text", TEXT, "--max-new-tokens", "3", "--top-p", "1.5"], "top-p 1.5 must be in (0, 1]"),
        (["--text", TEXT], "the following arguments are required: --max-new-tokens"),
    ],
    "contributions": [(["--text", TEXT], "one of the arguments --json --out is required")],
}
BAD = [(verb, args + NEEDS[verb], words) for verb in NEEDS for args, words in COMMON] + [
    (verb, args, words) for verb, rows in OWN.items() for args, words in rows
]


@pytest.mark.parametrize("verb, args, words", BAD, ids=[f"{v}-{w}" for v, _, w in BAD])
def test_bad_input_is_one_line(gpt2_zip, verb, args, words):
    done = cli(verb, "--checkpoint", gpt2_zip, *args)
    assert done.returncode != 0 and "Traceback" not in done.stderr and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and words in done.stderr


@pytest.mark.parametrize("verb", list(NEEDS))
def test_a_model_that_is_not_a_causal_lm_is_refused(tiny_rnn_checkpoint, verb):
    done = cli(verb, "--checkpoint", tiny_rnn_checkpoint, "--text", "两个黄鹂鸣翠柳", *NEEDS[verb], "--json")
    assert done.returncode != 0 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and "not a causal language model" in done.stderr
