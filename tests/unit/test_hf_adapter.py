"""The Hugging Face adapter on tiny random models built from configs (no download)."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attention_atlas.models.adapters.hf import HFAdapter, InputError
from attention_atlas.viz_core.record import AttentionRecord
from tests.support import CPU, TINY_HF, hf_folder, tiny_bart_config

LAYERS, HEADS = TINY_HF["layers"], TINY_HF["heads"]


@pytest.fixture(scope="module")
def tiny(tiny_hf_folders):
    return {name: HFAdapter(f"tiny-{name}", folder, CPU) for name, folder in tiny_hf_folders.items()}


def test_family_is_read_from_the_config(tiny):
    assert {name: a.family for name, a in tiny.items()} == {
        "encoder": "encoder",
        "causal": "causal",
        "seq2seq": "seq2seq",
    }


@pytest.mark.parametrize("family", ["encoder", "causal"])
def test_self_attention_record_has_every_layer_and_head(tiny, family):
    result = tiny[family].run("The cat sat on the mat.")
    rec = result.records["self"]
    assert rec.weights.shape == (LAYERS, HEADS, len(rec.query_tokens), len(rec.key_tokens))
    np.testing.assert_allclose(rec.weights.sum(-1), 1, atol=1e-5)
    assert rec.kind == "self" and rec.model_id == f"tiny-{family}"


def test_encoder_keeps_special_tokens_and_marks_them(tiny):
    rec = tiny["encoder"].run("unbelievable").records["self"]
    assert rec.query_tokens[0] == "[CLS]" and rec.query_tokens[-1] == "[SEP]"
    assert rec.meta["key_special"][0] and rec.meta["key_special"][-1] and not rec.meta["key_special"][1]
    assert rec.meta["key_word_ids"][0] is None


def test_a_causal_lm_reads_its_text_without_the_separator_its_tokenizer_appends(tiny):
    """Issue 40 item 24: a causal LM with a BERT-style tokenizer was traced at the [SEP] its tokenizer
    appends ("Routes into the output at 12 · [SEP]"); the leading [CLS] stays, and the long-input
    capture reads the same tokens. The encoder keeps both (above)."""
    from attention_atlas.models.adapters.capture import encode_long
    from attention_atlas.models.analysis import lens

    causal = tiny["causal"]
    assert causal.encode("the cat sat").tokens == ["[CLS]", "the", "cat", "sat"]
    assert encode_long(causal, "the cat sat").tokens == ["[CLS]", "the", "cat", "sat"]
    assert causal.run("the cat sat").records["self"].query_tokens[-1] == "sat"
    assert lens.lens(causal, "the cat sat")[1][-1] == "sat"
    assert causal.encode("a [SEP]").tokens == ["[CLS]", "a", "[SEP]"]  # a typed one is text: it stays


def test_causal_attention_never_looks_ahead(tiny):
    w = tiny["causal"].run("one two three four five").records["self"].weights
    assert (np.triu(w, k=1) == 0).all()


def test_seq2seq_gives_encoder_decoder_and_cross_records(tiny):
    result = tiny["seq2seq"].run("a short source sentence", target="une phrase")
    enc, dec, cross = (result.records[k] for k in ("encoder_self", "decoder_self", "cross"))
    assert cross.weights.shape == (LAYERS, HEADS, len(dec.query_tokens), len(enc.key_tokens))
    assert cross.query_tokens == dec.query_tokens and cross.key_tokens == enc.key_tokens
    assert (np.triu(dec.weights, k=1) == 0).all() and result.output is None
    generated = tiny["seq2seq"].run("a short source sentence")
    assert (
        isinstance(generated.output, str)
        and generated.records["cross"].weights.shape[-1] == cross.weights.shape[-1]
    )


def test_long_input_is_truncated_with_a_notice_and_empty_input_refused(tiny):
    result = tiny["encoder"].run("word " * 500)
    assert result.records["self"].weights.shape[-1] == TINY_HF["positions"]
    assert any("first 64" in n for n in result.notices)
    huge = tiny["encoder"].run("字" * 30_000)
    assert any("characters" in n for n in huge.notices)
    for empty in ("", "   \n\t"):
        with pytest.raises(InputError, match="empty"):
            tiny["encoder"].run(empty)


def test_missing_weights_are_an_error_not_an_empty_view(tiny):
    with pytest.raises(RuntimeError, match="no self-attention weights"):
        tiny["encoder"]._stack((), "self-attention")


@pytest.mark.slow
@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(min_size=0, max_size=40))
def test_any_string_gives_valid_records_or_a_clear_refusal(tiny, text):
    for name, adapter in tiny.items():
        target = "la phrase" if name == "seq2seq" else None  # forced: a random model never stops generating
        try:
            result = adapter.run(text, target=target)
        except InputError as err:
            assert not text.strip() or "no tokens" in str(err)
            continue
        assert all(isinstance(r, AttentionRecord) for r in result.records.values())


def test_encoder_and_decoder_of_different_depths(tmp_path):
    from transformers import BartForConditionalGeneration

    config = tiny_bart_config(d_model=32, layers=(3, 1), heads=4, ffn=37)
    adapter = HFAdapter("uneven", hf_folder(BartForConditionalGeneration(config), tmp_path / "uneven"), CPU)
    records = adapter.run("a source", target="une cible").records
    assert records["encoder_self"].n_layers == 3
    assert records["decoder_self"].n_layers == records["cross"].n_layers == 1
