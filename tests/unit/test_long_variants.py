"""Long context for every kind of attention (issue 26): tiny random causal LMs of the architectures
whose attention is more than softmax(q·k / √d) over every earlier key, built here from transformers
configs, saved to folders and opened as the page opens a model. At a length past each window, the
weights recomputed from the capture (``viz_core.blockwise``: ``head_weights``, ``reduce_head``,
``window``, ``query_row``) equal transformers' own eager ``output_attentions`` to 1e-5.

The variants are found from the models (config and attention module), never named here: each test
states only what the capture must have found, and checks the weights against eager attention."""

import dataclasses
import sys

import numpy as np
import pytest
import torch

from attention_atlas.models.adapters import capture as cp
from attention_atlas.models.adapters.hf import HFAdapter
from attention_atlas.viz_core import blockwise as bw
from harness.tiny_variants import ARCHS, WINDOW, tiny_variant
from tests.support import hf_folder

CPU = torch.device("cpu")
TEXT = " ".join(["the cat sat on the mat because it was tired and a dog ran after the ball"] * 3)


def build(arch: str, folder) -> HFAdapter:
    return HFAdapter(f"tiny-{arch}", hf_folder(tiny_variant(arch), folder), CPU)


@pytest.fixture(scope="module", params=list(ARCHS))
def arch(request, tmp_path_factory):
    return request.param, build(request.param, tmp_path_factory.mktemp(request.param))


def eager(adapter: HFAdapter, cap: bw.QKCapture, text: str = TEXT) -> np.ndarray:
    """transformers' own eager weights ``[layers, heads, query, key]`` for the capture's tokens."""
    ids = cp.encode_long(adapter, text).ids
    with torch.no_grad():
        out = adapter.model(input_ids=ids, output_attentions=True)
    return torch.cat([a.float() for a in out.attentions]).numpy()


@pytest.mark.parametrize("rows", [cp.MLP_ROWS, 16])
def test_each_variant_equals_eager_attention_past_its_window(arch, rows, monkeypatch):
    """Also with the twin's feed-forward blocks run 16 tokens at a time (``cp.MLP_ROWS``, 4,096
    for real inputs), as a long capture runs them."""
    name, adapter = arch
    monkeypatch.setattr(cp, "MLP_ROWS", rows)
    cap = cp.capture(adapter, TEXT)
    blocks = [m for n, m in cp._twin(adapter.model, CPU).named_modules() if n.endswith(".mlp")]
    assert blocks and all(m.forward.__name__ == "in_rows" for m in blocks)
    assert cap.n_tokens > 5 * WINDOW  # well past every window
    assert [cap.variant(layer).window for layer in range(cap.n_layers)] == ARCHS[name][2]
    want = eager(adapter, cap)
    for layer in range(cap.n_layers):
        for head in range(cap.n_heads):
            got = bw.head_weights(cap, layer, head, block=7)
            assert np.abs(got - want[layer, head]).max() < 1e-5, (name, layer, head)


def test_the_rotary_embedding_a_head_at_a_time_is_the_same_to_the_bit(arch, monkeypatch):
    """Once a twin exists, its modelling module's ``apply_rotary_pos_emb`` runs a head at a time past
    ``cp.MLP_ROWS`` tokens: the model's own eager forward gives the same weights and logits with it
    as whole (16 tokens: every call of this text goes a head at a time)."""
    name, adapter = arch
    cp._twin(adapter.model, CPU)
    ids = cp.encode_long(adapter, TEXT).ids

    def forward():
        with torch.no_grad():
            out = adapter.model(input_ids=ids, output_attentions=True)
        return torch.cat([a.float() for a in out.attentions]), out.logits

    whole = forward()
    monkeypatch.setattr(cp, "MLP_ROWS", 16)
    calls, by_head = [], cp._by_head
    monkeypatch.setattr(cp, "_by_head", lambda *a: calls.append(a[1].shape) or by_head(*a))
    assert all(torch.equal(a, b) for a, b in zip(forward(), whole, strict=True)), name
    rotary = hasattr(sys.modules[type(adapter.model).__module__], "apply_rotary_pos_emb")
    assert len(calls) == (adapter.model.config.num_hidden_layers if rotary else 0), name


