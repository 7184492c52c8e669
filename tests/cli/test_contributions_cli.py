"""``cli.py contributions`` as a user runs it (subprocess), on a tiny GPT-2 uploaded as a zipped folder:
the npz and JSON contract (attn [layers, heads, positions, positions], attn_residual, ffn, ffn_residual
[layers, positions], tokens), equal to the naive definition of tests/unit/test_contributions.py, and
SmolLM2's answer (slow; bad input: test_causal_lm_input_cli.py)."""

import json

import numpy as np
import pytest

from tests.support import run_cli as cli
from tests.unit.test_contributions import ARCHS, naive

TEXT = "the cat sat on the mat"
KEYS = ("attn", "attn_residual", "ffn", "ffn_residual")


def expected(folder) -> dict:
    """The definition built in full, on the model and ids transformers loads from the folder itself."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    ids = AutoTokenizer.from_pretrained(folder)(TEXT, return_tensors="pt")["input_ids"][:, :-1]  # no [SEP]: a causal LM's text
    model = AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager").eval()
    return naive(model, ARCHS["gpt2"][2], ids)


def test_npz_and_json_hold_the_definition(gpt2_zip, tiny_hf_folders, tmp_path):
    out = tmp_path / "c.npz"
    done = cli("contributions", "--checkpoint", gpt2_zip, "--text", TEXT, "--out", out)
    assert done.returncode == 0, done.stderr
    saved = np.load(out)
    want = expected(tiny_hf_folders["causal"])
    for key in KEYS:
        assert saved[key].shape == want[key].shape
        assert np.abs(saved[key] - want[key]).max() < 1e-4, key
    layers, _, n, _ = saved["attn"].shape
    assert len(saved["tokens"]) == n and saved["ffn"].shape == (layers, n)
    assert np.allclose(saved["attn"].sum((1, 3)) + saved["attn_residual"], 1, atol=1e-5)

    done = cli("contributions", "--checkpoint", gpt2_zip, "--text", TEXT, "--json")
    assert done.returncode == 0, done.stderr
    obj = json.loads(done.stdout)
    assert obj["tokens"] == list(saved["tokens"])
    for key in KEYS:
        assert np.allclose(obj[key], saved[key], atol=1e-7)


@pytest.mark.slow
def test_smollm2_answers(tmp_path):
    out = tmp_path / "smol.npz"
    done = cli("contributions", "--model", "smollm2", "--text", TEXT, "--out", out, timeout=900)
    assert done.returncode == 0, done.stderr
    saved = np.load(out)
    assert saved["attn"].shape[:2] == (30, 9) and saved["attn"].shape[2] == len(saved["tokens"])
    assert np.allclose(saved["attn"].sum((1, 3)) + saved["attn_residual"], 1, atol=1e-4)
    assert np.allclose(saved["ffn"] + saved["ffn_residual"], 1, atol=1e-4)
