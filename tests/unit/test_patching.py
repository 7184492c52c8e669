"""Activation patching (issue 39) on tiny random causal LMs of seven architectures, built here from
transformers configs, against a direct, naive implementation written here: one full forward of the
model per patched run, each patch a plain hook on the module named per architecture below (the block,
its attention, its output projection, its feed-forward), the pattern patched in an attention function
written here from the queries, keys and values (checked to reproduce the model first). Nothing is
mocked: the module under test finds its modules, batches its runs and starts them mid-way itself."""

import copy

import numpy as np
import pytest
import torch

from attention_atlas.models.analysis import patching as pt

SIZES = dict(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=4)
GQA = dict(SIZES, num_key_value_heads=2, max_position_embeddings=64, initializer_range=0.5)
LLAMA = ("model.layers", "self_attn", "o_proj", "mlp")
# architecture -> (config class, options, (blocks, attention, output projection, feed-forward))
ARCHS = {
    "llama": ("LlamaConfig", GQA, LLAMA),
    "mistral": ("MistralConfig", GQA, LLAMA),
    "qwen2": ("Qwen2Config", GQA, LLAMA),
    "qwen3": ("Qwen3Config", dict(GQA, head_dim=4), LLAMA),
    "gemma": ("GemmaConfig", dict(GQA, head_dim=4), LLAMA),
    "gemma3": ("Gemma3TextConfig", dict(GQA, head_dim=4), LLAMA),
    "gpt_neox": (
        "GPTNeoXConfig",
        dict(GQA, num_key_value_heads=4),
        ("gpt_neox.layers", "attention", "dense", "mlp"),
    ),
    "gpt2": (
        "GPT2Config",
        dict(vocab_size=64, n_embd=16, n_layer=2, n_head=4, n_positions=64, initializer_range=0.5),
        ("transformer.h", "attn", "c_proj", "mlp"),
    ),
}
CLEAN = torch.tensor([[5, 17, 3, 40, 22, 9]])
CORRUPT = torch.tensor([[5, 17, 33, 40, 22, 9]])  # one token differs, at position 2
CORRUPT2 = torch.tensor([[5, 17, 33, 40, 12, 9]])  # two differ: 2 and 4


def build(name: str, options: dict) -> torch.nn.Module:
    import transformers
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    torch.manual_seed(0)
    config = getattr(transformers, name)(**options)
    return AutoModelForCausalLM.from_config(config, attn_implementation="eager").eval()


@pytest.fixture(scope="module", params=list(ARCHS))
def arch(request):
    name, options, paths = ARCHS[request.param]
    return paths, build(name, options)


def pair_for(model, clean, corrupt) -> tuple[int, int]:
    """The answer and wrong tokens whose logit difference the corruption moves most (a large
    denominator, so that float32 noise in a random model stays far below 1e-4 once normalised)."""
    with torch.no_grad():
        d = model(input_ids=clean).logits[0, -1] - model(input_ids=corrupt).logits[0, -1]
    return int(d.argmax()), int(d.argmin())


# -- the naive implementation -------------------------------------------------------------------------

NAIVE = "atlas_test_naive_patch"
_PATTERN: dict = {}  # id(attention module) -> (head, probabilities [n, n]) while a pattern patch is on


