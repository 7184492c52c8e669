"""Queries and keys of every layer, captured during a plain SDPA forward (long context).

``capture(adapter, text)`` runs a Hugging Face adapter's model on ``text`` (up to the model's own
context, not the 512 tokens of ``run()``) and returns a ``viz_core.blockwise.QKCapture``: each
layer's queries and keys in float32, after the rotary embedding where the model has one, keys per
key head (grouped-query attention). Weights come from them block-wise (``viz_core.blockwise``).

How: transformers' attention interface. ``atlas_capture`` is registered as an attention function
that reports the query and key it is handed (the ``queries``, ``keys``, ``scaling``, ``variant`` and
``masked`` capture points of ``models.capture_points``, site: the layer index) to the recording
open in the calling thread, and then runs SDPA (or, for a layer with a window, logit softcapping or
sink logits, the same softmax a block of query rows at a time).

A layer's ``Variant`` is what the module and its call say beyond q and k: the ``sliding_window``,
``softcap`` and ``s_aux`` (sink logits) keywords the model hands the interface (or the module's own
``sinks`` parameter), and the ``scaling`` it uses. Masks are made as for SDPA (the mask function
is registered beside the attention function); a mask is accepted only where the causal order and
the layer's window explain it exactly (checked block-wise, once per mask), else the model is
refused: weights recomputed from q and k would not be the model's.

The adapter's own model stays on the eager path (``run()`` unchanged); the capture runs a twin
that shares every parameter tensor with it (no second copy of the weights) and differs only in its
attention implementation. Nothing per request is kept on either model: the recording is a local
of each call, and per thread.

BLOOM and Falcon add their ALiBi tensor to q·k in their own attention modules, outside the
interface: their twin runs the module's own eager attention, and a hook before each such module
(``FUSED_ALIBI``: found by its fused ``query_key_value`` and its ``alibi`` argument, split as the
module splits it) reports the same points, the variant holding the bias each head adds to every
key (as the model computed it: Falcon's is rounded to bfloat16). Falcon's eager path adds ALiBi
twice (once from its argument, once folded into the mask meant for SDPA); ``single_alibi`` hands
it the causal mask alone, so the adapter and the twin compute what SDPA and Falcon's own code do.

Architectures whose attention layers do not call the interface and are not hooked (the check:
every layer must have reported), encoder–decoders, and models with an attention bias or mask that q·k and the variant do not hold
are refused by name.
"""

from __future__ import annotations

import copy
import functools
import inspect
import os
import shutil
import sys
import tempfile
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from attention_atlas.i18n import later
from attention_atlas.models import capture_points as points
from attention_atlas.models.adapters.hf_common import Encoded, InputError, as_prompt
from attention_atlas.paths import cache_dir
from attention_atlas.serve.process import trim
from attention_atlas.viz_core.blockwise import BLOCK, QKCapture, Variant

ATTENTION = "atlas_capture"
MAX_CHARS = 400_000  # far above 8,192 tokens of any text; longer input is refused, not cut


class CaptureError(ValueError):
    """An input that cannot be captured (too long, too big for memory, unsupported model): one line."""


def _capture_attention(module, query, key, value, attention_mask, **kwargs):
    """transformers' attention interface: report this layer's queries and keys ``[batch, heads,
    seq, d]`` (batch item 0) and its variant to the thread's recording, then attend. Values are
    not reported here: ``value_norms`` reads them from the adapter's own eager forward (a ``Tap``),
    since this twin's forward differs from eager in the last bits from the second layer on."""
    variant = _variant(module, kwargs, query.shape[1])
    causal = bool(getattr(module, "is_causal", True))
    rec = points.active()
    if rec is not None:
        rec.report(
            getattr(module, "layer_idx", len(rec.get(points.QUERIES))),
            queries=query[0],
            keys=key[0],
            scaling=float(kwargs.get("scaling") or query.shape[-1] ** -0.5),
            variant=variant,
            masked=not _explained(attention_mask, query.shape[-2], variant.window, causal, rec.memo),
        )
    return _attend(module, query, key, value, attention_mask, variant, causal, **kwargs)


