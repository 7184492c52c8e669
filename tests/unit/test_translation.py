"""Translation (the Bahdanau tutorial): text handling, tiny random models' invariants, the adapter, uploads, training."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attention_atlas.models.storage.bundle import Seq2SeqBundle
from attention_atlas.models.tasks.translation import (
    MAX_WORDS,
    batches,
    bleu,
    detokenize,
    prepare_sentence,
    tokenize,
)
from attention_atlas.models.text.pairs import split_pairs
from attention_atlas.models.text.vocab import EOS
from tests.support import TRANSLATION_PAIRS as PAIRS
from tests.support import WORD_PAIRS, tiny_translation_bundle, tiny_translator, tiny_vocabs

# -- text ------------------------------------------------------------------------------------


def test_tokenize_lowercases_and_splits_punctuation_but_not_apostrophes():
    assert tokenize("He's calm.") == ["he's", "calm", "."]
    assert tokenize("Je suis chez moi\u202f!") == ["je", "suis", "chez", "moi", "!"]
    assert tokenize("Peut-être qu’il pleut, non ?") == ["peut-être", "qu'il", "pleut", ",", "non", "?"]
    assert detokenize(["je", "suis", "chez", "moi", "."]) == "je suis chez moi."


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_any_text_becomes_clean_tokens_or_a_clear_error(text):
    try:
        s = prepare_sentence(text)
    except ValueError as err:
        assert "empty" in str(err)
        assert tokenize(text) == []
        return
    assert 1 <= len(s.tokens) <= MAX_WORDS
    assert all(t and not any(c.isspace() for c in t) for t in s.tokens)
    assert s.truncated == (len(tokenize(text)) > MAX_WORDS)


def test_long_input_is_truncated_with_a_notice():
    s = prepare_sentence("word " * 500)
    assert len(s.tokens) == MAX_WORDS and s.truncated
    assert "500 words" in s.notices[0]


def test_split_keeps_every_test_source_out_of_training():
    pairs = [(f"s{i % 40}", f"t{i}") for i in range(200)]
    train, test = split_pairs(pairs, 30, seed=0)
    assert not {s for s, _ in train} & {s for s, _ in test}
    assert split_pairs(pairs, 30, seed=0) == (train, test)


def test_bleu_is_100_for_exact_output_and_accepts_uneven_reference_lists():
    refs = [["je suis chez moi .", "je suis à la maison ."], ["va !"]]
    assert bleu(["je suis chez moi .", "va !"], refs)["bleu"] == pytest.approx(100.0)
    assert bleu(["tu es là .", "cours !"], refs)["bleu"] < 20


# -- tiny random models ------------------------------------------------------------------------


@pytest.mark.parametrize("rnn,attention", [("gru", "additive"), ("lstm", "scaled_dot")])
def test_forced_attention_rows_are_distributions_and_padding_gets_nothing(rnn, attention):
    tr = tiny_translator(rnn, attention)
    sources = [["i", "lost", "."], ["go", "."]]
    targets = [["j'ai", "perdu", "."], ["va", "!", "!", "!"]]
    for d, src, tgt in zip(tr.force(sources, targets), sources, targets, strict=True):
        w = d.weights.numpy()
        assert w.shape == (len(tgt) + 1, len(src) + 1)  # rows: words + eos; keys: words + eos
        np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-5)
    # the shorter source's padding key never gets weight: the same input alone gives the same rows
    alone = tr.force([sources[1]], [targets[1]])[0].weights.numpy()
    np.testing.assert_allclose(tr.force(sources, targets)[1].weights.numpy(), alone, atol=1e-6)


def test_generation_stops_at_eos_or_the_cap_and_beam_one_is_greedy():
    tr = tiny_translator()
    sources = [["i", "lost", "."], ["he's", "calm", "."]]
    greedy = tr.generate(sources)
    assert [d.tokens for d in tr.generate(sources, beam=1)] == [d.tokens for d in greedy]
    for d in greedy + tr.generate(sources, beam=3):
        eos = [i for i, t in enumerate(d.tokens) if t == tr.tgt_vocab.eos_id]
        assert eos == [len(d.tokens) - 1] or (not eos and len(d.tokens) == 2 * 3 + 10)
        assert tr.tgt_vocab.pad_id not in d.tokens and tr.tgt_vocab.bos_id not in d.tokens
        np.testing.assert_allclose(d.weights.numpy().sum(-1), 1.0, atol=1e-5)


def test_beam_search_never_scores_below_greedy():
    tr = tiny_translator(seed=4)
    sources = [en for en, _ in WORD_PAIRS]
    for g, b in zip(tr.generate(sources), tr.generate(sources, beam=4), strict=True):
        if g.tokens[-1] == tr.tgt_vocab.eos_id:  # both finished hypotheses: beam keeps the best it saw
            assert b.score >= g.score - 1e-4


def test_batches_end_sources_and_targets_with_eos():
    src, tgt = tiny_vocabs()
    b = batches(WORD_PAIRS, src, tgt, batch_size=3)(0)
    assert sum(x.src.shape[0] for x in b) == len(WORD_PAIRS)
    for x in b:
        for i in range(x.src.shape[0]):
            assert x.src[i, x.src_lens[i] - 1] == src.eos_id
            assert x.tgt_out[i, x.tgt_lens[i] - 1] == tgt.eos_id and x.tgt_in[i, 0] == tgt.bos_id


# -- the adapter -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def adapter(tmp_path_factory):
    from attention_atlas.models.adapters.translate_rnn import TranslationAdapter

    path = tiny_translation_bundle(tmp_path_factory.mktemp("tr") / "tiny.safetensors")
    return TranslationAdapter("tiny", path, "cpu")


def test_adapter_records_words_and_eos_on_both_axes(adapter):
    r = adapter.run("I lost.", target="J'ai perdu.")
    rec = r.records["cross"]
    assert rec.key_tokens == ["i", "lost", ".", EOS] and rec.query_tokens == ["j'ai", "perdu", ".", EOS]
    assert rec.meta["strategy"] == "forced" and r.output is None
    gen = adapter.run("I lost.", beam=2)
    assert gen.output is not None and gen.records["cross"].meta["strategy"] == "beam-2"
    assert len(gen.records["cross"].query_tokens) == gen.records["cross"].weights.shape[2]


def test_adapter_bad_input_gives_messages_not_tracebacks(adapter):
    empty, chinese, french, long = adapter.run_batch(
        [("   ", None), ("我爱你", None), ("Je suis chez moi.", None), ("home " * 500, None)]
    )
    assert isinstance(empty, ValueError) and "empty" in str(empty)
    assert "not in the model's vocabulary (我爱你)" in chinese.notices[0]
    assert chinese.records["cross"].meta["unk_positions"] == [0]
    assert any("vocabulary" in n for n in french.notices)
    assert any("only the first 50" in n for n in long.notices)
    assert long.records["cross"].key_tokens[-1] == EOS and len(long.records["cross"].key_tokens) == 51
    with pytest.raises(ValueError, match="empty"):
        adapter.run("")
    with pytest.raises(ValueError, match="empty"):
        adapter.run("go .", target="  ")


def test_uploaded_translation_bundle_gives_the_same_attention(adapter, tmp_path):
    from attention_atlas.models.uploads import NeedsAnswers, UploadCache, load_bytes

    data = adapter.bundle_file.read_bytes()
    cache = UploadCache(1 << 30)
    up = load_bytes(data, "tiny.safetensors", device=torch.device("cpu"), cache=cache)
    assert up.summary.architecture == "translation-rnn" and up.summary.compare[0] == "translate-gru-additive"
    mine = up.adapter.run("he's calm .", target="il est calme .").records["cross"]
    theirs = adapter.run("he's calm .", target="il est calme .").records["cross"]
    np.testing.assert_array_equal(mine.weights, theirs.weights)
    # a bare state dict needs both vocabularies: one is refused, two load
    bare = Seq2SeqBundle.load(adapter.bundle_file).model.state_dict()
    buf = tmp_path / "bare.pt"
    torch.save(bare, buf)
    answers = {
        "architecture": "translation-rnn",
        "key_activation": "tanh",
        "vocabulary": adapter.bundle.src_vocab.tokens,
    }
    with pytest.raises(Exception, match="target vocabulary"):
        load_bytes(buf.read_bytes(), "bare.pt", answers, device=torch.device("cpu"), cache=cache)
    answers["vocabulary"] = {"src": adapter.bundle.src_vocab.tokens, "tgt": adapter.bundle.tgt_vocab.tokens}
    with pytest.raises(NeedsAnswers) as need:  # no vocabulary given: it asks for one
        load_bytes(
            buf.read_bytes(),
            "bare.pt",
            {"architecture": "translation-rnn"},
            device=torch.device("cpu"),
            cache=cache,
        )
    assert {m.field for m in need.value.missing} == {
        "key_activation",
        "vocabulary",
    }  # additive shows in the shapes
    up = load_bytes(buf.read_bytes(), "bare.pt", answers, device=torch.device("cpu"), cache=cache)
    assert up.summary.architecture == "translation-rnn"
    again = up.adapter.run("he's calm .", target="il est calme .").records["cross"]
    np.testing.assert_array_equal(again.weights, theirs.weights)


# -- training ----------------------------------------------------------------------------------------


def test_training_command_writes_a_bundle_whose_card_matches_its_numbers(tmp_path):
    from attention_atlas.models.training.translation_recipe import TranslationTrainArgs, train

    data = tmp_path / "pairs.tsv.gz"
    rows = [f"{en}\t{fr}" for en, fr in PAIRS] * 8 + [f"Sentence {i}.\tPhrase {i}." for i in range(40)]
    with gzip.open(data, "wt", encoding="utf-8") as f:
        f.write("\n".join(rows) + "\n")
    args = TranslationTrainArgs(
        data=data,
        out=tmp_path / "out",
        run_dir=tmp_path / "run",
        steps=6,
        batch_size=8,
        embed=8,
        hidden=8,
        min_freq=1,
        eval_every=3,
        test_size=10,
        valid_size=5,
        beam=2,
    )
    metrics = train(args, command="python cli.py train translate --rnn gru --attention additive")
    card = (tmp_path / "out" / "MODEL_CARD.md").read_text(encoding="utf-8")
    saved = json.loads((tmp_path / "out" / "metrics.json").read_text(encoding="utf-8"))
    assert saved["metrics"] == metrics and f"| {metrics['bleu']:.2f} |" in card
    low, high = metrics["bleu_ci95"]  # the card's test BLEU with its bootstrap interval
    assert low <= metrics["bleu"] <= high and f"| {low:.2f} – {high:.2f} |" in card
    assert "--split held-out" in card
    assert "python cli.py train translate --rnn gru --attention additive" in card
    assert set(saved["examples"]) == {"go .", "i lost .", "he's calm .", "i'm home ."}
    bundle = Seq2SeqBundle.load(tmp_path / "out")
    assert bundle.task == "translation" and not bundle.shared_vocab
    # resuming an ended run changes nothing
    again = train(args, command="python cli.py train translate --rnn gru --attention additive")
    assert again == metrics