def _naive_attention(module, query, key, value, attention_mask, scaling=None, **kwargs):
    """Attention written out: softmax(q·kᵀ·scaling + mask) · v, key-value groups repeated, with the
    pattern of one head replaced where a test asks."""
    heads = query.shape[1]
    key = key.repeat_interleave(heads // key.shape[1], 1)
    value = value.repeat_interleave(heads // value.shape[1], 1)
    scaling = query.shape[-1] ** -0.5 if scaling is None else scaling
    w = query @ key.transpose(-1, -2) * scaling
    if attention_mask is not None:
        w = w + attention_mask[:, :, :, : key.shape[-2]]
    probs = torch.softmax(w.float(), -1).to(value.dtype)
    if id(module) in _PATTERN:
        head, kept = _PATTERN[id(module)]
        probs = probs.clone()
        probs[:, head] = kept
    return (probs @ value).transpose(1, 2).contiguous(), probs


def naive_model(model):
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, eager_mask

    AttentionInterface.register(NAIVE, _naive_attention)
    AttentionMaskInterface.register(NAIVE, eager_mask)
    twin = copy.deepcopy(model)
    twin.set_attn_implementation(NAIVE)
    with torch.no_grad():
        assert torch.allclose(twin(input_ids=CLEAN).logits, model(input_ids=CLEAN).logits, atol=1e-5)
    return twin


def _first(out):
    return out[0] if isinstance(out, tuple) else out


@torch.no_grad()
def capture(model, paths, ids) -> dict:
    """One run: each block's input, attention output, feed-forward output, output projection input and
    attention probabilities (layer by layer), and the logit difference's logits."""
    blocks, attn_path, proj_path, ffn_path = paths
    kept: dict = {}
    hooks = []
    for k, block in enumerate(model.get_submodule(blocks)):
        attn = block.get_submodule(attn_path)
        hooks += [
            block.register_forward_pre_hook(
                lambda m, a, kw, k=k: kept.__setitem__(("resid", k), (a[0] if a else kw["hidden_states"])[0]),
                with_kwargs=True,
            ),
            attn.register_forward_hook(lambda m, a, o, k=k: kept.__setitem__(("attn_out", k), _first(o)[0])),
            block.get_submodule(ffn_path).register_forward_hook(
                lambda m, a, o, k=k: kept.__setitem__(("mlp_out", k), _first(o)[0])
            ),
            attn.get_submodule(proj_path).register_forward_pre_hook(
                lambda m, a, k=k: kept.__setitem__(("heads", k), a[0][0])
            ),
        ]
    out = model(input_ids=ids, output_attentions=True)
    for h in hooks:
        h.remove()
    for k, a in enumerate(out.attentions):
        kept[("pattern", k)] = a[0]
    kept["logits"] = out.logits[0, -1]
    return kept


@torch.no_grad()
def naive(model, paths, clean, corrupt, answer, wrong, direction="denoise", head_layer=None) -> dict:
    """Every patch as its own full forward of the target prompt, with one hook."""
    model = naive_model(model)
    blocks, attn_path, proj_path, ffn_path = paths
    runs = {"clean": capture(model, paths, clean), "corrupt": capture(model, paths, corrupt)}
    ld = lambda logits: float(logits[answer] - logits[wrong])  # noqa: E731
    m_clean, m_corrupt = ld(runs["clean"]["logits"]), ld(runs["corrupt"]["logits"])
    target_ids, source = (corrupt, runs["clean"]) if direction == "denoise" else (clean, runs["corrupt"])
    layers = model.get_submodule(blocks)
    n, heads = clean.shape[1], source[("pattern", 0)].shape[0]

    def effect(module, hook, pre=False):
        handle = module.register_forward_pre_hook(hook, with_kwargs=True) if pre else module.register_forward_hook(hook)
        try:
            raw = ld(model(input_ids=target_ids).logits[0, -1])
        finally:
            handle.remove()
        e = (raw - m_corrupt) / (m_clean - m_corrupt)
        return 1 - e if direction == "noise" else e

    def at(p, value):  # a module's output, one position replaced
        def hook(m, a, out):
            y = _first(out).clone()
            y[0, p] = value
            return (y, *out[1:]) if isinstance(out, tuple) else y

        return hook

    def resid_at(p, value):
        def hook(m, a, kw):
            if a:
                x = a[0].clone()
                x[0, p] = value
                return (x, *a[1:]), kw
            x = kw["hidden_states"].clone()
            x[0, p] = value
            return a, kw | {"hidden_states": x}

        return hook

    def head_at(h, positions, value):  # the output projection's input, one head's slice
        def hook(m, a, kw):
            x = a[0].clone()
            d = x.shape[-1] // heads
            x[0, positions, h * d : (h + 1) * d] = value
            return (x, *a[1:]), kw

        return hook

    result = {k: np.zeros((len(layers), n)) for k in ("resid", "attn_out", "mlp_out")}
    result |= {k: np.zeros((len(layers), heads)) for k in ("heads", "pattern")}
    result["head_positions"] = np.zeros((heads, n))
    for k, block in enumerate(layers):
        attn = block.get_submodule(attn_path)
        proj = attn.get_submodule(proj_path)
        d = source[("heads", k)].shape[-1] // heads
        for p in range(n):
            result["resid"][k, p] = effect(block, resid_at(p, source[("resid", k)][p]), pre=True)
            result["attn_out"][k, p] = effect(attn, at(p, source[("attn_out", k)][p]))
            result["mlp_out"][k, p] = effect(block.get_submodule(ffn_path), at(p, source[("mlp_out", k)][p]))
        for h in range(heads):
            own = source[("heads", k)][:, h * d : (h + 1) * d]
            result["heads"][k, h] = effect(proj, head_at(h, slice(None), own), pre=True)
            if k == head_layer:
                for p in range(n):
                    result["head_positions"][h, p] = effect(proj, head_at(h, p, own[p]), pre=True)
            _PATTERN[id(attn)] = (h, source[("pattern", k)][h])
            try:
                result["pattern"][k, h] = effect(model, lambda m, a, kw: None, pre=True)
            finally:
                _PATTERN.pop(id(attn))
    return result | {"metric_clean": m_clean, "metric_corrupt": m_corrupt}


# -- the tests ---------------------------------------------------------------------------------------


def test_every_array_equals_the_naive_patching(arch):
    """Each architecture in one direction (every other one noising), so both are covered and the
    naive runs, one forward each, stay few; the full grid is the slow test below."""
    paths, model = arch
    k = sorted(ARCHS).index(model.config.model_type.replace("_text", ""))
    check_against_naive(paths, model, pt.DIRECTIONS[k % 2], heads_per_position=k in (0, 7))


@pytest.mark.slow
@pytest.mark.parametrize("direction", pt.DIRECTIONS)
def test_every_array_in_both_directions(arch, direction):
    check_against_naive(*arch, direction, heads_per_position=True)


def check_against_naive(paths, model, direction, heads_per_position):
    answer, wrong = pair_for(model, CLEAN, CORRUPT2)
    layer = 1 if heads_per_position else None
    kinds = (*pt.KINDS, "head_positions") if heads_per_position else pt.KINDS
    got = pt.patching_of(model, CLEAN, CORRUPT2, answer, wrong, direction, kinds, layer=layer)
    want = naive(model, paths, CLEAN, CORRUPT2, answer, wrong, direction, head_layer=layer)
    assert abs(got["metric_clean"] - want["metric_clean"]) < 1e-4
    assert abs(got["metric_corrupt"] - want["metric_corrupt"]) < 1e-4
    for kind in kinds:
        assert got[kind].shape == want[kind].shape, kind
        assert np.abs(got[kind] - want[kind]).max() < 1e-4, (kind, got[kind], want[kind])
    # a patch before the first difference changes nothing; the stream made the other run's is all of it
    assert (got["resid"][:, :2] == 0).all() and (got["attn_out"][:, :2] == 0).all()
    assert got["resid"][0, 2] != 1  # two positions differ: patching one is not the whole run


def test_one_differing_token_patched_at_the_input_is_exactly_one(arch):
    _, model = arch
    answer, wrong = pair_for(model, CLEAN, CORRUPT)
    for direction in pt.DIRECTIONS:
        got = pt.patching_of(model, CLEAN, CORRUPT, answer, wrong, direction, ("resid",))
        assert got["resid"][0, 2] == 1.0 and (got["resid"][0, [0, 1, 3, 4, 5]] == 0).all()
        assert (got["resid"][:, :2] == 0).all()


@pytest.mark.parametrize("which", ["clean", "corrupt"])
def test_a_run_patched_with_its_own_activations_is_exactly_itself(arch, which):
    _, model = arch
    answer, wrong = pair_for(model, CLEAN, CORRUPT2)
    found = pt.plan(model)
    pair = (answer, wrong)
    clean, corrupt = pt._record(found, CLEAN, pair), pt._record(found, CORRUPT2, pair)
    run = clean if which == "clean" else corrupt
    patches = [p for _, p in pt._runs_of(found, run, run, pt.KINDS)]
    raw = pt.patched_metrics(found, run, run, patches, pair)
    effect = pt.normalise(raw, clean.metric, corrupt.metric, "denoise")
    assert (effect == (1.0 if which == "clean" else 0.0)).all()
    assert (pt.normalise(raw, clean.metric, corrupt.metric, "noise") == (0.0 if which == "clean" else 1.0)).all()


def test_batched_chunks_agree_with_one_row_at_a_time(monkeypatch):
    """The batch size is no part of the answer: runs one row per batch give the same effects."""
    model = build(*ARCHS["qwen3"][:2])
    answer, wrong = pair_for(model, CLEAN, CORRUPT2)
    whole = pt.patching_of(model, CLEAN, CORRUPT2, answer, wrong)
    monkeypatch.setattr(pt, "TOKEN_ROWS", 1)
    alone = pt.patching_of(model, CLEAN, CORRUPT2, answer, wrong)
    for kind in pt.KINDS:
        assert np.abs(whole[kind] - alone[kind]).max() < 1e-5


def test_refusals_are_one_line():
    with pytest.raises(pt.PatchError, match=r"is 7 tokens and the corrupted one 8.*first differ at token 2"):
        pt.check_pair(list("abcdefg"), list("abXdefgh"))
    with pytest.raises(pt.PatchError, match="the same tokens"):
        pt.check_pair(list("abc"), list("abc"))
    model = build(*ARCHS["llama"][:2])
    with pytest.raises(pt.PatchError, match="same on both prompts"):
        pt.patching_of(model, CLEAN, CLEAN, 3, 4)
    with pytest.raises(pt.PatchError, match="give denoise or noise"):
        pt.patching_of(model, CLEAN, CORRUPT, 3, 4, "sideways")
    with pytest.raises(pt.PatchError, match="unknown kinds"):
        pt.patching_of(model, CLEAN, CORRUPT, 3, 4, kinds=("neurons",))


def test_a_model_without_the_attention_interface_is_refused():
    """Our own Transformer's attention is no transformers attention function: nothing to reach the heads."""

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = torch.nn.MultiheadAttention(16, 4, batch_first=True)
            self.mlp = torch.nn.Linear(16, 16)

        def forward(self, x, **kwargs):
            x = x + self.attn(x, x, x, need_weights=False)[0]
            return x + self.mlp(x)

    model = build(*ARCHS["llama"][:2])
    layers = model.model.layers
    for k in range(len(layers)):
        layers[k] = Block()
    with pytest.raises(pt.PatchError, match="do not each call attention once"):
        pt.plan(model, "odd")


def test_the_swap_helper_and_single_tokens_on_a_real_tokenizer():
    from types import SimpleNamespace

    from transformers import AutoTokenizer

    from attention_atlas.models.adapters.minilm import model_folder

    words = SimpleNamespace(tokenizer=AutoTokenizer.from_pretrained(model_folder()))  # what both read of an adapter
    assert pt.swap(words, "the cat sat on the mat", "cat", "dog") == "the dog sat on the mat"
    with pytest.raises(pt.PatchError, match="makes 9 tokens of 8"):
        pt.swap(words, "the cat sat on the mat", "cat", "big dog")
    with pytest.raises(pt.PatchError, match="not in the clean prompt"):
        pt.swap(words, "the cat sat on the mat", "cow", "dog")
    assert pt.single_token(words, "mat") == words.tokenizer.convert_tokens_to_ids("mat")
    with pytest.raises(pt.PatchError, match=r"'mat cat' is 2 tokens for this model \('mat', 'cat'\)"):
        pt.single_token(words, "mat cat")
