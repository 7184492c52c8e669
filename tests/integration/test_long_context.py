"""Long context (issue 12): weights recomputed from captured queries and keys equal transformers'
own eager ``output_attentions``, for minilm, smollm2 (slow) and tiny random BERT / GPT-2 folders."""

import random

import numpy as np
import pytest
import torch

from attention_atlas.models.adapters import capture as cp
from attention_atlas.models.adapters.hf import HFAdapter
from attention_atlas.models.registry import load
from attention_atlas.viz_core import blockwise as bw
from tests.support import qk_weights

CPU = torch.device("cpu")
WORDS = [
    "the",
    "cat",
    "sat",
    "on",
    "mat",
    "because",
    "it",
    "was",
    "tired",
    "and",
    "a",
    "dog",
    "ran",
    "after",
    "ball",
    "while",
    "rain",
    "fell",
    "over",
    "quiet",
    "town",
    "where",
    "people",
    "read",
    "books",
    "about",
    "rivers",
    "mountains",
    "stars",
    "12",
    "37",
    ",",
    ".",
    ";",
    "?",
    "!",
    "(",
    ")",
    "é",
    "风",
    "ünïcode",
]


def long_text(words: int, seed: int = 0) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(words))


def max_diff(cap, weights, heads):
    return max(
        float(np.abs(bw.head_weights(cap, layer, head) - weights[layer][head]).max()) for layer, head in heads
    )


@pytest.fixture(scope="module")
def minilm():
    return load("minilm", CPU)


def test_minilm_every_head_equals_eager_at_its_full_512(minilm):
    text = long_text(420)
    cap = cp.capture(minilm, text)
    record = minilm.run(text).records["self"]
    assert 400 < cap.n_tokens <= 512 and cap.n_tokens == record.weights.shape[-1]
    assert cap.tokens == record.query_tokens and cap.special == record.meta["query_special"]
    assert not cap.causal and cap.queries[0].shape == (12, cap.n_tokens, 32)
    assert cap.queries[0].dtype == np.float32
    every = [(layer, head) for layer in range(6) for head in range(12)]
    assert max_diff(cap, record.weights, every) < 1e-5


def test_minilm_over_its_context_is_refused_in_one_line(minilm):
    with pytest.raises(
        cp.CaptureError, match=r"the text is [\d,]+ tokens; minilm reads at most 512: shorten it"
    ):
        cp.capture(minilm, long_text(2000))


def test_memory_over_the_limit_is_refused_up_front_with_the_estimate(minilm, monkeypatch):
    monkeypatch.setenv("ATLAS_MAX_CAPTURE_MB", "1")
    with pytest.raises(cp.CaptureError, match=r"need about [\d,]+ MB to capture; the limit is 1 MB"):
        cp.capture(minilm, long_text(300))
    monkeypatch.setenv("ATLAS_MAX_CAPTURE_MB", "lots")
    with pytest.raises(cp.CaptureError, match="must be a number of megabytes"):
        cp.capture(minilm, "a cat")


def test_the_capture_twin_shares_the_weights_and_leaves_the_eager_model_alone(minilm):
    cp.capture(minilm, "a cat")
    twin = cp._twin(minilm.model, CPU)
    assert twin is not minilm.model
    pairs = zip(twin.parameters(), minilm.model.parameters(), strict=True)
    assert all(a.data_ptr() == b.data_ptr() for a, b in pairs)
    assert minilm.model.config._attn_implementation == "eager"
    assert twin.config._attn_implementation == cp.ATTENTION
    assert minilm.run("a cat").records["self"].weights.shape == (6, 12, 4, 4)  # run() still has weights


def test_tiny_encoder_and_causal_folders_capture_and_seq2seq_is_refused(tiny_hf_folders):
    text = "the cat sat on the mat because it was tired"
    for family in ("encoder", "causal"):
        adapter = HFAdapter(f"tiny-{family}", tiny_hf_folders[family], CPU)
        cap = cp.capture(adapter, text)
        record = adapter.run(text).records["self"]
        assert cap.causal == (family == "causal")
        every = [(layer, head) for layer in range(cap.n_layers) for head in range(cap.n_heads)]
        assert max_diff(cap, record.weights, every) < 1e-5
    bart = HFAdapter("tiny-seq2seq", tiny_hf_folders["seq2seq"], CPU)
    with pytest.raises(cp.CaptureError, match="an encoder–decoder"):
        cp.capture(bart, text)


def test_a_model_that_skips_the_attention_interface_is_refused(minilm, monkeypatch):
    monkeypatch.setattr(cp, "_forward", lambda adapter, ids, device, spill=None: {})
    with pytest.raises(cp.CaptureError, match=r"0 of 6 layers reported .* attention interface"):
        cp.capture(minilm, "a cat")


