"""``cli.py generate`` as a user runs it (subprocess), on a tiny GPT-2 uploaded as a zipped folder: the
npz and JSON contract (ids, tokens, prompt_len, attention [layers, heads, new, all tokens]; the ids are
transformers' own greedy continuation, row k the eager attention of the query at prompt_len + k − 1),
seeded sampling, and SmolLM2's answer (slow; bad input: test_causal_lm_input_cli.py)."""

import json

import numpy as np
import pytest
import torch

from tests.support import run_cli as cli

TEXT = "the cat sat on the mat"
NEW = 6


def own(folder) -> tuple[list[int], torch.Tensor]:
    """transformers' own greedy continuation of TEXT, and the eager attention over all of it."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    # without the [SEP] its BERT tokenizer appends: a causal LM continues the text (issue 40 item 24)
    ids = AutoTokenizer.from_pretrained(folder)(TEXT, return_tensors="pt")["input_ids"][:, :-1]
    model = AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager").eval()
    with torch.no_grad():
        full = model.generate(ids, max_new_tokens=NEW, do_sample=False, attention_mask=torch.ones_like(ids))
        att = torch.cat(model(input_ids=full, output_attentions=True).attentions)  # [layers, heads, n, n]
    return full[0].tolist(), ids.shape[1], att


def test_npz_and_json_hold_the_same_continuation(gpt2_zip, tiny_hf_folders, tmp_path):
    out = tmp_path / "gen.npz"
    done = cli("generate", "--checkpoint", gpt2_zip, "--text", TEXT, "--max-new-tokens", NEW, "--out", out)
    assert done.returncode == 0, done.stderr
    saved = np.load(out)
    ids, n, att = own(tiny_hf_folders["causal"])
    new = len(ids) - n
    assert saved["ids"].tolist() == ids and int(saved["prompt_len"]) == n
    assert len(saved["tokens"]) == len(ids)
    assert saved["attention"].shape == (2, 2, new, len(ids))
    for k in range(new):
        q = n + k - 1
        assert np.allclose(saved["attention"][:, :, k, : q + 1], att[:, :, q, : q + 1].numpy(), atol=1e-5)
        assert (saved["attention"][:, :, k, q + 1 :] == 0).all()

    done = cli("generate", "--checkpoint", gpt2_zip, "--text", TEXT, "--max-new-tokens", NEW, "--json")
    assert done.returncode == 0, done.stderr
    obj = json.loads(done.stdout)
    assert obj["ids"] == ids and obj["prompt_len"] == n and obj["tokens"] == list(saved["tokens"])
    assert np.allclose(obj["attention"], saved["attention"], atol=1e-7)


def test_a_seed_samples_one_continuation(gpt2_zip):
    def sample(seed):
        args = ("--max-new-tokens", 12, "--temperature", 2.0, "--top-p", 0.95, "--seed", seed, "--json")
        done = cli("generate", "--checkpoint", gpt2_zip, "--text", TEXT, *args)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)["ids"]

    first = sample(1)
    assert sample(1) == first and sample(2) != first


def test_plain_output_names_what_each_new_token_looked_at(gpt2_zip):
    done = cli("generate", "--checkpoint", gpt2_zip, "--text", TEXT, "--max-new-tokens", 3)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[0].startswith("model   ") and len(lines) == 4 and "looked most at" in lines[1]


def test_plain_output_names_the_strongest_tokens_after_the_first(capsys):
    """Issue 40, item 14: the first token is an attention sink that wins every head's average, so
    "looked most at 0 · 'The'" was printed for every new token; the three strongest after it are."""
    from types import SimpleNamespace

    from attention_atlas.cli.analysis import _print_generated

    tokens = ["The", " cat", " sat", " on", " the", " mat", "."]
    attention = np.zeros((1, 2, 2, len(tokens)))  # [layers, heads, new, all]: queries at 4 and 5
    attention[0, :, 0, :5] = [[0.7, 0.1, 0.1, 0.0, 0.1], [0.6, 0.2, 0.1, 0.0, 0.1]]
    attention[0, :, 1, :6] = [[0.8, 0.0, 0.0, 0.1, 0.0, 0.1], [0.8, 0.0, 0.1, 0.1, 0.0, 0.0]]
    done = SimpleNamespace(text=" mat.", attention=attention, prompt_len=5, tokens=tokens)
    _print_generated(SimpleNamespace(model_id="tiny"), done)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3
    assert lines[1].endswith(
        "looked most at 1 · ' cat' (0.15), 2 · ' sat' (0.10), 4 · ' the' (0.10); the first token 0.65"
    )
    assert lines[2].endswith(
        "looked most at 3 · ' on' (0.10), 2 · ' sat' (0.05), 5 · ' mat' (0.05); the first token 0.80"
    )
    one = SimpleNamespace(text=" cat", attention=np.array([[[[1.0, 0.0]]]]), prompt_len=1, tokens=tokens)
    _print_generated(SimpleNamespace(model_id="tiny"), one)
    assert capsys.readouterr().out.splitlines()[1].endswith("looked only at 0 · 'The' (1.00)")


@pytest.mark.slow
def test_smollm2_answers():
    args = ("--text", "The capital of France is", "--max-new-tokens", 4, "--json")
    done = cli("generate", "--model", "smollm2", *args, timeout=600)
    assert done.returncode == 0, done.stderr
    obj = json.loads(done.stdout)
    n, total = obj["prompt_len"], len(obj["ids"])
    assert np.array(obj["attention"]).shape == (30, 9, total - n, total)
