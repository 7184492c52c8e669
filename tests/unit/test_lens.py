"""The logit lens (issue 24) on tiny random causal LMs of eight architectures, built here from
transformers configs, and on SmolLM2 from its package.

Every row is checked against a readout computed here independently: transformers' own
``output_hidden_states`` (entry l + 1 is block l's output for every block but the last), the final
norm and head named per architecture below (not found as the lens finds them), the config's softcap
applied by hand, and for the last row the model's own logits. Nothing is mocked."""

import numpy as np
import pytest
import torch

from attention_atlas.models.adapters.hf import HFAdapter, InputError
from attention_atlas.models.analysis import lens as ln

CPU = torch.device("cpu")
SIZES = dict(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=3, num_attention_heads=2)
GQA = dict(SIZES, num_key_value_heads=1, max_position_embeddings=64, initializer_range=0.5)

# architecture -> (config class, its options, the final norm's path, the head's path)
ARCHS = {
    "llama": ("LlamaConfig", GQA, "model.norm", "lm_head"),
    "mistral": ("MistralConfig", GQA, "model.norm", "lm_head"),
    "qwen2": ("Qwen2Config", GQA, "model.norm", "lm_head"),
    "gemma2": ("Gemma2Config", dict(GQA, head_dim=8, final_logit_softcapping=2.0), "model.norm", "lm_head"),
    "gemma3": (
        "Gemma3TextConfig",
        dict(GQA, head_dim=8, final_logit_softcapping=2.0),
        "model.norm",
        "lm_head",
    ),
    "phi3": (
        "Phi3Config",
        dict(GQA, pad_token_id=0, bos_token_id=1, eos_token_id=2),
        "model.norm",
        "lm_head",
    ),
    "olmo2": ("Olmo2Config", dict(GQA, pad_token_id=0), "model.norm", "lm_head"),
    "gpt_neox": ("GPTNeoXConfig", dict(GQA, num_key_value_heads=2), "gpt_neox.final_layer_norm", "lm_head"),
    "gpt2": (
        "GPT2Config",
        dict(vocab_size=64, n_embd=16, n_layer=3, n_head=2, n_positions=64, initializer_range=0.5),
        "transformer.ln_f",
        "lm_head",
    ),
}
IDS = torch.tensor([[5, 17, 3, 40, 22, 9, 61, 12, 30, 7, 44]])


def build(arch: str) -> torch.nn.Module:
    import transformers
    from transformers import AutoModelForCausalLM

    name, options, _, _ = ARCHS[arch]
    config = getattr(transformers, name)(**options)
    torch.manual_seed(0)
    return AutoModelForCausalLM.from_config(config, attn_implementation="eager").eval()


@pytest.fixture(scope="module", params=list(ARCHS))
def arch(request):
    return request.param, build(request.param)


def expected_logits(arch: str, model) -> torch.Tensor:
    """``[layers + 1, positions, vocab]``: block 0's input, then each block's output, read through the
    norm and head named in ARCHS with the config's softcap; the last row is the model's own logits."""
    _, _, norm_path, head_path = ARCHS[arch]
    norm, head = model.get_submodule(norm_path), model.get_submodule(head_path)
    cap = getattr(model.config, "final_logit_softcapping", None)
    with torch.no_grad():
        out = model(input_ids=IDS, output_hidden_states=True)
        rows = []
        for h in out.hidden_states[:-1]:
            x = head(norm(h[0])).float()
            rows.append(torch.tanh(x / cap) * cap if cap else x)
        rows.append(out.logits[0].float())
    return torch.stack(rows)


def test_every_layer_is_the_models_own_norm_and_head(arch):
    name, model = arch
    logits = expected_logits(name, model)
    probs = torch.softmax(logits[1:], -1).numpy()  # [layers, positions, vocab]
    grid = ln.top_tokens(ln.residuals(model, IDS), top=64)  # the whole vocabulary, ranked
    assert grid.top_ids.shape == (3, IDS.shape[1], 64)
    got = np.take_along_axis(probs, grid.top_ids, -1)
    assert np.allclose(grid.top_probs, got, atol=1e-5)  # each id carries its own probability
    assert np.allclose(grid.top_probs, -np.sort(-probs, -1), atol=1e-5)  # and they are the top ones, in order
    assert (np.diff(grid.top_probs, axis=-1) <= 0).all()


