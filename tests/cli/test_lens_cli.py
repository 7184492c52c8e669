"""``cli.py lens`` as a user runs it (subprocess), on a tiny GPT-2 uploaded as a zipped folder: the npz
and JSON contract (top_ids, top_probs [layers, positions, K], tokens; the last row the model's own
next-token distribution), and SmolLM2's answer (slow; bad input: test_causal_lm_input_cli.py)."""

import json

import numpy as np
import pytest
import torch

from tests.support import run_cli as cli

TEXT = "the cat sat on the mat"


def own_probs(folder) -> tuple[np.ndarray, list[int]]:
    """The model's own next-token probabilities [positions, vocab], from transformers directly."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    ids = AutoTokenizer.from_pretrained(folder)(TEXT, return_tensors="pt")["input_ids"][:, :-1]  # no [SEP]: a causal LM's text
    model = AutoModelForCausalLM.from_pretrained(folder).eval()
    with torch.no_grad():
        return torch.softmax(model(input_ids=ids).logits[0], -1).numpy(), ids[0].tolist()


def test_npz_and_json_hold_the_same_grid(gpt2_zip, tiny_hf_folders, tmp_path):
    out = tmp_path / "lens.npz"
    done = cli("lens", "--checkpoint", gpt2_zip, "--text", TEXT, "--top", 4, "--out", out)
    assert done.returncode == 0, done.stderr
    saved = np.load(out)
    probs, ids = own_probs(tiny_hf_folders["causal"])
    assert saved["top_ids"].shape == saved["top_probs"].shape == (2, len(ids), 4)
    assert list(saved["tokens"]) and len(saved["tokens"]) == len(ids)
    assert np.allclose(saved["top_probs"][-1], -np.sort(-probs, -1)[:, :4], atol=1e-5)
    assert np.allclose(np.take_along_axis(probs, saved["top_ids"][-1], -1), saved["top_probs"][-1], atol=1e-5)

    done = cli("lens", "--checkpoint", gpt2_zip, "--text", TEXT, "--top", 4, "--json")
    assert done.returncode == 0, done.stderr
    obj = json.loads(done.stdout)
    assert obj["tokens"] == list(saved["tokens"])
    assert (np.array(obj["top_ids"]) == saved["top_ids"]).all()
    assert np.allclose(obj["top_probs"], saved["top_probs"], atol=1e-7)


@pytest.mark.slow
def test_minilm_is_refused_and_smollm2_answers():
    done = cli("lens", "--model", "minilm", "--text", TEXT)
    assert done.returncode != 0 and "minilm is not a causal language model" in done.stderr
    done = cli("lens", "--model", "smollm2", "--text", TEXT, "--top", 3, "--json", timeout=600)
    assert done.returncode == 0, done.stderr
    obj = json.loads(done.stdout)
    assert np.array(obj["top_ids"]).shape == (30, len(obj["tokens"]), 3)