def _variant(module, kwargs: dict, heads: int) -> Variant:
    """The layer's window, softcap and sink logits, as the model hands them to the interface."""
    window, softcap = kwargs.get("sliding_window"), kwargs.get("softcap")
    sinks = kwargs.get("s_aux")
    if sinks is None and isinstance(getattr(module, "sinks", None), torch.Tensor):
        sinks = module.sinks
    if sinks is not None:
        sinks = _numpy(sinks).reshape(-1)
        if len(sinks) != heads:
            raise CaptureError(f"{type(module).__name__}: {len(sinks)} sink logits for {heads} heads")
    return Variant(
        window=int(window) if window else None, softcap=float(softcap) if softcap else None, sinks=sinks
    )


# -- ALiBi added inside the attention module (BLOOM, Falcon) ------------------------------------------


def _bloom_split(module, hidden: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, float, float]:
    """BLOOM's queries and keys ``[batch, heads, seq, d]`` (its own split of the fused projection),
    the factor on q·k and the one on the ALiBi tensor (``alibi.baddbmm(q, k, beta, alpha)``)."""
    query, key, _ = module._reshape(module.query_key_value(hidden))
    return query, key, float(module.inv_norm_factor), float(module.beta)


def _falcon_split(module, hidden: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, float, float]:
    """Falcon's, split and laid out as its attention module does (no rotary embedding with ALiBi):
    once ``_single_alibi`` has run, its eager scores are ``(q·k + alibi) · inv_norm_factor``."""
    query, key, _ = module._split_heads(module.query_key_value(hidden))
    batch, n = query.shape[:2]
    kv = module.num_heads if module.new_decoder_architecture else module.num_kv_heads
    query = query.transpose(1, 2).reshape(batch, module.num_heads, n, module.head_dim)
    key = key.transpose(1, 2).reshape(batch, kv, n, module.head_dim)
    factor = float(module.inv_norm_factor)
    return query, key, factor, factor


# The one place keyed on a module class: attention modules that take a fused ``query_key_value``
# and add the ``alibi`` tensor they are handed to q·k themselves, outside the attention interface.
FUSED_ALIBI = {"BloomAttention": _bloom_split, "FalconAttention": _falcon_split}
# Of those, the ones whose model also folds ALiBi into the mask it hands them (for SDPA, which adds
# the mask to q·k once): their eager path, which adds both, needs ``_single_alibi``.
ALIBI_IN_MASK = {"FalconAttention"}


def _fused_alibi(module):
    """``module``'s split (``FUSED_ALIBI``) if it adds the ``alibi`` argument to its q·k itself."""
    split = FUSED_ALIBI.get(type(module).__name__)
    if split is None or not hasattr(module, "query_key_value"):
        return None
    return split if "alibi" in inspect.signature(module.forward).parameters else None


def single_alibi(model: torch.nn.Module) -> None:
    """Put ``_single_alibi`` before each attention module of ``model`` (an eager one: the adapter's,
    or a capture twin of a notebook's model) whose model folds ALiBi into the mask as well
    (``ALIBI_IN_MASK``: Falcon), once."""
    for module in model.modules():
        hooked = _single_alibi in module._forward_pre_hooks.values()
        if type(module).__name__ in ALIBI_IN_MASK and _fused_alibi(module) and not hooked:
            module.register_forward_pre_hook(_single_alibi, with_kwargs=True)


def _single_alibi(module, args, kwargs):
    """Falcon's model hands its attention modules ALiBi twice: as ``alibi``, and folded into the
    additive mask (``alibi / √d``, for SDPA, which adds that mask to q·k/√d). Its eager path adds
    both (transformers 5), so eager weights are not what SDPA or Falcon's original code compute.
    Handed the mask without the folded copy (the causal order alone, one for every head), eager
    computes ALiBi once."""
    mask = kwargs.get("attention_mask")
    sdpa = module.config._attn_implementation == "sdpa" and not kwargs.get("output_attentions")
    if sdpa or kwargs.get("alibi") is None or not isinstance(mask, torch.Tensor) or mask.dtype == torch.bool:
        return None  # (the module's own test for its SDPA path, which adds the mask alone)
    lowest = torch.finfo(mask.dtype).min
    kwargs["attention_mask"] = torch.where(mask[:, :1] > lowest / 2, 0.0, lowest).to(mask.dtype)
    return args, kwargs