def test_the_page_reductions_follow_the_variant(arch):
    _, adapter = arch
    cap = cp.capture(adapter, TEXT)
    want = eager(adapter, cap)
    layer, head, n = 0, 1, cap.n_tokens
    red = bw.reduce_head(cap, layer, head, cells=n // 3, how="max", block=5)
    for i, (a, b) in enumerate(red.ranges(0)):
        for j, (c, d) in enumerate(red.ranges(1)):
            assert red.values[i, j] == pytest.approx(want[layer, head, a : b + 1, c : d + 1].max(), abs=1e-5)
    assert np.abs(bw.window(cap, layer, head, (20, n), (3, 30)) - want[layer, head, 20:, 3:30]).max() < 1e-5
    assert np.abs(bw.query_row(cap, layer, head, n - 1) - want[layer, head, -1]).max() < 1e-5


def test_scaling_softcap_and_sinks_are_found_from_the_model(arch):
    name, adapter = arch
    cap = cp.capture(adapter, TEXT)
    first = cap.variant(0)
    head_dim = cap.queries[0].shape[-1]
    if name.startswith("gemma"):  # query_pre_attn_scalar: 256, not the head's 8
        assert cap.scaling[0] == pytest.approx(256**-0.5)
    else:
        assert cap.scaling[0] == pytest.approx(head_dim**-0.5)
    assert first.softcap == (1.5 if name == "gemma2" else None)
    assert cap.has_sinks == (name == "gpt_oss")
    if cap.has_sinks:
        attn = adapter.model.model.layers[0].self_attn
        assert np.array_equal(first.sinks, attn.sinks.detach().numpy())
        want = eager(adapter, cap)
        mass = bw.sink_mass(cap, 0, 2)
        assert np.abs(mass - (1 - want[0, 2].sum(-1))).max() < 1e-5
        assert mass.max() > 0.1  # the sink takes mass that the keys do not get


def test_a_mask_that_the_window_does_not_explain_is_refused(tmp_path, monkeypatch):
    adapter = build("mistral", tmp_path)
    monkeypatch.setattr(cp, "_window_of", lambda *a: False)  # not a plain window: the whole mask is made
    monkeypatch.setattr(cp, "_mask_matches", lambda *a: False)  # and it does not hold
    with pytest.raises(
        cp.CaptureError, match="attention mask that q·k, the causal order and its window do not hold"
    ):
        cp.capture(adapter, TEXT)


def test_a_plain_window_is_never_made_into_an_n_by_n_mask(tmp_path, monkeypatch):
    """A sliding window's mask is checked from transformers' own mask function a block of rows at a
    time and handed on as a marker: no ``[n, n]`` mask (1 GB at 32,768 tokens) is made for it."""
    import transformers.masking_utils as mu

    made = []
    real = mu.sdpa_mask
    monkeypatch.setattr(mu, "sdpa_mask", lambda **kw: made.append(kw.get("local_size")) or real(**kw))
    adapter = build("mistral", tmp_path)
    cap = cp.capture(adapter, TEXT)
    assert WINDOW not in made and cap.variant(0).window == WINDOW
    n = cap.n_tokens
    assert cp._window_of(mu.sliding_window_causal_mask_function(WINDOW), n, WINDOW)
    assert not cp._window_of(mu.sliding_window_causal_mask_function(WINDOW), n, WINDOW + 1)
    assert not cp._window_of(mu.chunked_causal_mask_function(WINDOW, torch.zeros(1, dtype=int)), n, WINDOW)
    padded = torch.ones(1, n, dtype=torch.bool)
    padded[0, 0] = False  # padding: the whole mask, as SDPA's
    window = mu.sliding_window_causal_mask_function(WINDOW)
    got = cp._mask(
        batch_size=1, q_length=n, kv_length=n, mask_function=window, attention_mask=padded, local_size=WINDOW
    )
    assert isinstance(got, torch.Tensor) and tuple(got.shape[-2:]) == (n, n)
    plain = cp._mask(batch_size=1, q_length=n, kv_length=n, mask_function=window, local_size=WINDOW)
    assert plain == cp.Windowed(WINDOW)


# -- sinks shown honestly (item 2): the record's rows sum to 1 − the sink's mass ------------------------


@pytest.fixture(scope="module")
def gpt_oss(tmp_path_factory):
    return build("gpt_oss", tmp_path_factory.mktemp("gpt_oss_record"))


def test_a_sink_model_gives_a_record_whose_sink_mass_is_the_sink_logits(gpt_oss):
    result = gpt_oss.run(TEXT)
    record = result.records["self"]
    cap = cp.capture(gpt_oss, TEXT)
    assert record.weights.shape[2] == cap.n_tokens
    for layer in range(cap.n_layers):
        for head in range(cap.n_heads):  # the capture's sink mass comes from the sink logits and q·k
            assert np.abs(record.sink[layer, head] - bw.sink_mass(cap, layer, head)).max() < 1e-5
    assert record.sink.max() > 0.1
    assert any("sink logits" in line and "sum to 1 minus" in line for line in result.notices)


def test_derived_records_keep_the_sink_share(gpt_oss):
    from attention_atlas.viz_core.derive import hide_special, merge_words

    record = gpt_oss.run(TEXT).records["self"]
    hidden = hide_special(record)
    assert hidden.meta.get("special_hidden")
    kept = ~np.asarray(record.meta["query_special"])
    assert np.array_equal(hidden.sink, record.sink[..., kept])
    record = gpt_oss.run(TEXT + " unbelievable tokenization").records["self"]
    merged = merge_words(record)
    assert merged.weights.shape[2] < record.weights.shape[2]  # words of several pieces were merged
    assert merged.sink.shape == merged.weights.shape[:3]
    sums = merged.weights.sum(-1) + merged.sink
    assert np.abs(sums - 1).max() < 1e-4


def test_the_record_rule_names_the_sink_and_holds_plain_rows_to_1():
    from attention_atlas.viz_core.record import AttentionRecord, RecordError

    weights = np.full((1, 1, 2, 2), 0.25)
    toks = ["a", "b"]
    AttentionRecord(weights, toks, toks, "self", "m", sink=np.full((1, 1, 2), 0.5))
    with pytest.raises(RecordError, match=r"row \(layer 0, head 0, query 0\) sums to 0.500000, not 1$"):
        AttentionRecord(weights, toks, toks, "self", "m")
    with pytest.raises(RecordError, match=r"not 1 − its sink's 0\.400000"):
        AttentionRecord(weights, toks, toks, "self", "m", sink=np.full((1, 1, 2), 0.4))
    with pytest.raises(RecordError, match="between 0 and 1"):
        AttentionRecord(np.zeros((1, 1, 2, 2)), toks, toks, "self", "m", sink=np.full((1, 1, 2), 1.5))


def sdpa_falcon(folder, ids: torch.Tensor) -> tuple[torch.Tensor, np.ndarray]:
    """Falcon as SDPA runs it: the folder loaded with SDPA, its logits for ``ids``, and each layer's
    weights ``[layers, heads, query, key]`` computed directly from SDPA's formula, softmax(q·k/√d +
    mask), in float64 from the queries, keys and mask (it holds ALiBi / √d) its modules are handed."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(folder, attn_implementation="sdpa", local_files_only=True)
    weights = []

    def weigh(module, args, kwargs):
        q, k, _ = module._split_heads(module.query_key_value(args[0]))
        q, k = q.transpose(1, 2).double(), k.transpose(1, 2).double()
        s = q @ k.transpose(-1, -2) / module.head_dim**0.5 + kwargs["attention_mask"].double()
        weights.append(torch.softmax(s, -1)[0])

    for module in model.modules():
        if type(module).__name__ == "FalconAttention":
            module.register_forward_pre_hook(weigh, with_kwargs=True)
    with torch.no_grad():
        logits = model.eval()(input_ids=ids).logits
    return logits, torch.stack(weights).numpy()


def test_falcon_with_alibi_shows_the_attention_sdpa_computes_at_any_length(tmp_path):
    """Falcon's eager path (transformers 5) adds ALiBi twice: from its argument and again in the mask
    its model makes for SDPA. The adapter and the long capture show what SDPA (and Falcon's own
    code) compute, at 1e-5 against that formula, past 512 tokens, where ALiBi in bfloat16 is not a
    line; the model's logits are SDPA's too, while plain eager's weights are not."""
    from transformers import AutoModelForCausalLM, FalconConfig, FalconForCausalLM

    config = FalconConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, alibi=True)
    torch.manual_seed(0)
    folder = hf_folder(FalconForCausalLM(config), tmp_path)
    adapter = HFAdapter("tiny-falcon", folder, CPU)
    adapter.tokenizer.model_max_length = 2048  # minilm's tokenizer says 512; Falcon's context is 2,048
    assert cp.supports(adapter) is None
    text = " ".join([TEXT] * 12)
    ids = cp.encode_long(adapter, text).ids
    assert ids.shape[1] > 512
    logits, want = sdpa_falcon(folder, ids)
    with torch.no_grad():
        assert torch.allclose(adapter.model(input_ids=ids).logits, logits, atol=1e-5, rtol=0)
    cap = cp.capture(adapter, text)
    assert cap.n_tokens == ids.shape[1] and cap.variant(0).describe() == "ALiBi"
    for layer in range(cap.n_layers):
        for head in range(cap.n_heads):
            assert np.abs(bw.head_weights(cap, layer, head, block=64) - want[layer, head]).max() < 1e-5
    short = adapter.run(TEXT).records["self"].weights
    n = short.shape[-1]
    assert np.abs(short - sdpa_falcon(folder, ids[:, :n])[1]).max() < 1e-5
    plain = AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager", local_files_only=True)
    with torch.no_grad():
        twice = torch.cat(plain.eval()(input_ids=ids[:, :n], output_attentions=True).attentions).numpy()
    assert np.abs(twice - short).max() > 1e-2  # what the fix changes
    mine = cp.capture(HFAdapter.loaded(plain, adapter.tokenizer, "mine"), text)  # a notebook's own model
    assert np.abs(bw.head_weights(mine, 1, 3) - want[1, 3]).max() < 1e-5
    assert not any(m._forward_pre_hooks for m in plain.modules())  # the twin is hooked, not the caller's model


