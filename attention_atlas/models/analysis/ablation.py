"""Heads switched off: what the rest of the model does without them (head ablation).

    with heads_off(adapter, "self", [(2, 5), (2, 7)]):   # layer 2, heads 5 and 7
        result = adapter.run(text)                       # every later head's attention without them
    ablated_run(adapter, text, "self", [(2, 5)])         # the same in one call
    next_token(adapter, text, [(2, 5)])                  # a causal LM's next-token probabilities

A head is switched off by zeroing its slice of the input of its attention module's output
projection (the heads' outputs, concatenated, before ``o_proj`` / ``out_proj`` / ``dense`` /
``c_proj`` mixes them): a forward pre-hook on that projection. The projections are found in the
model itself (``sites``): our Transformer's adapter names its attention modules by record kind
(``attention_modules()``); in a Hugging Face model each layer's attention block is the outermost
module whose class name ends in ``Attention``, and its output projection the first submodule of
one of those names. A model where this finds no projection per layer is refused in one line.

The model is shared by every session, so the hooks act only for the thread that opened
``heads_off`` (a context variable, as ``models.capture_points`` records): a forward another
session runs meanwhile is untouched. Hooks are counted and removed when the last block that
needs them closes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from contextvars import ContextVar

import numpy as np
import torch

from attention_atlas.i18n import later
from attention_atlas.models.capture_points import SharedHooks

OUTPUT_NAMES = ("o_proj", "out_proj", "dense", "c_proj")  # an attention block's output projection


class AblationError(ValueError):
    """Heads that cannot be switched off in this model, or a head that does not exist: one line."""


def _blocks(model: torch.nn.Module) -> list[torch.nn.Module]:
    """Each attention block, outermost first, in the order the model holds them."""
    found: list[str] = []
    blocks = []
    for name, module in model.named_modules():
        if type(module).__name__.endswith("Attention") and not any(name.startswith(f + ".") for f in found):
            found.append(name)
            blocks.append(module)
    return blocks


def _projection(block: torch.nn.Module) -> torch.nn.Module | None:
    for name, module in block.named_modules():
        if name.rsplit(".", 1)[-1] in OUTPUT_NAMES and hasattr(module, "weight"):
            return module
    return None


def sites(adapter) -> dict[str, list[tuple[torch.nn.Module, int]]]:
    """``{kind: [(output projection, heads) per layer]}`` of the adapter's model, or AblationError."""
    named = getattr(adapter, "attention_modules", None)
    if callable(named):  # our Transformer: its MultiHeadAttention modules by record kind
        return {kind: [(m.out_proj, m.num_heads) for m in mods] for kind, mods in named().items()}
    model = getattr(adapter, "model", None)
    if not isinstance(model, torch.nn.Module) or getattr(adapter, "family", None) not in (
        "encoder",
        "causal",
    ):
        raise AblationError(
            f"{adapter.model_id}: heads can be switched off in Transformer encoders, "
            "causal models and our couplet Transformer only"
        )
    found = [_projection(b) for b in _blocks(model)]
    if len(found) != adapter.n_layers or any(p is None for p in found):
        raise AblationError(
            f"{adapter.model_id}: no output projection found in each of its {adapter.n_layers} attention layers"
        )
    return {"self": [(p, adapter.n_heads) for p in found]}


def check(heads: Iterable[tuple[int, int]], layers: list) -> list[tuple[int, int]]:
    """``heads`` as sorted (layer, head) pairs, each within ``layers`` (a kind's sites)."""
    out = sorted({(int(a), int(b)) for a, b in heads})
    for layer, head in out:
        if not 0 <= layer < len(layers) or not 0 <= head < layers[layer][1]:
            raise AblationError(
                f"layer {layer}, head {head} does not exist: layers 0–{len(layers) - 1}, heads 0–{layers[0][1] - 1}"
            )
    return out


_OFF: ContextVar[dict[int, tuple[int, tuple[int, ...]]] | None] = ContextVar("atlas_heads_off", default=None)
_ZEROING = SharedHooks()  # id(projection) -> its pre-hook


