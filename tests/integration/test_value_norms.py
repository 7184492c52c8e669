"""Value norms read off the real models: Σⱼ αᵢⱼ f_h(xⱼ) is exactly what the head hands its output projection."""

import numpy as np
import pytest
import torch

from attention_atlas.models.adapters.value_norms import _get, layout, supports, value_norms, weighted
from attention_atlas.models.registry import load

TEXT = "The cat sat on the mat because it was tired."


def head_outputs(adapter, text: str, layer: int) -> torch.Tensor:
    """``[heads, tokens, hidden]``: each head's slice of the output projection applied to its context."""
    layers, _, out_path = layout(adapter)
    out = _get(layers[layer], out_path)
    seen = {}
    hook = out.register_forward_pre_hook(lambda _m, args: seen.__setitem__("x", args[0][0].detach().float()))
    try:
        with torch.no_grad():
            adapter.model(input_ids=adapter.encode(text).ids)
    finally:
        hook.remove()
    heads = adapter.n_heads
    d = out.weight.shape[1] // heads
    w = out.weight.detach().float()
    return torch.stack(
        [seen["x"][:, h * d : (h + 1) * d] @ w[:, h * d : (h + 1) * d].T for h in range(heads)]
    )


@pytest.mark.parametrize("model_id, layer", [("minilm", 3), ("smollm2", 7)])
def test_value_vectors_weighted_by_alpha_give_each_heads_output(model_id, layer):
    """f_h(xⱼ) from the hooked value projection (a shared key-value head for SmolLM2's grouped
    queries), weighted by the model's own α, equals what the head hands its output projection."""
    adapter = load(model_id)
    assert supports(adapter)
    layers, value_path, out_path = layout(adapter)
    seen = {}
    hook = _get(layers[layer], value_path).register_forward_hook(
        lambda _m, _i, o: seen.__setitem__("v", o[0])
    )
    with torch.no_grad():
        adapter.model(input_ids=adapter.encode(TEXT).ids)
    hook.remove()
    w = _get(layers[layer], out_path).weight.detach()
    heads = adapter.n_heads
    d = w.shape[1] // heads
    group = heads // (seen["v"].shape[1] // d)
    alpha = torch.from_numpy(adapter.run(TEXT).records["self"].weights[layer])
    outputs = head_outputs(adapter, TEXT, layer)
    norms = value_norms(adapter, TEXT)
    assert norms.shape == (adapter.n_layers, heads, alpha.shape[-1]) and (norms > 0).all()
    for h in range(heads):
        g = h // group
        f = seen["v"][:, g * d : (g + 1) * d] @ w[:, h * d : (h + 1) * d].T  # [tokens, hidden]
        assert torch.allclose(alpha[h] @ f, outputs[h], atol=1e-3)
        assert np.allclose(f.norm(dim=-1).numpy(), norms[layer, h], rtol=1e-4)


def test_weighted_rows_sum_to_one_and_follow_the_norms():
    alpha = np.full((1, 1, 2, 3), 1 / 3)
    norms = np.array([[[1.0, 2.0, 0.0]]])
    out = weighted(alpha, norms)
    assert np.allclose(out[0, 0], [[1 / 3, 2 / 3, 0.0]] * 2)
    assert np.allclose(weighted(alpha, np.zeros((1, 1, 3))), 0)  # nothing to carry: no row invented


def test_models_without_readable_values_are_refused_by_name():
    adapter = load("couplet-transformer")
    assert not supports(adapter)
    with pytest.raises(ValueError, match="couplet-transformer: value norms"):
        value_norms(adapter, "两个黄鹂鸣翠柳")
