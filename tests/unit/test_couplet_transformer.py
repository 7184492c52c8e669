"""The couplet Transformer on a tiny random model: architecture, decoding, training, the adapter."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from attention_atlas.models.nets.transformer import Transformer
from attention_atlas.models.storage.bundle import TransformerBundle
from attention_atlas.models.tasks.couplet import PUNCTUATION, CoupletBatches
from attention_atlas.models.tasks.couplet_heads import CoupletTransformer, layer_alignment
from attention_atlas.models.text.pairs import make_batch
from attention_atlas.models.text.search import beam_search, greedy
from attention_atlas.models.training.loop import TrainConfig, Trainer, loss_fn
from tests.support import COUPLET_PAIRS as PAIRS
from tests.support import TRANSFORMER_HEADS as HEADS
from tests.support import TRANSFORMER_LAYERS as LAYERS
from tests.support import UPPERS, tiny_transformer_couplet, tiny_transformer_model, tiny_vocab

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def tiny_adapter(tiny_transformer_checkpoint):
    from attention_atlas.models.adapters.couplet_transformer import from_checkpoint

    return from_checkpoint(tiny_transformer_checkpoint, "cpu")


def padded_batch():
    """Lines of 7, 5 and 2 characters in one batch: sources and targets padded."""
    v = tiny_vocab()
    pairs = [PAIRS[0], PAIRS[2], ("白日", "黄河")]
    batch = make_batch([v.encode(u) for u, _ in pairs], [v.encode(low) for _, low in pairs], bos_id=v.bos_id)
    return batch, [len(u) for u, _ in pairs]


# -- the architecture ------------------------------------------------------------------------


def test_forward_returns_every_attention_rows_sum_to_one_and_padding_keys_get_zero():
    model = tiny_transformer_model()
    batch, lens = padded_batch()
    logits, att = model(batch.src, batch.src_lens, batch.tgt_in)
    b, n = len(lens), max(lens)
    assert logits.shape == (b, n, model.config.tgt_vocab_size)
    assert att["encoder_self"].shape == (b, LAYERS, HEADS, n, n)  # [batch, layers, heads, query, key]
    assert att["decoder_self"].shape == (b, LAYERS, HEADS, n, n)
    assert att["cross"].shape == (b, LAYERS, HEADS, n, n)
    for kind, w in att.items():
        torch.testing.assert_close(w.sum(-1), torch.ones(w.shape[:-1]), msg=kind)
    for i, s in enumerate(lens):
        assert torch.all(att["encoder_self"][i, ..., s:] == 0)  # exactly 0, not just small
        assert torch.all(att["cross"][i, ..., s:] == 0)


def test_decoder_self_attention_is_causal_exactly():
    batch, _ = padded_batch()
    _, att = tiny_transformer_model(seed=1)(batch.src, batch.src_lens, batch.tgt_in)
    w = att["decoder_self"]  # [batch, layers, heads, query, key]
    above = torch.ones(w.shape[-2:], dtype=torch.bool).triu(1)
    assert torch.all(w[..., above] == 0)
    assert torch.all(w[..., ~above] > 0)  # and every allowed key gets some weight


def test_a_line_gives_the_same_attention_alone_and_in_a_padded_batch():
    model = tiny_transformer_model(seed=2)
    batch, lens = padded_batch()
    _, together = model(batch.src, batch.src_lens, batch.tgt_in)
    i, n = 2, lens[2]
    _, alone = model(batch.src[i : i + 1, :n], batch.src_lens[i : i + 1], batch.tgt_in[i : i + 1, :n])
    for kind in together:
        torch.testing.assert_close(together[kind][i, ..., :n, :n], alone[kind][0], msg=kind)


def test_incremental_decoding_step_matches_the_full_forward_pass():
    """The search runs one position at a time; the records come from one full pass."""
    model = tiny_transformer_model(seed=4)
    batch, _ = padded_batch()
    logits, att = model(batch.src, batch.src_lens, batch.tgt_in)
    enc = model.encode(batch.src, batch.src_lens)
    state = enc.state
    for t in range(batch.tgt_in.shape[1]):
        step_logits, state, w = model.decoder.step(batch.tgt_in[:, t], state, enc)
        torch.testing.assert_close(step_logits, logits[:, t], atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(w, att["cross"][:, -1, :, t].mean(1), atol=1e-6, rtol=1e-5)
    assert state.shape == (LAYERS, len(batch.src), batch.tgt_in.shape[1], 16)  # [layers, batch, written, d]


def test_attention_is_returned_never_left_on_a_module():
    model = tiny_transformer_model()
    batch, _ = padded_batch()
    model(batch.src, batch.src_lens, batch.tgt_in)
    for name, module in model.named_modules():
        own = {k for k, v in vars(module).items() if torch.is_tensor(v)}
        assert not own, f"{name or 'model'} keeps tensors {own} outside its parameters and buffers"


# -- decoding and the couplet rule -----------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 5])
def test_beam_width_one_equals_greedy(seed):
    from attention_atlas.models.tasks.couplet import constraints_for
    from attention_atlas.models.text.pairs import pad

    cm = tiny_transformer_couplet(seed)
    a = cm.generate(UPPERS, beam=1)
    v = cm.vocab
    src, lens = pad([v.encode(u) for u in UPPERS])
    kw = {"bos_id": v.bos_id, "eos_id": v.eos_id, "constraints": constraints_for(UPPERS, v)}
    g = greedy(cm.model, src, lens, **kw)
    b = beam_search(cm.model, src, lens, beam=1, **kw)
    for x, y, z in zip(g, b, a, strict=True):
        assert x.tokens == y.tokens == z.tokens
        torch.testing.assert_close(x.weights, y.weights)
        assert x.score == pytest.approx(y.score, abs=1e-5)


@pytest.mark.parametrize("beam", [1, 3])
def test_generation_keeps_length_and_punctuation(beam):
    cm = tiny_transformer_couplet(seed=6)
    uppers = [list("两个黄鹂，鸣翠柳。"), list("白日！"), list("？海上生明月、")]
    for upper, d in zip(uppers, cm.generate(uppers, beam=beam), strict=True):
        lower = cm.text(d)
        assert len(lower) == len(upper)
        for a, b in zip(upper, lower, strict=True):
            assert (a in PUNCTUATION) == (b in PUNCTUATION)
            if a in PUNCTUATION:
                assert a == b
        n = len(upper)
        assert d.extra["cross"].shape == (LAYERS, HEADS, n, n)
        assert d.extra["decoder_self"].shape == (LAYERS, HEADS, n, n)
        assert d.extra["encoder_self"].shape == (LAYERS, HEADS, n, n)


def test_save_and_load_round_trip_gives_identical_attention(tmp_path):
    cm = tiny_transformer_couplet(seed=7)
    bundle = TransformerBundle(cm.model, cm.vocab, cm.vocab, "couplet", "char", {"model_id": "t"})
    bundle.save_dir(tmp_path / "b")
    loaded = TransformerBundle.load(tmp_path / "b")
    assert isinstance(loaded.model, Transformer) and loaded.model.config == cm.model.config
    assert json.loads((tmp_path / "b" / "config.json").read_text())["format"] == TransformerBundle.file_format
    again = CoupletTransformer(loaded.model, loaded.src_vocab, layer=1)
    for a, b in zip(cm.generate(UPPERS, beam=2), again.generate(UPPERS, beam=2), strict=True):
        assert a.tokens == b.tokens
        for kind in a.extra:
            assert torch.equal(a.extra[kind], b.extra[kind]), kind


def test_bundles_refuse_each_others_files(tmp_path):
    from attention_atlas.models.storage.bundle import Seq2SeqBundle
    from attention_atlas.models.storage.checkpoint import CheckpointError

    cm = tiny_transformer_couplet()
    path = TransformerBundle(cm.model, cm.vocab, cm.vocab, "couplet", "char").save(tmp_path / "t.safetensors")
    with pytest.raises(CheckpointError, match="format"):
        Seq2SeqBundle.load(path)


def test_layer_alignment_scores_a_diagonal_layer_one_and_a_flat_one_by_argmax():
    from attention_atlas.models.text.search import Decoded

    eye = torch.eye(4).expand(HEADS, 4, 4)  # [heads, query, key]
    first = torch.zeros(HEADS, 4, 4)
    first[..., 0] = 1.0  # every row looks at the first character
    d = Decoded([0] * 4, eye[0], 0.0, extra={"cross": torch.stack([first, eye])})  # [layers, heads, q, k]
    assert layer_alignment([d]) == [0.25, 1.0]


# -- training --------------------------------------------------------------------------------


def test_training_with_warmup_resumes_to_exactly_the_same_weights(tmp_path):
    v = tiny_vocab()
    batches = CoupletBatches(PAIRS * 4, v, batch_size=4, seed=1, join_prob=0.3)

    def run(run_dir, steps):
        model = tiny_transformer_model(seed=9, dropout=0.1).train()
        cfg = TrainConfig(max_steps=steps, save_every=3, eval_every=3, seed=1, warmup_steps=4)
        Trainer(
            model, cfg, run_dir, torch.device("cpu"), batches, loss_fn, progress=False, log=lambda _: None
        ).fit()
        return model

    straight = run(tmp_path / "a", 8)
    run(tmp_path / "b", 5)  # cut off after a save at step 3 and two more steps
    resumed = run(tmp_path / "b", 8)
    for (name, a), (_, b) in zip(straight.state_dict().items(), resumed.state_dict().items(), strict=True):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5, msg=name)


def test_a_few_steps_of_training_lower_the_loss():
    v = tiny_vocab()
    batch = make_batch([v.encode(u) for u, _ in PAIRS], [v.encode(low) for _, low in PAIRS], bos_id=v.bos_id)
    model = tiny_transformer_model(seed=2).train()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    first = None
    for _ in range(30):
        loss, _ = loss_fn(model, batch)
        first = first if first is not None else loss.item()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.5 * first


# -- the adapter -----------------------------------------------------------------------------


def test_adapter_gives_three_kinds_of_records_with_their_tokens(tiny_adapter):
    result = tiny_adapter.run("两个黄鹂鸣翠柳")
    recs = result.records
    assert set(recs) == {"encoder_self", "decoder_self", "cross"}
    assert {k: r.kind for k, r in recs.items()} == {k: k for k in recs}
    lower = list(result.output)
    assert len(lower) == 7
    assert recs["encoder_self"].weights.shape == (LAYERS, HEADS, 7, 7)
    assert recs["encoder_self"].query_tokens == recs["encoder_self"].key_tokens == list("两个黄鹂鸣翠柳")
    assert recs["decoder_self"].query_tokens == lower
    assert recs["decoder_self"].key_tokens == ["<bos>", *lower[:-1]]
    assert recs["cross"].query_tokens == lower and recs["cross"].key_tokens == list("两个黄鹂鸣翠柳")
    for rec in recs.values():
        np.testing.assert_allclose(rec.weights.sum(-1), 1, atol=1e-5)
    assert np.all(np.triu(recs["decoder_self"].weights, 1) == 0)
    meta = recs["cross"].meta
    assert meta["best_layer"] == 1 and len(meta["alignment_layers"]) == LAYERS
    assert meta["alignment"] == meta["alignment_layers"][1]
    assert len(meta["top_candidates"]) == 7


def test_adapter_force_decodes_and_handles_odd_input(tiny_adapter):
    forced = tiny_adapter.run("两个黄鹂鸣翠柳", target="一行白鹭")
    assert forced.output is None
    assert forced.records["cross"].weights.shape == (LAYERS, HEADS, 4, 7)
    assert forced.records["decoder_self"].weights.shape == (LAYERS, HEADS, 4, 4)
    assert any("equally long" in m for m in forced.notices)
    for text in ["abc 123", "😀两个🎉", "Hello, 世界!", "风" * 40]:
        result = tiny_adapter.run(text, beam=2)
        n = len(result.output)
        assert result.records["cross"].weights.shape == (LAYERS, HEADS, n, n)
    assert any("vocabulary" in m for m in tiny_adapter.run("abc").notices)
    with pytest.raises(ValueError, match="empty"):
        tiny_adapter.run("  ")
    results = tiny_adapter.run_batch([("白日依山尽", None), ("", None), ("白日", "黄河")])
    assert isinstance(results[1], ValueError) and results[2].output is None


def test_adapter_export_round_trips(tiny_adapter, tmp_path):
    from attention_atlas.models.adapters.couplet_transformer import from_checkpoint

    path = tiny_adapter.export(tmp_path / "exported.safetensors")
    again = from_checkpoint(path, "cpu")
    a, b = tiny_adapter.run("海上生明月", beam=2), again.run("海上生明月", beam=2)
    assert a.output == b.output
    for kind in a.records:
        np.testing.assert_array_equal(a.records[kind].weights, b.records[kind].weights)
