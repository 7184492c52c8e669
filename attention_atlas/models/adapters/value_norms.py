"""How much each key contributes to an attention head's output, not just how much it is weighted.

Kobayashi et al. (2020), "Attention is not only a weight": head h's output at query i is
Σⱼ αᵢⱼ f_h(xⱼ), with f_h(x) = W_O,h (W_V,h x + b_V,h) the value vector carried through the
head's slice of the output projection. A large weight on a key whose f_h(xⱼ) is tiny (a [SEP]
or a start-of-text sink, typically) moves nothing. ``value_norms`` gives ‖f_h(xⱼ)‖ for every
layer, head and token of a Hugging Face BERT-style encoder or Llama-style decoder, from one
forward of the adapter's own (eager) model; ``weighted`` turns weights α into ‖α f(x)‖.

The value vectors are the ``values`` capture point (``models.capture_points``): a ``Tap`` on each
layer's value projection, hooked for the one ``recording`` and reporting only to the thread that
opened it (a forward another session runs on the shared model meanwhile adds nothing). They are
not taken from the long-context capture's attention function: that runs the SDPA twin, whose
hidden states differ from the eager forward's in the last bits from the second layer on, and
these norms weight the eager weights ``run()`` shows.
"""

from __future__ import annotations

import numpy as np
import torch

from attention_atlas.models.capture_points import VALUES, Tap, recording

# Where each architecture keeps a layer's value projection and the attention's output projection.
_LAYOUTS = {
    "bert": ("encoder.layer", "attention.self.value", "attention.output.dense"),
    "llama": ("model.layers", "self_attn.v_proj", "self_attn.o_proj"),
}


def _get(module: torch.nn.Module, path: str):
    for part in path.split("."):
        module = getattr(module, part)
    return module


def layout(adapter) -> tuple[list, str, str] | None:
    """(layers, value path, output path) of the adapter's model, or None where we cannot read them."""
    for root, value, out in _LAYOUTS.values():
        for model in (adapter.model, getattr(adapter.model, "base_model", None)):
            try:
                layers = list(_get(model, root))
                _get(layers[0], value), _get(layers[0], out)
            except (AttributeError, IndexError, TypeError):
                continue
            return layers, value, out
    return None


def supports(adapter) -> bool:
    """Whether value norms can be read from this adapter's model (BERT- or Llama-style self-attention)."""
    return getattr(adapter, "family", None) in ("encoder", "causal") and layout(adapter) is not None


def value_norms(adapter, text: str) -> np.ndarray:
    """``[layers, heads, tokens]``: ‖f_h(xⱼ)‖ for ``text`` encoded as ``adapter.run`` encodes it."""
    if not supports(adapter):
        raise ValueError(f"{adapter.model_id}: value norms are read from BERT- and Llama-style models only")
    layers, value_path, out_path = layout(adapter)
    src = adapter.encode(text)
    taps = [Tap(_get(layer, value_path), VALUES, i) for i, layer in enumerate(layers)]
    with torch.no_grad(), recording(VALUES, keep=_float, taps=taps) as rec:
        adapter.model.base_model(input_ids=src.ids.to(adapter.device))  # no LM head: its logits are not used
    values = rec[VALUES]  # {layer: [tokens, kv_heads · d]}
    heads = adapter.n_heads
    norms = []
    for i, layer in enumerate(layers):
        w_out = _get(layer, out_path).weight.detach().float()  # [hidden, heads · d]
        d = w_out.shape[1] // heads
        v = values[i]  # [tokens, kv_heads · d]
        group = heads // (v.shape[1] // d)  # query heads per key-value head (grouped-query attention)
        per_head = [
            v[:, (h // group) * d : (h // group + 1) * d] @ w_out[:, h * d : (h + 1) * d].T
            for h in range(heads)
        ]
        norms.append(torch.stack([f.norm(dim=-1) for f in per_head]))  # [heads, tokens]
    return torch.stack(norms).cpu().numpy()


def _float(t: torch.Tensor) -> torch.Tensor:
    return t.detach().float()


def weighted(weights: np.ndarray, norms: np.ndarray) -> np.ndarray:
    """‖αᵢⱼ f(xⱼ)‖ = αᵢⱼ ‖f(xⱼ)‖ for ``weights [layers, heads, query, key]`` and ``norms [layers,
    heads, key]``, each row rescaled to sum to 1 so that it reads (and rolls out) like weights."""
    scaled = weights * norms[:, :, None, :]
    total = scaled.sum(-1, keepdims=True)
    return np.divide(scaled, total, out=np.zeros_like(scaled), where=total > 0)
