"""What BertViz's calls accept, turned into records: ``outputs.attentions`` or an array, and tokens.

``attention`` is what transformers returns (a tuple of ``[batch, heads, query, key]`` tensors, one
per layer, on any device and in any dtype) or one array or tensor ``[layers, heads, query, key]``.
Tensors are read with their own methods (``.detach().float().cpu().numpy()``) and a tuple of them
joined by ``torch.cat``, imported only then, so numpy input needs no torch. Weights in 16 bits
(bf16, fp16) have rows that sum to 1 only to about 1e-3; those rows are divided by their sums, as
float32, so the record takes them. Anything that does
not add up is a ``NotebookError``: one line, no traceback from deep inside.
"""

from __future__ import annotations

import numpy as np

from attention_atlas.viz_core.record import AttentionRecord

LOW_PRECISION = ("bfloat16", "float16", "half")


class NotebookError(ValueError):
    """Input a notebook call cannot draw, said in one line."""


def _low(value) -> bool:
    """Whether ``value`` holds 16-bit floats."""
    return any(name in str(getattr(value, "dtype", "")) for name in LOW_PRECISION)


def _array(value, what: str) -> tuple[np.ndarray, bool]:
    """``value`` as float32 numpy, and whether it came in 16 bits."""
    low = _low(value)
    if hasattr(value, "detach"):  # a torch tensor, on any device
        value = value.detach().float().cpu().numpy()
    try:
        return np.asarray(value, dtype=np.float32), low
    except (TypeError, ValueError) as err:
        raise NotebookError(f"{what} must be numbers ([layers, heads, query, key]): {err}") from None


def _layers(attention: tuple | list, what: str) -> tuple[np.ndarray, bool]:
    """One ``[batch 1, heads, query, key]`` per layer, stacked as ``[layers, heads, query, key]``.
    Tensors are joined by torch (``torch.cat``, imported since they exist): numpy's stack of
    hundreds of MB can stall on the kernel's huge-page compaction (0.6 s for SmolLM2's 30 layers
    at 512 tokens; torch's join, 0.04–0.14 s)."""
    tensors = all(hasattr(a, "detach") for a in attention)
    layers = list(attention) if tensors else [_array(a, what)[0] for a in attention]
    shapes = {tuple(a.shape) for a in layers}
    if len(shapes) > 1:
        raise NotebookError(f"{what}'s layers differ in shape: {sorted(shapes)}")
    shape = next(iter(shapes))
    if len(shape) != 4:
        raise NotebookError(f"{what} needs one [batch, heads, query, key] tensor per layer, not {shape}")
    if shape[0] != 1:
        raise NotebookError(f"{what} has a batch of {shape[0]}; pass one example (batch size 1)")
    low = any(_low(a) for a in attention)
    if not tensors:
        return np.stack([a[0] for a in layers]), low
    import torch

    return _array(torch.cat([a.detach().cpu() for a in layers]), what)[0], low


def weights_of(attention, what: str = "attention") -> np.ndarray:
    """``[layers, heads, query, key]`` float32 from ``outputs.attentions`` or a 4-axis array."""
    if attention is None:
        raise NotebookError(f"{what} is missing")
    if isinstance(attention, tuple | list):
        if not attention:  # transformers 5: outputs[-1] of an encoder is its empty cross_attentions
            raise NotebookError(
                f"{what} is an empty {type(attention).__name__}, probably cross_attentions (with transformers 5, "
                "outputs[-1] of an encoder such as BertModel is that empty tuple): pass outputs.attentions"
            )
        if any(a is None for a in attention):
            raise NotebookError(
                f"{what} holds None: the model ran with SDPA or flash; use show(model, tokenizer, text)"
            )
        weights, low = _layers(attention, what)
    else:
        weights, low = _array(attention, what)
        if weights.ndim == 5 and weights.shape[1] == 1:  # [layers, 1, heads, query, key]
            weights = weights[:, 0]
        if weights.ndim != 4:
            raise NotebookError(f"{what} needs 4 axes [layers, heads, query, key], not {weights.shape}")
    if weights.size == 0:
        raise NotebookError(f"{what} is empty: shape {weights.shape}")
    if low:  # 16-bit rows sum to 1 within ~1e-3: rescaled as float32
        total = weights.sum(-1, keepdims=True)
        weights = np.divide(weights, total, out=weights.copy(), where=total > 0)
    return weights