def test_bloom_alibi_added_in_its_attention_modules_is_captured_and_equals_eager(tmp_path):
    """BLOOM adds its ALiBi tensor to q·k in its own attention modules (not through transformers'
    attention interface): the capture reads their queries, keys and ALiBi, and the weights from
    them equal BLOOM's own eager attention on every layer and head at a few hundred tokens."""
    adapter = build("bloom", tmp_path)
    assert cp.supports(adapter) is None
    text = " ".join([TEXT] * 5)
    cap = cp.capture(adapter, text)
    assert cap.n_tokens > 200 and cap.causal
    assert cap.keys[0].shape == cap.queries[0].shape == (8, cap.n_tokens, 8)  # no grouped key heads
    assert cap.scaling[0] == pytest.approx(8**-0.5)
    slopes = 2.0 ** -np.arange(1, 9, dtype=np.float32)
    for layer in range(cap.n_layers):  # BLOOM's slopes for 8 heads: 2^-1 … 2^-8, times the key position
        assert np.array_equal(cap.variant(layer).alibi, slopes[:, None] * np.arange(cap.n_tokens, dtype=np.float32))
        assert cap.variant(layer).describe() == "ALiBi"
    want = eager(adapter, cap, text)
    for layer in range(cap.n_layers):
        for head in range(cap.n_heads):
            got = bw.head_weights(cap, layer, head, block=7)
            assert np.abs(got - want[layer, head]).max() < 1e-5, (layer, head)
    plain = dataclasses.replace(cap, variants=None)  # the ALiBi carries BLOOM's position bias
    assert np.abs(bw.head_weights(plain, 0, 0) - want[0, 0]).max() > 1e-2
    assert not adapter.model.transformer.h[0].self_attention._forward_pre_hooks  # hooks on the twin only


