"""``cli.py patch`` as a user runs it (subprocess), on a tiny GPT-2 uploaded as a zipped folder: the npz
and JSON contract (tokens_clean, tokens_corrupt, metric_clean, metric_corrupt, resid, attn_out, mlp_out
[layers, positions], heads, pattern [layers, heads]) equal to the naive patching of
tests/unit/test_patching.py, bad input refused in one line, and SmolLM2's answer (slow)."""

import json

import numpy as np
import pytest

from tests.support import run_cli as cli
from tests.unit.test_patching import ARCHS, naive

CLEAN, CORRUPT = "the cat sat on the mat", "the dog sat on the mat"
ARGS = ["--clean", CLEAN, "--corrupt", CORRUPT, "--answer", "mat", "--wrong", "dog"]
KEYS = ("resid", "attn_out", "mlp_out", "heads", "pattern")


def expected(folder, direction: str) -> dict:
    """The naive patching, on the model and ids transformers loads from the folder itself."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    # as the adapter reads a causal LM's text: without the [SEP] its BERT tokenizer appends
    ids = [tok(t, return_tensors="pt")["input_ids"][:, :-1] for t in (CLEAN, CORRUPT)]
    answer, wrong = (tok(w, add_special_tokens=False)["input_ids"][0] for w in ("mat", "dog"))
    model = AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager").eval()
    return naive(model, ARCHS["gpt2"][2], *ids, answer, wrong, direction)


@pytest.mark.parametrize("direction", ["denoise", "noise"])
def test_npz_and_json_hold_the_naive_patching(gpt2_zip, tiny_hf_folders, tmp_path, direction):
    out = tmp_path / "p.npz"
    done = cli("patch", "--checkpoint", gpt2_zip, *ARGS, "--direction", direction, "--out", out, "--json")
    assert done.returncode == 0, done.stderr
    saved = np.load(out)
    want = expected(tiny_hf_folders["causal"], direction)
    n = len(saved["tokens_clean"])
    assert list(saved["tokens_clean"]) != list(saved["tokens_corrupt"]) and len(saved["tokens_corrupt"]) == n
    for key in ("metric_clean", "metric_corrupt"):
        assert saved[key].shape == () and abs(float(saved[key]) - want[key]) < 1e-4
    for key in KEYS:
        assert saved[key].shape == want[key].shape, key
        assert np.abs(saved[key] - want[key]).max() < 1e-4, key
    assert saved["resid"].shape[1] == n
    obj = json.loads(done.stdout.splitlines()[-1])
    assert obj["tokens_clean"] == list(saved["tokens_clean"]) and obj["direction"] == direction
    for key in KEYS:
        assert np.allclose(obj[key], saved[key], atol=1e-7)


BAD = [
    (["--clean", " ", "--corrupt", CORRUPT, "--answer", "mat", "--wrong", "dog", "--json"], "the clean prompt is empty"),
    (["--clean", CLEAN, "--corrupt", "the big dog sat on the mat", "--answer", "mat", "--wrong", "dog", "--json"],
     "first differ at token 2"),
    (["--clean", CLEAN, "--corrupt", CLEAN, "--answer", "mat", "--wrong", "dog", "--json"], "the same tokens"),
    (["--clean", CLEAN, "--corrupt", CORRUPT, "--answer", "mat cat", "--wrong", "dog", "--json"],
     "is 2 tokens for this model"),
    (["--clean", CLEAN, "--corrupt", CORRUPT, "--answer", "mat", "--wrong", "mat", "--json"], "the same token"),
    ([*ARGS, "--json", "--direction", "sideways"], "invalid choice: 'sideways'"),
    (ARGS, "give --out FILE.npz, --json, or both"),
    ([*ARGS, "--out", "x.csv"], "writes .npz"),
]


@pytest.mark.parametrize("args, words", BAD, ids=[w for _, w in BAD])
def test_bad_input_is_one_line(gpt2_zip, args, words):
    done = cli("patch", "--checkpoint", gpt2_zip, *args)
    assert done.returncode != 0 and "Traceback" not in done.stderr and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and words in done.stderr, done.stderr


def test_an_unknown_model_and_a_model_that_is_not_a_causal_lm_are_refused(tiny_rnn_checkpoint):
    done = cli("patch", "--model", "no-such-model", *ARGS, "--json")
    assert done.returncode != 0 and done.stdout == "" and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "no-such-model" in done.stderr
    done = cli("patch", "--checkpoint", tiny_rnn_checkpoint, *ARGS, "--json")
    assert done.returncode != 0 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and "not a causal language model" in done.stderr


@pytest.mark.slow
def test_smollm2_names_the_subject_token(tmp_path):
    out = tmp_path / "smol.npz"
    done = cli(
        "patch", "--model", "smollm2", "--clean", "The Eiffel Tower is in the city of",
        "--corrupt", "The Colosseum is in the city of", "--answer", " Paris", "--wrong", " Rome",
        "--out", out, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    saved = np.load(out)
    assert saved["resid"].shape == (30, len(saved["tokens_clean"])) and saved["heads"].shape == (30, 9)
    assert float(saved["metric_clean"]) > 0 > float(saved["metric_corrupt"])
    differ = [i for i, (a, b) in enumerate(zip(saved["tokens_clean"], saved["tokens_corrupt"], strict=True)) if a != b]
    assert saved["resid"][0, differ].sum() > 0.9  # the subject's tokens, at the input, carry the answer
    # the last token (" of") is the same in both prompts: its stream entering block 0 is the same
    # embedding, a patch that changes nothing (exactly 0); entering the last block it carries most of
    # the answer (0.81 once: that block's attention still reads the other positions' corrupted streams)
    assert saved["resid"][0, -1] == 0 and saved["resid"][-1, -1] > 0.5