def _hook_alibi(model: torch.nn.Module) -> bool:
    """Put ``_report_alibi`` before each attention module of ``model`` that adds ALiBi itself; whether any."""
    found = [(module, split) for module in model.modules() if (split := _fused_alibi(module))]
    for module, split in found:
        module.register_forward_pre_hook(functools.partial(_report_alibi, split), with_kwargs=True)
    return bool(found)


def _report_alibi(split, module, args, kwargs) -> None:
    """Report the layer's queries, keys, scaling and ALiBi bias (batch item 0) to the thread's
    recording, as ``_capture_attention`` does; the module's own eager attention then runs."""
    rec, alibi = points.active(), kwargs.get("alibi")
    if rec is None or alibi is None:
        return
    query, key, alpha, beta = split(module, args[0] if args else kwargs["hidden_states"])
    heads, n, mask = query.shape[1], query.shape[-2], kwargs.get("attention_mask")
    bias = alibi.reshape(-1, heads, alibi.shape[-1])[0].float() * beta  # [heads, keys]: the same every query
    causal = n == 1 or (mask is not None and _explained(mask, n, None, True, rec.memo))  # it adds its mask
    rec.report(
        getattr(module, "layer_idx", len(rec.get(points.QUERIES))),
        queries=query[0],
        keys=key[0],
        scaling=alpha,
        variant=Variant(alibi=_numpy(bias)),
        masked=not causal,
    )


def _allowed_rows(start: int, stop: int, n: int, window: int | None, causal: bool) -> torch.Tensor:
    """Which keys queries ``start:stop`` may read ``[stop - start, n]``: causal order and window."""
    queries, keys = torch.arange(start, stop)[:, None], torch.arange(n)[None, :]
    allowed = keys <= queries if causal else torch.ones(stop - start, n, dtype=torch.bool)
    return allowed & (keys > queries - window) if window else allowed


@dataclass(frozen=True)
class Windowed:
    """What the capture's mask function hands the layers instead of an ``[n, n]`` mask that is
    exactly the causal order and a window of ``window`` keys (checked a block of rows at a time
    from the mask function, ``_window_of``): the layer's attention applies the window itself."""

    window: int


def _mask(*, q_length: int, kv_length: int, mask_function, attention_mask=None, local_size=None, **kwargs):
    """transformers' mask interface: SDPA's mask (``sdpa_mask``), except a sliding window's, which
    is handed on as ``Windowed`` where it is only the causal order and the window (1 GB of
    booleans at 32,768 tokens, 4 GB once SDPA turns it to floats)."""
    from transformers.masking_utils import sdpa_mask

    args = dict(q_length=q_length, kv_length=kv_length, mask_function=mask_function, local_size=local_size)
    plain = (
        local_size
        and q_length == kv_length > local_size
        and not (kwargs.get("q_offset") or kwargs.get("kv_offset") or kwargs.get("use_vmap"))
        and (attention_mask is None or bool(attention_mask.all()))
    )
    if plain and _window_of(mask_function, kv_length, local_size):
        return Windowed(int(local_size))
    return sdpa_mask(**args, attention_mask=attention_mask, **kwargs)


def _window_of(mask_function, n: int, window: int) -> bool:
    """Whether ``mask_function`` (transformers' index-based mask function) allows exactly the causal
    order and ``window`` keys, for every query of ``n``: evaluated a block of rows at a time."""
    one, keys = torch.arange(1)[:, None, None, None], torch.arange(n)[None, None, None, :]

    def rows(start: int, stop: int) -> torch.Tensor:
        return mask_function(one, one, torch.arange(start, stop)[None, None, :, None], keys)

    return _rows_match(rows, n, window, True)


def _rows_match(rows, n: int, window: int | None, causal: bool) -> bool:
    """Whether ``rows(start, stop)`` (booleans ``[..., stop - start, n]``) is the causal order and
    the window for every block of query rows."""
    for start in range(0, n, BLOCK * 4):
        stop = min(start + BLOCK * 4, n)
        got = rows(start, stop)
        if not bool((got == _allowed_rows(start, stop, n, window, causal).to(got.device)).all()):
            return False
    return True


