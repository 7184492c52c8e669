"""``patch_view`` (issue 39) on the notebook's own tiny GPT-2 (SDPA, as a notebook may load it) and
minilm's WordPiece: the arrays equal the naive patching of tests/unit/test_patching.py on the same
model, the figures draw them with the differing token marked, and a bad pair is one line."""

import numpy as np
import pytest
import torch

from attention_atlas.models.adapters.minilm import model_folder
from attention_atlas.notebook import NotebookError, View, patch_view
from tests.unit.test_patching import ARCHS, naive

CLEAN, CORRUPT = "the cat sat on the mat", "the dog sat on the mat"


@pytest.fixture(scope="module")
def loaded():
    from transformers import AutoModelForCausalLM, AutoTokenizer, GPT2Config

    torch.manual_seed(0)
    config = GPT2Config(vocab_size=30522, n_embd=16, n_layer=2, n_head=4, n_positions=64, initializer_range=0.5)
    model = AutoModelForCausalLM.from_config(config, attn_implementation="sdpa").eval()
    return model, AutoTokenizer.from_pretrained(model_folder())


def test_patch_view_draws_the_naive_patching(loaded):
    model, tok = loaded
    view = patch_view(model, tok, CLEAN, CORRUPT, "mat", "dog")
    assert isinstance(view, View)
    result = view.result
    # as the adapter reads a causal LM's text: without the [SEP] its BERT tokenizer appends
    ids = [tok(t, return_tensors="pt")["input_ids"][:, :-1] for t in (CLEAN, CORRUPT)]
    answer, wrong = (tok.convert_tokens_to_ids(w) for w in ("mat", "dog"))
    want = naive(model, ARCHS["gpt2"][2], *ids, answer, wrong)
    for kind in ("resid", "attn_out", "mlp_out", "heads", "pattern"):
        assert np.abs(getattr(result, kind) - want[kind]).max() < 1e-4, kind
    figures = view.sections[0].figures
    assert len(figures) == 5
    np.testing.assert_allclose(np.array(figures[0].data[0].z), np.round(result.resid, 4), atol=1e-6)
    ticks = list(figures[0].layout.xaxis.ticktext)
    assert ticks[2] == "cat▸dog" and "▸" not in "".join(ticks[:2] + ticks[3:])  # [CLS] the cat: 2 differs
    assert np.array(figures[3].data[0].z).shape == (2, 4)
    assert "clean" in view.sections[0].caption and "corrupted" in view.sections[0].caption
    html = patch_view(model, tok, CLEAN, CORRUPT, "mat", "dog", kinds=["heads"], html_action="return").data
    assert "activation patching" in html and "<html" in html


def test_a_pair_of_different_lengths_is_one_line(loaded):
    model, tok = loaded
    with pytest.raises(NotebookError, match="first differ at token 2") as err:
        patch_view(model, tok, CLEAN, "the big dog sat on the mat", "mat", "dog")
    assert "\n" not in str(err.value)