@pytest.fixture(scope="module")
def smollm2():
    return load("smollm2", CPU)


@pytest.mark.slow
def test_smollm2_every_head_equals_eager_below_512(smollm2):
    text = long_text(330)
    cap = cp.capture(smollm2, text)
    record = smollm2.run(text).records["self"]
    assert 300 < cap.n_tokens <= 512 and cap.n_tokens == record.weights.shape[-1]
    assert cap.causal and cap.queries[0].shape[0] == 9 and cap.keys[0].shape[0] == 3  # GQA: 3 key heads
    every = [(layer, head) for layer in range(30) for head in range(9)]
    assert max_diff(cap, record.weights, every) < 1e-5


@pytest.mark.slow
def test_smollm2_stays_equal_to_eager_at_1024_tokens(smollm2):
    text = long_text(1400, seed=1)
    cap = cp.capture(smollm2, text)
    assert cap.n_tokens > 1024  # more than run()'s 512: nothing was cut
    ids = smollm2.tokenizer(text, return_tensors="pt")["input_ids"][:, :1024]
    cap = cp._to_capture(
        smollm2, cp.capture_ids(smollm2, ids), cp.encoded(smollm2, ids, [False] * 1024, []), []
    )
    layers = (0, 7, 15, 29)
    with torch.no_grad():
        out = smollm2.model.model(input_ids=ids, output_attentions=True)  # the eager model, its own weights
    weights = {layer: out.attentions[layer][0].numpy() for layer in layers}
    assert max_diff(cap, weights, [(layer, head) for layer in layers for head in (0, 4, 8)]) < 1e-5


def test_cuda_out_of_memory_falls_back_to_the_cpu_with_a_notice(tiny_hf_folders, monkeypatch):
    adapter = HFAdapter("tiny-encoder", tiny_hf_folders["encoder"], CPU)  # this test's own adapter
    adapter.device = torch.device("cuda")  # as if it lived on a GPU
    real = cp._forward

    def forward(adapter, ids, device, spill=None):
        if device.type == "cuda":
            raise torch.OutOfMemoryError("CUDA out of memory")
        return real(adapter, ids, device, spill)

    monkeypatch.setattr(cp, "_forward", forward)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    cap = cp.capture(adapter, "the cat sat on the mat")
    assert cap.notices == ["cuda ran out of memory for 8 tokens; captured on the CPU"]
    assert cap.n_tokens == 8


def test_an_adapter_without_its_own_labels_gets_the_tokenizer_strings(minilm):
    from types import SimpleNamespace

    ids = minilm.tokenizer("a cat", return_tensors="pt")["input_ids"]
    enc = cp.encoded(
        SimpleNamespace(tokenizer=minilm.tokenizer), ids, [True, False, False, True], [None, 0, 1, None]
    )
    assert enc.tokens == ["[CLS]", "a", "cat", "[SEP]"] and enc.special[0]


@pytest.mark.parametrize("target", [None, "一行白鹭上青天"])
def test_couplet_transformer_queries_and_keys_give_every_kind_layer_and_head(target):
    """Our encoder–decoder's capture: each kind's weights, from its queries and keys, equal the
    record the adapter returns (greedy output, and a forced lower line), every layer and head."""
    adapter = load("couplet-transformer", CPU)
    result, qk = adapter.capture("两个黄鹂鸣翠柳，", target=target)
    assert set(qk) == set(result.records) == {"encoder_self", "decoder_self", "cross"}
    for kind, layers in qk.items():
        record = result.records[kind]
        assert len(layers) == record.weights.shape[0]
        for layer, (q, k) in enumerate(layers):
            weights = qk_weights(q, k, causal=kind == "decoder_self")
            np.testing.assert_allclose(weights, record.weights[layer], atol=1e-5)


def test_couplet_transformer_capture_keeps_to_its_own_thread():
    """Two threads capturing at once on the one shared model each get their own line's keys."""
    from concurrent.futures import ThreadPoolExecutor

    adapter = load("couplet-transformer", CPU)
    lines = ["两个黄鹂鸣翠柳", "春风得意马蹄疾，一日看尽长安花"]
    with ThreadPoolExecutor(2) as pool:
        both = list(pool.map(lambda line: adapter.capture(line), lines * 3))
    for line, (result, qk) in zip(lines * 3, both, strict=True):
        assert qk["encoder_self"][0][1].shape[1] == len(result.records["encoder_self"].key_tokens)
        assert "".join(result.records["encoder_self"].key_tokens).startswith(line[:5])