def test_the_last_row_is_the_models_next_token_distribution(arch):
    _, model = arch
    with torch.no_grad():
        own = torch.softmax(model(input_ids=IDS).logits[0].float(), -1)
    grid = ln.top_tokens(ln.residuals(model, IDS), top=5)
    assert np.allclose(grid.top_probs[-1], own.topk(5, -1).values.numpy(), atol=1e-5)
    assert (grid.top_ids[-1] == own.topk(5, -1).indices.numpy()).all()


def test_the_readout_is_found_in_the_model(arch):
    name, model = arch
    found = ln.readout(model)
    _, _, norm_path, head_path = ARCHS[name]
    assert found.norm is model.get_submodule(norm_path)
    assert found.head is model.get_submodule(head_path)
    assert found.softcap == getattr(model.config, "final_logit_softcapping", None)


def test_a_followed_token_and_what_each_block_changed(arch):
    name, model = arch
    logits = expected_logits(name, model)
    probs = torch.softmax(logits[1:], -1)
    token = 17
    grid = ln.top_tokens(ln.residuals(model, IDS), top=4, token=token, changes=True)
    assert np.allclose(grid.token_probs, probs[..., token].numpy(), atol=1e-5)
    ranks = (probs > probs[..., token : token + 1]).sum(-1).numpy()
    assert (grid.token_ranks == ranks).all()
    delta = logits[1:] - logits[:-1]
    assert np.allclose(grid.promoted_by, delta.topk(4, -1).values.numpy(), atol=1e-4)
    assert np.allclose(grid.suppressed_by, delta.topk(4, -1, largest=False).values.numpy(), atol=1e-4)
    got = np.take_along_axis(delta.numpy(), grid.promoted_ids, -1)
    assert np.allclose(got, grid.promoted_by, atol=1e-4)


def test_chunks_and_a_window_of_positions_change_nothing():
    model = build("gemma2")
    stream = ln.residuals(model, IDS)
    whole = ln.top_tokens(stream, top=6, token=3, changes=True)
    for chunk in (1, 3, 4):
        part = ln.top_tokens(stream, top=6, token=3, changes=True, chunk=chunk)
        for field in ("top_ids", "token_ranks", "promoted_ids", "suppressed_ids"):
            assert (getattr(part, field) == getattr(whole, field)).all()
        for field in ("top_probs", "token_probs", "promoted_by", "suppressed_by"):
            assert np.allclose(getattr(part, field), getattr(whole, field), atol=1e-6)
    last = ln.top_tokens(stream, top=6, positions=range(7, 11), chunk=3)
    assert list(last.positions) == [7, 8, 9, 10]
    assert np.allclose(last.top_probs, whole.top_probs[:, 7:], atol=1e-6)


def test_a_model_whose_logits_are_scaled_after_the_head_is_refused():
    """Cohere multiplies its logits by ``logit_scale`` after the head: the check sees it."""
    from transformers import AutoModelForCausalLM, CohereConfig

    model = AutoModelForCausalLM.from_config(CohereConfig(**GQA, logit_scale=0.5, pad_token_id=0)).eval()
    with pytest.raises(ln.LensError, match="not its output head applied to its final norm") as err:
        ln.residuals(model, IDS, "tiny-cohere")
    assert "\n" not in str(err.value)


def test_a_model_without_an_output_head_is_refused():
    from transformers import LlamaConfig, LlamaModel

    with pytest.raises(ln.LensError, match="has no output head") as err:
        ln.residuals(LlamaModel(LlamaConfig(**GQA)).eval(), IDS, "tiny-llama-base")
    assert "\n" not in str(err.value)


@pytest.fixture(scope="module")
def adapters(tiny_hf_folders):
    return {f: HFAdapter(f"tiny-{f}", tiny_hf_folders[f], CPU) for f in ("encoder", "causal")}