def _explained(mask, n: int, window: int | None, causal: bool, memo: dict) -> bool:
    """Whether ``mask`` (None, ``Windowed``, boolean or additive; batch item 0) is exactly the
    causal order and the window: anything else (padding, a bias, chunks) is not held by q·k and
    the variant."""
    if isinstance(mask, Windowed):
        return causal and mask.window == window
    if mask is None:
        return not (window and causal and n > window)  # SDPA's is_causal holds no window
    key = (mask.data_ptr(), tuple(mask.shape), window, causal)
    if key not in memo:
        memo[key] = _mask_matches(mask[0], n, window, causal)
    return memo[key]


def _mask_matches(mask: torch.Tensor, n: int, window: int | None, causal: bool) -> bool:
    if mask.shape[-2:] != (n, n):
        return False
    if mask.dtype != torch.bool:
        lowest = torch.finfo(mask.dtype).min / 2
        if not ((mask == 0) | (mask <= lowest)).all():
            return False  # an additive bias, not a mask
        mask = mask == 0
    return _rows_match(lambda start, stop: mask[..., start:stop, :], n, window, causal)


def _attend(module, query, key, value, mask, variant: Variant, causal: bool, **kwargs):
    """SDPA for a plain layer; else ``_blocked``: the same softmax a block of query rows at a time
    over the keys each block's window reaches, so no ``[heads, n, n]`` tensor is made at length
    (SDPA cannot softcap or take a sink, and with a window's mask it turns the mask to floats)."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    if variant.plain:  # a window's marker here means a layer without its window: refused (``_explained``)
        mask = None if isinstance(mask, Windowed) else mask
        return sdpa_attention_forward(module, query, key, value, mask, **kwargs)
    scaling = kwargs.get("scaling") or query.shape[-1] ** -0.5
    return _blocked(query, key, value, variant, causal, scaling), None


def _blocked(query, key, value, variant: Variant, causal: bool, scaling: float) -> torch.Tensor:
    """Attention output ``[batch, seq, heads, d]`` (as eager returns it) of the layer's variant:
    ``blockwise.rows``' softmax in torch, each row block over the keys its window reaches."""
    # the query heads that share a key head side by side: [batch, key heads, group, n, d] over keys
    # [batch, key heads, 1, n, d], broadcast, not repeated (134 MB each for Gemma 3 at 32,768 tokens)
    query = query.unflatten(1, (key.shape[1], query.shape[1] // key.shape[1]))
    key, value = key[:, :, None], value[:, :, None]
    sinks = (
        None
        if variant.sinks is None
        else torch.as_tensor(variant.sinks).to(query).view(*query.shape[1:3], 1, 1)
    )
    n, out = query.shape[-2], torch.empty_like(query)
    for start in range(0, n, BLOCK):
        stop = min(start + BLOCK, n)
        first = max(0, start - variant.window + 1) if variant.window else 0
        last = stop if causal else n
        scores = query[..., start:stop, :] @ key[..., first:last, :].transpose(-1, -2) * scaling
        if variant.softcap:
            scores = torch.tanh(scores / variant.softcap) * variant.softcap
        allowed = _allowed_rows(start, stop, last, variant.window, causal)[:, first:].to(query.device)
        scores = scores.masked_fill(~allowed, float("-inf"))
        if sinks is not None:
            scores = torch.cat([scores, sinks.expand(*scores.shape[:-1], 1)], dim=-1)
        probs = torch.softmax(scores, dim=-1)
        out[..., start:stop, :] = probs[..., : last - first] @ value[..., first:last, :]
    return out.flatten(1, 2).transpose(1, 2).contiguous()


def _numpy(t: torch.Tensor):
    """As the capture keeps each layer: float32 numpy on the CPU at once (not every layer on the GPU)."""
    return t.detach().float().cpu().contiguous().numpy()


SPILL_FROM = 2048  # tokens: from here a capture's queries and keys live in files mapped into memory


def spills(n: int) -> bool:
    """Whether a capture of ``n`` tokens keeps its queries and keys in mapped files, not in RAM."""
    return n >= SPILL_FROM


def spill_dir() -> Path:
    return cache_dir() / "captures"


def mapped(a: np.ndarray, folder: Path) -> np.ndarray:
    """``a`` written to an unnamed file in ``folder`` and mapped back read-only: its pages are the
    system's file cache, read back at memory speed while there is room and dropped (not swapped)
    when there is not, and the file is gone with the last view of it. The file stays open on the
    array (``.file``): ``viz_core.every_head``'s workers map it by descriptor. ``a`` itself where
    the folder cannot take it (read-only, full)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        f = tempfile.TemporaryFile(dir=folder)  # noqa: SIM115 - kept open on the array, closed with it
    except OSError:
        return a
    try:
        a.tofile(f)
        f.flush()
        out = np.memmap(f, dtype=a.dtype, mode="r", shape=a.shape)
    except OSError:
        f.close()
        return a
    out.file = f
    return out


def _spilled(t: torch.Tensor):
    return mapped(_numpy(t), spill_dir())


_REGISTERED = False
_LOCK = threading.Lock()
_TWINS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model -> {device: twin}


def _register() -> None:
    global _REGISTERED
    if not _REGISTERED:
        from transformers import AttentionInterface
        from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS

        AttentionInterface.register(ATTENTION, _capture_attention)
        ALL_MASK_ATTENTION_FUNCTIONS.register(ATTENTION, _mask)  # SDPA's, a plain window's as a marker
        _REGISTERED = True


def _twin(model: torch.nn.Module, device: torch.device, attention: str = ATTENTION) -> torch.nn.Module:
    """The twin of ``model`` on ``device`` that runs the registered attention function ``attention``
    (the capture's, or another module's): its parameters shared when on the same device."""
    with _LOCK:
        _register()
        twins = _TWINS.setdefault(model, {})
        key = str(device) if attention == ATTENTION else f"{device}|{attention}"
        if key not in twins:
            same = next(model.parameters()).device == device
            memo = {id(p): p for p in model.parameters()} if same else {}
            twin = copy.deepcopy(model, memo).to(device).eval()
            single_alibi(twin)  # a notebook's Falcon: ALiBi once, before the hooks below report
            if attention == ATTENTION and _hook_alibi(twin):
                attention = "eager"  # ALiBi in the module (BLOOM, Falcon): its layers report from the hooks
            for name, module in twin.named_modules():
                if name.rsplit(".", 1)[-1] == "mlp":
                    _in_rows(module)
            for module_name in {type(module).__module__ for module in twin.modules()}:
                _rope_by_head(module_name)
            twin.set_attn_implementation(attention)
            twins[key] = twin
        return twins[key]


MLP_ROWS = 4096  # tokens a feed-forward block takes at once in a long capture


def _in_rows(mlp: torch.nn.Module) -> None:
    """The twin's feed-forward block run ``MLP_ROWS`` tokens at a time past that length: it works
    on each token alone, and whole it holds three ``[n, intermediate]`` tensors (800 MB for Gemma 3
    at 32,768 tokens). A block that does not return one tensor (a mixture of experts' router
    scores beside it) runs whole."""
    forward = mlp.forward

    def in_rows(x, *args, **kwargs):
        if args or kwargs or x.dim() != 3 or x.shape[1] <= MLP_ROWS:
            return forward(x, *args, **kwargs)
        first = forward(x[:, :MLP_ROWS])
        if not isinstance(first, torch.Tensor):
            return forward(x)
        rest = (forward(x[:, i : i + MLP_ROWS]) for i in range(MLP_ROWS, x.shape[1], MLP_ROWS))
        return torch.cat([first, *rest], dim=1)

    mlp.forward = in_rows


def _rope_by_head(module_name: str) -> None:
    """The ``apply_rotary_pos_emb(q, k, cos, sin)`` of a modelling module, run a head at a time past
    ``MLP_ROWS`` tokens: whole, ``q·cos + rotate_half(q)·sin`` holds four temporaries the size of q
    (536 MB for Gemma 3's four query heads at 32,768 tokens), a head at a time four of one head's.
    Elementwise, so the result is the same to the bit, and the same function in the module for
    the twin and its model alike. Called otherwise (other arguments, layouts), it runs whole."""
    module = sys.modules.get(module_name)
    whole = getattr(module, "apply_rotary_pos_emb", None)
    if not callable(whole) or getattr(whole, "by_head", False):
        return

    @functools.wraps(whole)
    def rope(q, k, *args, **kwargs):
        if kwargs or len(args) != 2 or q.dim() != 4 or k.dim() != 4 or q.shape[-2] <= MLP_ROWS:
            return whole(q, k, *args, **kwargs)
        cos = args[0]
        if cos.dim() != 3 or cos.shape[-2] != q.shape[-2]:  # not [batch, n, d] beside [batch, heads, n, d]
            return whole(q, k, *args, **kwargs)
        return _by_head(whole, q, k, *args)

    rope.by_head = True
    module.apply_rotary_pos_emb = rope


def _by_head(whole, q: torch.Tensor, k: torch.Tensor, cos, sin) -> tuple[torch.Tensor, torch.Tensor]:
    """``whole(q, k, cos, sin)``, one query head and one key head at a time (past the key heads of
    grouped-query attention, an empty slice of them)."""
    out_q = out_k = None
    for h in range(max(q.shape[1], k.shape[1])):
        part_q, part_k = whole(q[:, h : h + 1], k[:, h : h + 1], cos, sin)
        if out_q is None:
            out_q = part_q.new_empty(q.shape[:2] + part_q.shape[2:])
            out_k = part_k.new_empty(k.shape[:2] + part_k.shape[2:])
        out_q[:, h : h + 1], out_k[:, h : h + 1] = part_q, part_k
    return out_q, out_k


# -- limits ------------------------------------------------------------------------------------------


def context_limit(adapter) -> int:
    """The model's own context: ``max_position_embeddings`` (and the tokenizer's limit if smaller)."""
    limits = [
        getattr(adapter.config, "max_position_embeddings", None),
        getattr(adapter.config, "n_positions", None),
        getattr(adapter.tokenizer, "model_max_length", None),
    ]
    usable = [int(x) for x in limits if x and x < 1_000_000]
    return min(usable) if usable else 8192


def _shape(adapter) -> tuple[int, int, int, int, int]:
    """(layers, query heads, key heads, head_dim, hidden) from the config."""
    cfg = adapter.config
    hidden = getattr(cfg, "hidden_size", None) or getattr(cfg, "n_embd", None) or 768
    heads = adapter.n_heads
    kv = getattr(cfg, "num_key_value_heads", None) or heads
    dim = getattr(cfg, "head_dim", None) or hidden // heads
    return adapter.n_layers, heads, kv, dim, hidden


def qk_bytes(adapter, n: int) -> int:
    """The float32 queries and keys of every layer for ``n`` tokens."""
    layers, heads, kv, dim, _ = _shape(adapter)
    return 4 * n * layers * (heads + kv) * dim


def estimate_bytes(adapter, n: int, block: int = BLOCK) -> int:
    """The memory capturing ``n`` tokens needs: the queries and keys of every layer (one layer's
    where they go to mapped files, ``spills``), the forward's activations (a dozen hidden-size
    and three feed-forward-size tensors of n rows), and the largest weight block computed
    afterwards (a few copies of ``block × n``); a model that adds ALiBi in its attention modules
    (BLOOM, Falcon) computes its own ``[heads, n, n]`` scores eagerly (``_alibi_copies``)."""
    layers, heads, _, dim, hidden = _shape(adapter)
    ffn = getattr(adapter.config, "intermediate_size", None) or 4 * hidden
    qk = qk_bytes(adapter, n)
    qk //= layers if spills(n) and _disk_holds(qk) else 1
    forward = 4 * n * (12 * hidden + 3 * ffn + 2 * heads * dim)
    forward += _alibi_copies(getattr(adapter, "model", None)) * 4 * heads * n * n
    rows = 4 * 3 * min(block, n) * n
    return qk + forward + rows


def _adds_alibi(model) -> bool:
    return isinstance(model, torch.nn.Module) and any(_fused_alibi(m) for m in model.modules())


def _alibi_copies(model) -> int:
    """``[heads, n, n]`` tensors a forward holds at once where its modules add ALiBi themselves:
    eager's scores, weights and their product (three), and Falcon's mask with ALiBi in it."""
    if not _adds_alibi(model):
        return 0
    return 4 if any(type(m).__name__ in ALIBI_IN_MASK for m in model.modules()) else 3


def _disk_holds(nbytes: int) -> bool:
    """Whether the cache folder's disk has room for ``nbytes`` of mapped queries and keys."""
    folder = spill_dir()
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        return shutil.disk_usage(folder).free > 1.2 * nbytes
    except OSError:
        return False


def memory_limit_bytes() -> int:
    """``ATLAS_MAX_CAPTURE_MB`` if set, else 80 % of the memory the system has available now."""
    env = os.environ.get("ATLAS_MAX_CAPTURE_MB", "").strip()
    if env:
        try:
            return int(float(env) * 2**20)
        except ValueError as err:
            raise CaptureError(f"ATLAS_MAX_CAPTURE_MB must be a number of megabytes, not {env!r}") from err
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            info = {line.split(":")[0]: int(line.split()[1]) * 1024 for line in f}
        return int(0.8 * info["MemAvailable"])
    except (OSError, KeyError, ValueError):
        return 4 * 2**30


def check_fits(adapter, n: int) -> int:
    """Refuse ``n`` tokens over the context or over the memory limit; return the estimate in bytes."""
    limit = context_limit(adapter)
    if n > limit:
        raise CaptureError(
            later(
                "the text is {n:,} tokens; {model} reads at most {limit:,}: shorten it",
                n=n,
                model=adapter.model_id,
                limit=limit,
            )
        )
    need, have = estimate_bytes(adapter, n), memory_limit_bytes()
    if need > have:
        raise CaptureError(
            later(
                "{n:,} tokens need about {need:,.0f} MB to capture; the limit is {have:,.0f} MB"
                " (free memory, or ATLAS_MAX_CAPTURE_MB): shorten the text",
                n=n,
                need=need / 2**20,
                have=have / 2**20,
            )
        )
    return need


# -- the capture -------------------------------------------------------------------------------------


def supports(adapter) -> str | None:
    """None if ``adapter`` can capture, else why not (one line)."""
    if not hasattr(adapter, "tokenizer") or not hasattr(adapter, "config"):
        return f"{adapter.model_id}: queries and keys are captured from Hugging Face models only"
    if adapter.family == "seq2seq":
        return (
            f"{adapter.model_id}: an encoder–decoder; long-context capture reads encoders and causal models"
        )
    cfg = adapter.config
    if getattr(cfg, "alibi", False) and not _adds_alibi(getattr(adapter, "model", None)):
        return (
            f"{adapter.model_id}: ALiBi position biases are not captured (this model adds them outside "
            "transformers' attention interface)"
        )
    relative = getattr(cfg, "position_embedding_type", "absolute")
    if relative != "absolute":
        return f"{adapter.model_id}: {relative} position scores outside q·k are not captured"
    return None


def encode_long(adapter, text: str):
    """``adapter``'s tokens for ``text`` without the 512 cut; over the context is a CaptureError."""
    from attention_atlas.viz_core.tokens import well_formed

    text = "" if text is None else str(text)
    if not text.strip():
        raise InputError(later("the text is empty: type a sentence"))
    text, fixed = well_formed(text)
    if len(text) > MAX_CHARS:
        raise CaptureError(
            later(
                "the text has {n:,} characters; at most {limit:,} are read: shorten it",
                n=len(text),
                limit=MAX_CHARS,
            )
        )
    enc = adapter.tokenizer(text, return_tensors="pt", return_special_tokens_mask=True)
    ids = enc["input_ids"]
    if ids.shape[1] == 0:
        raise InputError(later("the tokenizer produced no tokens for this text"))
    try:
        word_ids = list(enc.word_ids(0))
    except (ValueError, AttributeError):
        word_ids = list(range(ids.shape[1]))
    special = [bool(s) for s in enc["special_tokens_mask"][0].tolist()]
    out = encoded(adapter, *as_prompt(getattr(adapter, "family", ""), ids, special, word_ids))
    check_fits(adapter, out.ids.shape[1])  # the tokens read: a causal LM's appended separator is not
    out.notices.extend(fixed)
    return out


def encoded(adapter, ids: torch.Tensor, special: list[bool], word_ids: list):
    """The adapter's ``Encoded`` for ``ids``: its own token labels where it makes them (byte-level
    pieces decoded), else the tokenizer's strings."""
    if hasattr(adapter, "_encoded"):
        return adapter._encoded(ids, special, word_ids, [])
    return Encoded(ids, adapter.tokenizer.convert_ids_to_tokens(ids[0].tolist()), special, word_ids, [])


def capture(adapter, text: str, spill: bool | None = None) -> QKCapture:
    """Every layer's queries and keys for ``text`` (up to the model's context), float32; in mapped
    files (``mapped``) where ``spill``, by default from ``SPILL_FROM`` tokens on."""
    why = supports(adapter)
    if why:
        raise CaptureError(why)
    src = encode_long(adapter, text)
    notices = list(src.notices)
    try:
        store = _forward(adapter, src.ids, adapter.device, spill)
    except torch.OutOfMemoryError:
        if adapter.device.type != "cuda":
            raise
        torch.cuda.empty_cache()
        notices.append(
            f"{adapter.device} ran out of memory for {src.ids.shape[1]:,} tokens; captured on the CPU"
        )
        store = _forward(adapter, src.ids, torch.device("cpu"), spill)
    return _to_capture(adapter, store, src, notices)


def capture_ids(
    adapter, ids: torch.Tensor, device: torch.device | None = None, spill: bool | None = None
) -> dict:
    """The raw store for token ids ``[1, n]`` (benchmarks): ``{layer: (q, k, scaling, masked, variant)}``."""
    return _forward(adapter, ids, device or adapter.device, spill)


def _forward(adapter, ids: torch.Tensor, device: torch.device, spill: bool | None = None) -> dict:
    twin = _twin(adapter.model, device)
    keep = _spilled if (spills(ids.shape[1]) if spill is None else spill) else _numpy
    with torch.no_grad(), points.recording(*STORED, keep=keep) as rec:
        twin.base_model(input_ids=ids.to(device), use_cache=False)  # no LM head: n × vocab logits
    queries, keys, scaling, masked, variant = (rec[p] for p in STORED)
    store = {
        layer: (q, keys[layer], scaling[layer], masked[layer], variant[layer]) for layer, q in queries.items()
    }
    if ids.shape[1] > TRIM_FROM:
        trim()  # glibc kept the forward's freed activations: about 0.85 GB at 8,192 tokens
    return store


TRIM_FROM = 1024  # tokens: above this, hand the forward's freed activations back to the system
STORED = (points.QUERIES, points.KEYS, points.SCALING, points.MASKED, points.VARIANT)  # a store's tuple


def _to_capture(adapter, store: dict, src, notices: list[str]) -> QKCapture:
    layers = adapter.n_layers
    if sorted(store) != list(range(layers)):
        raise CaptureError(
            f"{adapter.model_id}: {len(store)} of {layers} layers reported queries and keys; "
            "this architecture does not use transformers' attention interface"
        )
    if any(store[i][3] for i in range(layers)):
        raise CaptureError(
            f"{adapter.model_id}: the model passed an attention mask that q·k, the causal order and "
            "its window do not hold"
        )
    causal = adapter.family == "causal"
    return QKCapture(
        model_id=adapter.model_id,
        queries=[store[i][0] for i in range(layers)],
        keys=[store[i][1] for i in range(layers)],
        scaling=[store[i][2] for i in range(layers)],
        causal=causal,
        variants=[store[i][4] for i in range(layers)],
        tokens=list(src.tokens),
        special=list(src.special),
        notices=notices,
    )


def store_bytes(store: dict) -> int:
    """Bytes held by a raw store (benchmarks)."""
    return sum(q.nbytes + k.nbytes for q, k, *_ in store.values())