def test_mapped_queries_and_keys_equal_those_in_memory_and_leave_no_file(arch, tmp_path, monkeypatch):
    """Issue 26: a long capture's queries and keys live in unnamed files mapped into memory (not
    the process's own memory); the weights from them equal eager attention as before, the arrays
    are read-only, and the cache folder holds no file once the capture is gone."""
    name, adapter = arch
    monkeypatch.setenv("ATLAS_CACHE", str(tmp_path))
    held = cp.capture(adapter, TEXT, spill=False)
    cap = cp.capture(adapter, TEXT, spill=True)
    assert all(isinstance(a, np.memmap) for a in cap.queries + cap.keys) and cap.mapped and not held.mapped
    assert not cap.queries[0].flags.writeable
    for a, b in zip(held.queries + held.keys, cap.queries + cap.keys, strict=True):
        assert np.array_equal(a, b)
    want = eager(adapter, cap)
    layer = cap.n_layers - 1
    assert np.abs(bw.head_weights(cap, layer, 1, block=7) - want[layer, 1]).max() < 1e-5, name
    assert list((tmp_path / "captures").iterdir()) == []  # unnamed: nothing to clean up, ever


def test_a_cache_folder_that_cannot_take_files_keeps_them_in_memory(gpt_oss, tmp_path, monkeypatch):
    adapter = gpt_oss
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the cache folder should be")
    monkeypatch.setenv("ATLAS_CACHE", str(blocked))
    cap = cp.capture(adapter, TEXT, spill=True)
    assert not any(isinstance(a, np.memmap) for a in cap.queries + cap.keys)
    assert np.array_equal(cap.queries[0], cp.capture(adapter, TEXT, spill=False).queries[0])


def test_long_captures_spill_by_default_and_count_one_layer_of_memory(gpt_oss):
    adapter = gpt_oss
    n = cp.SPILL_FROM
    assert cp.spills(n) and not cp.spills(n - 1)
    layers = adapter.n_layers
    in_ram = cp.qk_bytes(adapter, n)
    assert cp.estimate_bytes(adapter, n) < cp.estimate_bytes(adapter, n - 1) + in_ram / layers * 1.01