def token_list(tokens, n: int, what: str) -> list[str]:
    """``tokens`` as strings, exactly ``n`` of them."""
    if tokens is None:
        raise NotebookError(
            f"{what} are missing: pass the token strings (tokenizer.convert_ids_to_tokens(ids))"
        )
    if isinstance(tokens, str):
        raise NotebookError(f"{what} must be a list of token strings, not one string")
    tokens = [str(t) for t in tokens]
    if len(tokens) != n:
        raise NotebookError(f"the attention has {n} positions but {len(tokens)} {what} were given")
    return tokens


def record_of(
    attention, query_tokens, key_tokens=None, kind: str = "self", what: str = "attention"
) -> AttentionRecord:
    """One checked record: the weights' rows must be finite, non-negative and sum to 1."""
    weights = weights_of(attention, what)
    _, _, n_q, n_k = weights.shape
    queries = token_list(query_tokens, n_q, "tokens" if key_tokens is None else "query tokens")
    keys = queries if key_tokens is None else token_list(key_tokens, n_k, "key tokens")
    if key_tokens is None and n_q != n_k:
        raise NotebookError(f"{what} is {n_q} × {n_k}: self-attention needs as many queries as keys")
    try:
        return AttentionRecord(weights, queries, keys, kind, "notebook", "scaled_dot")
    except ValueError as err:
        raise NotebookError(f"{what}: {err}") from None


def listed(values) -> str:
    """Values as a reader writes them in a sentence: ``7``, ``7, 9`` (not ``[7]``)."""
    values = values if isinstance(values, list | tuple) else [values]
    return ", ".join(map(str, values)) if values else "nothing"


def pick(values, count: int, what: str) -> list[int]:
    """``values`` (an int, a list of ints, or None for all) inside ``range(count)``."""
    if values is None:
        return list(range(count))
    values = [values] if isinstance(values, int | np.integer) else list(values)
    bad = [v for v in values if not isinstance(v, int | np.integer) or not 0 <= v < count]
    if bad or not values:
        raise NotebookError(f"{what} must be in 0–{count - 1}, not {listed(bad or values)}")
    return [int(v) for v in dict.fromkeys(values)]


def from_end(values, count: int, what: str) -> list[int]:
    """``pick`` where a negative number counts from the end, as in BertViz's ``include_layers``
    (-1: the last layer): the model's own numbers, in the order given."""
    if values is None:
        return list(range(count))
    values = [values] if isinstance(values, int | np.integer) else list(values)
    bad = [v for v in values if not isinstance(v, int | np.integer) or not -count <= v < count]
    if bad or not values:
        raise NotebookError(f"{what} must be in 0–{count - 1} (negative: from the end), not {listed(bad or values)}")
    return list(dict.fromkeys(int(v) % count for v in values))


# BertViz's prettify_tokens (its util.format_special_chars): GPT-2's and SentencePiece's word-start
# marks become a space, BPE's end-of-word mark goes; WordPiece's ## stays, so pieces can be told apart.
BERTVIZ_MARKS = (("Ġ", " "), ("▁", " "), ("</w>", ""))


def prettified(tokens, prettify: bool):
    """``tokens`` cleaned as BertViz's ``prettify_tokens=True`` cleans them, else as they are."""
    if not prettify or tokens is None or isinstance(tokens, str):
        return tokens
    out = []
    for token in tokens:
        text = str(token)
        for mark, replacement in BERTVIZ_MARKS:
            text = text.replace(mark, replacement)
        out.append(text)
    return out


def language_of(lang) -> str:
    """``lang`` as the interface's code ("en", "zh"; "zh-CN" is "zh"), else a one-line ``NotebookError``."""
    from attention_atlas.i18n import LanguageError, check

    try:
        return check(lang)
    except LanguageError as err:
        raise NotebookError(str(err)) from None