def test_bad_requests_are_one_line(adapters):
    gpt2 = adapters["causal"]
    cases = [
        (lambda: ln.lens(adapters["encoder"], "the cat"), ln.LensError, "not a causal language model"),
        (lambda: ln.lens(gpt2, "   "), InputError, "the text is empty"),
        (lambda: ln.lens(gpt2, "the cat", top=50_000), ln.LensError, "keep between 1 and 100"),
        (lambda: ln.lens(gpt2, "the cat", top=0), ln.LensError, "keep between 1 and 100"),
        (lambda: ln.lens(gpt2, "the cat", token=10**6), ln.LensError, "not in the vocabulary"),
    ]
    for call, error, words in cases:
        with pytest.raises(error, match=words) as err:
            call()
        assert "\n" not in str(err.value)


def test_text_through_the_adapter(adapters):
    gpt2 = adapters["causal"]
    grid, tokens = ln.lens(gpt2, "the cat sat", top=3)
    ids = gpt2.encode("the cat sat").ids
    with torch.no_grad():
        own = torch.softmax(gpt2.model(input_ids=ids).logits[0], -1)
    assert grid.top_ids.shape == (gpt2.n_layers, len(tokens), 3)
    assert np.allclose(grid.top_probs[-1], own.topk(3, -1).values.numpy(), atol=1e-5)


@pytest.mark.slow
def test_smollm2_every_layer_and_its_own_output():
    from attention_atlas.models.registry import load

    adapter = load("smollm2", CPU)
    model, text = adapter.model, "The cat sat on the mat because it was tired."
    grid, tokens = ln.lens(adapter, text, top=10, chunk=5)
    ids = adapter.encode(text).ids
    with torch.no_grad():
        out = model(input_ids=ids, output_hidden_states=True)
        rows = [model.lm_head(model.model.norm(h[0])) for h in out.hidden_states[1:-1]] + [out.logits[0]]
    probs = torch.softmax(torch.stack(rows).float(), -1)
    assert grid.top_ids.shape == (30, len(tokens), 10)
    top = probs.topk(10, -1)
    assert np.allclose(grid.top_probs, top.values.numpy(), atol=1e-5)
    assert (grid.top_ids[-1] == top.indices[-1].numpy()).all()
    assert ln.readout(model).norm is model.model.norm


def test_another_sessions_forward_meanwhile_is_not_recorded():
    """The model is shared: a forward another thread runs while ours is inside block 0 passes the
    same hooks, and must not land in our residual stream."""
    import threading

    model = build("llama")
    alone = ln.top_tokens(ln.residuals(model, IDS), top=5)
    fired = []

    def meanwhile(module, args, out):
        if not fired:
            fired.append(True)
            other = threading.Thread(target=lambda: model(input_ids=IDS[:, :4]))
            other.start()
            other.join()

    hook = model.model.layers[0].register_forward_hook(meanwhile)
    try:
        shared = ln.top_tokens(ln.residuals(model, IDS), top=5)
    finally:
        hook.remove()
    assert fired and (shared.top_ids == alone.top_ids).all()
    assert np.allclose(shared.top_probs, alone.top_probs, atol=1e-6)


def test_vocabulary_blocks_change_nothing(arch):
    """Blocks of the vocabulary, uneven and smaller than top, give the one-block grid: the same ids,
    ranks and changes, the same probabilities."""
    _, model = arch
    stream = ln.residuals(model, IDS)
    whole = ln.top_tokens(stream, top=6, token=40, changes=True, block=64)
    for block in (7, 16):
        part = ln.top_tokens(stream, top=6, token=40, changes=True, block=block)
        for field in ("top_ids", "token_ranks", "promoted_ids", "suppressed_ids"):
            assert (getattr(part, field) == getattr(whole, field)).all()
        for field in ("top_probs", "token_probs", "promoted_by", "suppressed_by"):
            assert np.allclose(getattr(part, field), getattr(whole, field), atol=1e-6)