def _zero_heads(module: torch.nn.Module, args: tuple):
    off = _OFF.get()
    found = off.get(id(module)) if off else None
    if not found:
        return None
    n_heads, heads = found
    x = args[0].clone()
    per_head = x.view(*x.shape[:-1], n_heads, x.shape[-1] // n_heads)
    per_head[..., list(heads), :] = 0
    return (x, *args[1:])


@contextlib.contextmanager
def heads_off(adapter, kind: str, heads: Iterable[tuple[int, int]]) -> Iterator[list[tuple[int, int]]]:
    """Every forward this thread runs inside the block has ``heads`` ((layer, head) pairs of
    record ``kind``'s attention) switched off; yields them sorted."""
    layers = sites(adapter).get(kind)
    if layers is None:
        raise AblationError(later("{model} has no {kind} attention", model=adapter.model_id, kind=kind))
    chosen = check(heads, layers)
    off: dict[int, tuple[int, tuple[int, ...]]] = {}
    for layer in sorted({lay for lay, _ in chosen}):
        proj, n = layers[layer]
        off[id(proj)] = (n, tuple(h for lay, h in chosen if lay == layer))
    projections = [layers[lay][0] for lay in sorted({lay for lay, _ in chosen})]
    token = _OFF.set(off)
    try:
        with _hooked(projections):
            yield chosen
    finally:
        _OFF.reset(token)


def _hooked(modules: list[torch.nn.Module]):
    return _ZEROING.held((id(m), lambda m=m: m.register_forward_pre_hook(_zero_heads)) for m in modules)


def hooks_installed() -> int:
    """How many ablation hooks are on modules now (0 once every block has closed)."""
    return len(_ZEROING)


def ablated_run(adapter, text: str, kind: str, heads: Iterable[tuple[int, int]], target: str | None = None):
    """``adapter.run(text, target=target)`` with ``heads`` of ``kind`` switched off."""
    with heads_off(adapter, kind, heads):
        return adapter.run(text, target=target)


def next_token(adapter, text: str, heads: Iterable[tuple[int, int]] = ()) -> np.ndarray:
    """A causal LM's probabilities ``[vocab]`` for the token after ``text`` (encoded as ``run``
    encodes it), with ``heads`` of its self-attention switched off."""
    if getattr(adapter, "family", None) != "causal":
        raise AblationError(
            later("{model} is not a causal language model: it predicts no next token", model=adapter.model_id)
        )
    src = adapter.encode(text)
    with torch.no_grad(), heads_off(adapter, "self", heads):
        logits = adapter.model(input_ids=src.ids.to(adapter.device)).logits[0, -1]
    return torch.softmax(logits.float(), -1).cpu().numpy()


def lens_at_last(adapter, text: str, heads: Iterable[tuple[int, int]] = ()) -> tuple[np.ndarray, np.ndarray]:
    """The logit lens (``models.analysis.lens``) at the last position of ``text`` with ``heads`` of a causal
    LM's self-attention switched off: each block's top token id and its probability, ``[layers]``
    each; the last is the model's own next token."""
    from attention_atlas.models.analysis import lens

    if getattr(adapter, "family", None) != "causal":
        raise AblationError(
            later("{model} is not a causal language model: it predicts no next token", model=adapter.model_id)
        )
    ids = adapter.encode(text).ids.to(adapter.device)
    lens.readout(adapter.model, adapter.model_id)  # found on the whole model, before any head is off
    with heads_off(adapter, "self", heads):
        stream = lens.residuals(adapter.model, ids, adapter.model_id)
    grid = lens.top_tokens(stream, 1, positions=range(stream.positions - 1, stream.positions))
    return grid.top_ids[:, 0, 0], grid.top_probs[:, 0, 0]


def token_text(adapter, token_id: int) -> str:
    """One vocabulary entry as the text it stands for (byte-level pieces decoded)."""
    return adapter.tokenizer.decode([int(token_id)])
