"""Couplet seq2seq invariants on a tiny random model: shapes, masking, decoding rules, checkpoints."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attention_atlas.models.nets.rnn_seq2seq import Seq2Seq, Seq2SeqConfig
from attention_atlas.models.storage.bundle import Seq2SeqBundle
from attention_atlas.models.storage.checkpoint import CheckpointError, read_meta
from attention_atlas.models.tasks.couplet import (
    MAX_CHARS,
    PUNCTUATION,
    CoupletBatches,
    CoupletModel,
    prepare_line,
)
from attention_atlas.models.text.pairs import make_batch
from attention_atlas.models.text.search import Constraints, beam_search, greedy
from attention_atlas.models.text.vocab import Vocab
from attention_atlas.models.training.loop import TrainConfig, Trainer, loss_fn
from tests.support import COUPLET_PAIRS as PAIRS
from tests.support import UPPERS, tiny_rnn_couplet, tiny_rnn_model, tiny_vocab

ATTENTIONS = ["additive", "scaled_dot"]


@pytest.mark.parametrize("attention", ATTENTIONS)
@pytest.mark.parametrize("rnn", ["lstm", "gru"])
def test_forced_weights_have_the_right_shape_rows_sum_to_one_and_padding_gets_zero(attention, rnn):
    v = tiny_vocab()
    model = tiny_rnn_model(attention, rnn=rnn)
    batch = make_batch([v.encode(u) for u, _ in PAIRS], [v.encode(low) for _, low in PAIRS], bos_id=v.bos_id)
    logits, w = model(batch.src, batch.src_lens, batch.tgt_in)
    assert logits.shape == (len(PAIRS), 7, len(v))
    assert w.shape == (len(PAIRS), 7, 7)  # [batch, query, key]
    torch.testing.assert_close(w.sum(-1), torch.ones(len(PAIRS), 7))
    for i, n in enumerate(batch.src_lens.tolist()):
        assert torch.all(w[i, :, n:] == 0), "padding keys must get exactly 0"
        assert torch.all(w[i, :, :n] > 0)


@pytest.mark.parametrize("attention", ATTENTIONS)
def test_a_line_decodes_the_same_alone_and_in_a_padded_batch(attention):
    cm = tiny_rnn_couplet(attention)
    together = cm.generate(UPPERS)
    for line, d in zip(UPPERS, together, strict=True):
        alone = cm.generate([line])[0]
        assert alone.tokens == d.tokens
        torch.testing.assert_close(alone.weights, d.weights, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("attention", ATTENTIONS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_beam_width_one_equals_greedy(attention, seed):
    cm = tiny_rnn_couplet(attention, seed)
    g = cm.generate(UPPERS, beam=1, top_k=3)
    b = cm.generate(UPPERS, beam=2, top_k=3)  # a real beam, for contrast: must differ in code path
    v = cm.vocab
    src, lens = cm._src(UPPERS)
    b1 = beam_search(
        cm.model,
        src,
        lens,
        beam=1,
        bos_id=v.bos_id,
        eos_id=v.eos_id,
        top_k=3,
        constraints=Constraints(lengths=lens.clone(), banned=tuple(v.special_ids())),
    )
    g1 = greedy(
        cm.model,
        src,
        lens,
        bos_id=v.bos_id,
        eos_id=v.eos_id,
        top_k=3,
        constraints=Constraints(lengths=lens.clone(), banned=tuple(v.special_ids())),
    )
    for x, y in zip(g1, b1, strict=True):
        assert x.tokens == y.tokens
        assert x.score == pytest.approx(y.score, abs=1e-5)
        assert torch.equal(x.weights, y.weights)
        assert torch.equal(x.top_ids, y.top_ids)
    assert len(g) == len(b)


def test_beam_width_one_equals_greedy_without_length_rule_stopping_at_eos():
    cm = tiny_rnn_couplet("additive", seed=3)
    v = cm.vocab
    src, lens = cm._src(UPPERS)
    kw = dict(bos_id=v.bos_id, eos_id=v.eos_id, max_len=12)
    g = greedy(cm.model, src, lens, **kw)
    b = beam_search(cm.model, src, lens, beam=1, **kw)
    assert [d.tokens for d in g] == [d.tokens for d in b]
    for d in g:
        assert len(d.tokens) <= 12
        assert v.eos_id not in d.tokens[:-1]  # nothing after an eos


@pytest.mark.parametrize("beam", [1, 3])
def test_decoding_keeps_length_and_punctuation(beam):
    cm = tiny_rnn_couplet("scaled_dot", seed=4)
    uppers = ["两个黄鹂，鸣翠柳！", "白日依山尽。", "？春眠、不觉晓；", "，，", "海上生明月"]
    for upper, d in zip(uppers, cm.generate([list(u) for u in uppers], beam=beam), strict=True):
        lower = cm.text(d)
        assert len(lower) == len(upper)
        for a, b in zip(upper, lower, strict=True):
            assert (a in PUNCTUATION) == (b in PUNCTUATION)
            if a in PUNCTUATION:
                assert a == b
        assert not set(lower) & {"<unk>", "<pad>", "<bos>", "<eos>"}
        assert d.weights.shape == (len(upper), len(upper))


def test_save_and_load_round_trip_gives_identical_attention(tmp_path):
    cm = tiny_rnn_couplet("additive", seed=5)
    bundle = Seq2SeqBundle(cm.model, cm.vocab, cm.vocab, "couplet", "char", {"model_id": "t"})
    bundle.save_dir(tmp_path / "b")
    loaded = Seq2SeqBundle.load(tmp_path / "b")
    assert loaded.src_vocab.tokens == cm.vocab.tokens and loaded.shared_vocab
    assert loaded.model.config == cm.model.config
    again = CoupletModel(loaded.model, loaded.src_vocab)
    for a, b in zip(cm.generate(UPPERS, beam=2), again.generate(UPPERS, beam=2), strict=True):
        assert a.tokens == b.tokens and torch.equal(a.weights, b.weights)
    # float16 storage: half the bytes, attention within float16 rounding
    half = bundle.save(tmp_path / "half.safetensors", dtype="float16")
    assert half.stat().st_size < 0.6 * (tmp_path / "b" / "model.safetensors").stat().st_size
    h = CoupletModel(Seq2SeqBundle.load(half).model, cm.vocab)
    fa, fh = cm.force(UPPERS, UPPERS), h.force(UPPERS, UPPERS)
    for a, b in zip(fa, fh, strict=True):
        torch.testing.assert_close(a.weights, b.weights, atol=5e-3, rtol=0)
    meta = read_meta(half)
    assert meta["format"] == "attention-atlas/seq2seq-rnn" and meta["config"]["attention"] == "additive"


def test_loading_refuses_foreign_and_mismatched_files(tmp_path):
    pickled = tmp_path / "model.pt"
    torch.save({"x": torch.ones(2)}, pickled)
    with pytest.raises(CheckpointError):
        Seq2SeqBundle.load(pickled)
    from safetensors.torch import save_file

    untagged = tmp_path / "untagged.safetensors"
    save_file({"x": torch.ones(2)}, str(untagged))
    with pytest.raises(CheckpointError, match="format"):
        Seq2SeqBundle.load(untagged)
    cm = tiny_rnn_couplet()
    meta = Seq2SeqBundle(cm.model, cm.vocab, cm.vocab, "couplet", "char").meta()
    from attention_atlas.models.storage.checkpoint import save_checkpoint

    wrong = save_checkpoint(tmp_path / "wrong.safetensors", {"x": torch.ones(2)}, meta)
    with pytest.raises(CheckpointError, match="do not fit"):
        Seq2SeqBundle.load(wrong)


def test_prepare_line_cleans_truncates_and_refuses_empty():
    assert prepare_line(" 两个 黄鹂, ").chars == list("两个黄鹂，")
    long = prepare_line("风" * (MAX_CHARS + 5))
    assert len(long.chars) == MAX_CHARS and long.truncated and long.notices
    for empty in ("", "   ", "\n\t", None):
        with pytest.raises(ValueError, match="empty"):
            prepare_line(empty)


def test_vocab_round_trip_and_unknowns():
    v = tiny_vocab()
    assert Vocab.from_json(v.to_json()).tokens == v.tokens
    assert v.encode(["两", "Z"]) == [v.index["两"], v.unk_id]
    assert v.unknown(list("两Z😀Z")) == ["Z", "😀"]
    capped = Vocab.build([list("aaabbc")], max_size=6)
    assert capped.tokens[4:] == ["a", "b"]


def test_training_resumes_to_exactly_the_same_weights(tmp_path):
    v = tiny_vocab()
    batches = CoupletBatches(PAIRS * 4, v, batch_size=4, seed=1, join_prob=0.3)

    def run(run_dir, steps):
        model = tiny_rnn_model(seed=9).train()
        cfg = TrainConfig(max_steps=steps, save_every=3, eval_every=3, seed=1)
        Trainer(
            model,
            cfg,
            run_dir,
            torch.device("cpu"),
            batches,
            loss_fn,
            progress=False,
            evaluate=lambda m: {"alignment": 0.0},
            log=lambda _: None,
        ).fit()
        return model

    straight = run(tmp_path / "a", 8)
    run(tmp_path / "b", 5)  # cut off after a save at step 3 … and two more steps
    resumed = run(tmp_path / "b", 8)  # … resumes from its last state (step 5) up to 8
    for (name, a), (_, b) in zip(straight.state_dict().items(), resumed.state_dict().items(), strict=True):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5, msg=name)


def test_batches_are_deterministic_and_joined_examples_keep_the_rule():
    v = tiny_vocab()
    a = CoupletBatches(PAIRS * 10, v, batch_size=8, seed=2, join_prob=0.5)
    b = CoupletBatches(PAIRS * 10, v, batch_size=8, seed=2, join_prob=0.5)
    assert a.examples(3) == b.examples(3) and a.examples(3) != a.examples(4)
    punct = {v.index[p] for p in PUNCTUATION}
    joined = [(s, t) for s, t in a.examples(0) if len(s) > 7]
    assert joined
    for s, t in a.examples(0):
        assert len(s) == len(t) <= MAX_CHARS
        assert [x in punct for x in s] == [x in punct for x in t]


def test_couplet_adapter_handles_odd_input(tiny_rnn_checkpoint):
    from attention_atlas.models.adapters.couplet_rnn import from_checkpoint

    adapter = from_checkpoint(tiny_rnn_checkpoint, "cpu")
    for text in ["两个黄鹂鸣翠柳", "abc 123", "😀两个🎉", "  两 个\t黄鹂 ", "Hello, 世界!", "𠀀", "风" * 40]:
        result = adapter.run(text)
        rec = result.records["cross"]
        n = min(len("".join(text.split())), MAX_CHARS)
        assert rec.weights.shape == (1, 1, n, n)
        assert len(result.output) == n
        np.testing.assert_allclose(rec.weights.sum(-1), 1, atol=1e-5)
    assert any("vocabulary" in m for m in adapter.run("abc").notices)
    assert any("first 32" in m for m in adapter.run("风" * 40).notices)
    forced = adapter.run("两个黄鹂鸣翠柳", target="一行白鹭")
    assert forced.output is None and forced.records["cross"].query_tokens == list("一行白鹭")
    assert any("equally long" in m for m in forced.notices)
    with pytest.raises(ValueError, match="empty"):
        adapter.run("   ")
    results = adapter.run_batch([("两个黄鹂鸣翠柳", None), ("", None), ("白日", "黄河")])
    assert isinstance(results[1], ValueError) and results[2].output is None
    assert "top_candidates" in adapter.run("白日依山尽", beam=2).records["cross"].meta


def test_linear_keys_and_partial_teacher_forcing_keep_the_invariants(tmp_path):
    v = tiny_vocab()
    torch.manual_seed(0)
    cfg = Seq2SeqConfig(
        src_vocab_size=len(v),
        tgt_vocab_size=len(v),
        embed_size=12,
        hidden_size=16,
        attention="scaled_dot",
        share_embeddings=True,
        key_activation="linear",
    )
    model = Seq2Seq(cfg).eval()
    batch = make_batch([v.encode(u) for u, _ in PAIRS], [v.encode(low) for _, low in PAIRS], bos_id=v.bos_id)
    logits, w = model(batch.src, batch.src_lens, batch.tgt_in, teacher_forcing=0.5)
    assert logits.shape == (len(PAIRS), 7, len(v))
    torch.testing.assert_close(w.sum(-1), torch.ones(len(PAIRS), 7))
    for i, n in enumerate(batch.src_lens.tolist()):
        assert torch.all(w[i, :, n:] == 0)
    bundle = Seq2SeqBundle(model, v, v, "couplet", "char")
    loaded = Seq2SeqBundle.load(bundle.save(tmp_path / "lin.safetensors"))
    assert loaded.model.config.key_activation == "linear"
    again = loaded.model(batch.src, batch.src_lens, batch.tgt_in)[1]
    assert torch.equal(again, model(batch.src, batch.src_lens, batch.tgt_in)[1])
