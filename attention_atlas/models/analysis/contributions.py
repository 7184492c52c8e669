"""The contribution graph of a causal LM (Ferrando & Voita 2024, "Information flow routes"), as the
LLM Transparency Tool defines it, for any causal LM whose blocks add into the residual linearly.

    result = contributions(adapter, "The capital of France is")     # adapter-level, text in
    result.attn[l, h, i, j]      # head h of layer l, moving token j into token i's residual
    result.attn_residual[l, i]   # the residual itself, into the residual after attention
    result.ffn[l, i], result.ffn_residual[l, i]   # the feed-forward block and the residual, after it
    graph = routes(result, position=-1, threshold=0.04)   # plain nodes and edges for a page

In layer ``l`` the residual after attention is ``y_i = x_i + Σ_h Σ_{j≤i} A[h,i,j]·(v_j + b_V)·W_O[h]
+ b_O`` (grouped key-value heads repeated to their query heads). A part's contribution to a whole
``y`` is ``max(1e-5, ‖y‖₁ − ‖y − part‖₁)``, normalised over the parts (the heads' ``(h, j)`` with
``j ≤ i``, and the residual ``x_i`` as one part; the output bias is in the whole, not a part). The
feed-forward block the same: parts its output and the residual after attention, whole the block's
output. The LLM Transparency Tool also counts the future positions ``j > i`` as parts (zero, so
``1e-5`` each in the normaliser); ``count_future=True`` does the same.

Nothing names a model family. The model is read by one short probe forward of a twin that shares
its weights and runs the model's own eager attention through transformers' attention interface
(``HEAD_VALUES`` and ``PROBS`` capture points: the values, bias in, and the probabilities). Found by
numbers, once per model (``plan``): the blocks (``lens.find_blocks``); in each, the attention module
(the one that called the interface), its output projection (the module inside it that reads the
heads' mixed values and writes the attention output), and the feed-forward module (the one whose
output, added to the block's input and the attention output, is the block's output). A model whose
blocks do not add that way (a norm on the attention output before the residual add, as Gemma 2/3
and OLMo-2 do), whose attention output is not one linear map of the heads' mixed values, or whose
feed-forward reads the block's input rather than the residual after attention (a parallel block:
GPT-J, Phi-1, GPT-NeoX's default) is refused in one line that says which.

The ``[tokens, tokens, heads, d_model]`` tensor is never built. With ``s = sign(y_i)``, exactly,
``‖y_i‖₁ − ‖y_i − a·p‖₁ = a (s·p) − 2 Σ_d relu(a s_d p_d − |y_id|)``: the first term is one matmul
per head; the second is non-zero only in dimensions where some part outweighs the residual
(``a|p_d| > |y_d|``), found from a bound ``(Σ_j a⁴|p_jd|⁴)^¼ ≥ max_j a|p_jd|`` (a matmul too) and
summed over those dimensions only, a block of query rows at a time. The residual's and the
feed-forward's parts are computed per element the same way (``sign(y_d)·part_d`` where ``y_d`` and
``y_d − part_d`` share a sign, else ``2|y_d| − |part_d|``), summed and normalised in float64: never
``‖y‖₁ − ‖y − part‖₁`` as two nearly equal float32 sums, which lost up to 3e-4 where a part is small
beside ``y`` (an output bias outweighing the heads' parts, issue 40). Every array equals a float64
evaluation of the definition on the same captured parts to 1e-5 (``tests/unit/test_contributions.py``).
"""

from __future__ import annotations

import math
import sys
import threading
import weakref
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import torch

from attention_atlas.i18n import later
from attention_atlas.models import capture_points as points
from attention_atlas.models.analysis.lens import _close, _first, _recorder, find_blocks

EPS = 1e-5  # the LLM Transparency Tool's floor of a contribution
ATTENTION = "atlas_contributions"
MAX_FLOATS = 1 << 23  # elements of one block's correction tensor (32 MB of float32)
PROBE = 8


class ContributionError(ValueError):
    """A model or request the contribution graph cannot serve: one line that says why."""


# -- the attention function and the plan ------------------------------------------------------------


def _attention(module, query, key, value, attention_mask, **kwargs):
    """transformers' attention interface: the model's own eager attention (the function its modeling
    file defines), reporting the probabilities and the values it was handed."""
    eager = getattr(sys.modules[type(module).__module__], "eager_attention_forward", None)
    if eager is None:
        raise ContributionError(f"{type(module).__name__} has no eager attention to read probabilities from")
    out, probs = eager(module, query, key, value, attention_mask, **kwargs)
    points.report(module, probs=probs[0], head_values=value[0])
    return out, probs


def _twin(model: torch.nn.Module) -> torch.nn.Module:
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, eager_mask

    from attention_atlas.models.adapters.capture import _twin as twin_of

    AttentionInterface.register(ATTENTION, _attention)
    AttentionMaskInterface.register(ATTENTION, eager_mask)  # the eager function adds a float mask
    return twin_of(model, next(model.parameters()).device, ATTENTION)


@dataclass(frozen=True)
class Layer:
    block: torch.nn.Module
    attention: torch.nn.Module
    out_proj: torch.nn.Module  # reads the heads' mixed values [n, heads · d], writes the attention output
    ffn: torch.nn.Module


@dataclass(frozen=True)
class Plan:
    twin: torch.nn.Module
    layers: tuple[Layer, ...]
    heads: int


_PLANS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def _hook_all(modules, keep) -> list:
    """Forward hooks keeping each module's (input, output) tensors, batch item 0."""

    def hook(module, args, kwargs, out):
        x = args[0] if args else kwargs.get("hidden_states")
        y = _first(out)
        if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor):
            keep(module, (x[0].detach(), y[0].detach()))

    return [m.register_forward_hook(hook, with_kwargs=True) for m in modules]


def _probe(
    model: torch.nn.Module, twin: torch.nn.Module, blocks: tuple, name: str
) -> tuple[dict, dict, dict]:
    """One short forward: every module's (input, output) inside the blocks, and the attention calls;
    the twin must compute what the model does."""
    seen: dict = {}
    hooks = _hook_all([m for b in blocks for m in b.modules()], _recorder(seen))
    vocab = twin.get_input_embeddings().weight.shape[0]
    ids = (torch.arange(PROBE) * 7 + 1).remainder(vocab).unsqueeze(0).to(next(twin.parameters()).device)
    try:
        with torch.no_grad(), points.recording(points.PROBS, points.HEAD_VALUES) as rec:
            got = _first(getattr(twin, "base_model", twin)(input_ids=ids, return_dict=False))
            own = _first(getattr(model, "base_model", model)(input_ids=ids, return_dict=False))
    finally:
        for h in hooks:
            h.remove()
    if not _close(got, own):
        raise ContributionError(
            f"{name}: its attention does not run the same through transformers' interface"
        )
    return seen, rec[points.PROBS], rec[points.HEAD_VALUES]


def plan(model: torch.nn.Module, name: str = "the model") -> Plan:
    """The twin, and in each block its attention, output projection and feed-forward, found and
    checked once per model; refuses a model whose blocks do not add into the residual linearly."""
    with _LOCK:
        if model in _PLANS:
            return _PLANS[model]
    twin = _twin(model)
    blocks = find_blocks(twin, name)
    seen, probs, values = _probe(model, twin, blocks, name)
    layers = tuple(_layer(block, seen, probs, values, name) for block in blocks)
    heads = next(iter(probs.values())).shape[0]
    found = Plan(twin, layers, heads)
    with _LOCK:
        _PLANS[model] = found
    return found


def _layer(block, seen: dict, probs: dict, values: dict, name: str) -> Layer:
    attention = next((m for m in block.modules() if m in probs), None)
    if attention is None or block not in seen:
        raise ContributionError(f"{name}: a block calls no attention through transformers' interface")
    x_in, out = seen[block]
    attn_out = seen[attention][1]
    mid = x_in + attn_out
    inside = {id(m) for m in attention.modules()}
    others = [m for m in block.modules() if id(m) not in inside and m is not block and m in seen]
    matches = [m for m in others if seen[m][1].shape == out.shape and _close(mid + seen[m][1], out)]
    if not matches:
        raise ContributionError(_why_not_additive(name, others, seen, attn_out))
    ffn = max(matches, key=_size)  # the feed-forward itself, not a dropout passing its output on
    _check_ffn_reads_mid(name, ffn, others, seen, x_in, mid)
    mixed = _mixed(probs[attention], values[attention])
    out_proj = next(
        (
            m
            for m in attention.modules()
            if m in seen and _close(seen[m][0], mixed) and _close(seen[m][1], attn_out)
        ),
        None,
    )
    if out_proj is None:
        raise ContributionError(
            f"{name}: its attention output is not one linear map of the heads' attention-weighted values"
            " (something acts between them), so it does not split into per-head parts"
        )
    _check_heads_add_up(name, out_proj, probs[attention], values[attention], attn_out)
    return Layer(block, attention, out_proj, ffn)


def _size(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def _why_not_additive(name: str, others: list, seen: dict, attn_out: torch.Tensor) -> str:
    after = next(
        (m for m in others if _close(seen[m][0], attn_out) and not _close(seen[m][1], attn_out)), None
    )
    if after is not None:
        return (
            f"{name}: its blocks apply {type(after).__name__} to the attention output before adding it to"
            " the residual, so the residual is not a sum of the heads' parts and the contribution graph"
            " is not defined for it"
        )
    return (
        f"{name}: its blocks' output is not their input plus the attention output plus one feed-forward"
        " output, so the contribution graph is not defined for it"
    )


def _check_ffn_reads_mid(name, ffn, others, seen, x_in, mid) -> None:
    """The feed-forward must read the residual after attention (or a module of it), not the block's input."""
    x_ffn = seen[ffn][0]
    if _close(x_ffn, mid):
        return
    inside = {id(m) for m in ffn.modules()}
    sources = [seen[m][0] for m in others if id(m) not in inside and _close(seen[m][1], x_ffn)]
    if any(_close(s, mid) for s in sources):
        return
    if _close(x_ffn, x_in) or any(_close(s, x_in) for s in sources):
        raise ContributionError(
            f"{name}: its blocks run attention and the feed-forward side by side on the block's input"
            " (a parallel block), so the feed-forward does not read the residual after attention and"
            " the contribution graph's routes do not apply"
        )
    raise ContributionError(
        f"{name}: its feed-forward reads neither the residual after attention nor a norm of it"
    )


def _mixed(probs: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """The heads' attention-weighted values ``[n, heads · d]`` as the output projection reads them."""
    v = _repeat(values, probs.shape[0])
    return (probs @ v).transpose(0, 1).reshape(probs.shape[1], -1)


def _repeat(values: torch.Tensor, heads: int) -> torch.Tensor:
    """Grouped key-value heads ``[kv, n, d]`` repeated to their query heads ``[heads, n, d]``."""
    return values.repeat_interleave(heads // values.shape[0], dim=0) if values.shape[0] != heads else values


def head_parts(
    out_proj: torch.nn.Module, values: torch.Tensor, heads: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(P [heads, n, d_model], bias [d_model])``: each head's value of each token through its slice of
    the output projection, ``(v_j + b_V)·W_O[h]``, found by running the projection itself. Where the
    bias outweighs the parts, the values are scaled up by a power of two (exact) before the projection
    and the parts down after, so that subtracting the bias loses none of their digits."""
    v = _repeat(values, heads).float()  # [H, n, d]
    h, n, d = v.shape
    x = torch.zeros(h, n, h * d, dtype=v.dtype, device=v.device)
    for k in range(h):
        x[k, :, k * d : (k + 1) * d] = v[k]
    with torch.no_grad():
        bias = _first(out_proj(torch.zeros(1, h * d, dtype=v.dtype, device=v.device)))[0]
        parts = _first(out_proj(x)) - bias
        ratio = float(bias.abs().max()) / max(float(parts.abs().max()), torch.finfo(v.dtype).tiny)
        if ratio > 1 / 256 and math.isfinite(ratio):
            scale = 2.0 ** min(100, math.ceil(math.log2(ratio)) + 8)  # the parts 256 × the bias
            parts = (_first(out_proj(x * scale)) - bias) / scale
        return parts, bias


def _check_heads_add_up(name, out_proj, probs, values, attn_out) -> None:
    parts, bias = head_parts(out_proj, values, probs.shape[0])
    total = torch.einsum("hij,hjd->id", probs.float(), parts) + bias
    if not _close(total, attn_out.float()):
        raise ContributionError(
            f"{name}: its attention output is not the sum of the heads' parts and a bias (its output"
            " projection is not linear), so it does not split into per-head parts"
        )


# -- the run ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Contributions:
    """Every layer's contributions for one input (float32 numpy)."""

    attn: np.ndarray  # [layers, heads, n, n]: zero where j > i
    attn_residual: np.ndarray  # [layers, n]
    ffn: np.ndarray  # [layers, n]
    ffn_residual: np.ndarray  # [layers, n]
    tokens: list[str]
    attention: np.ndarray | None = None  # [layers, heads, n, n]: the probabilities, when kept

    @property
    def layers(self) -> int:
        return self.attn.shape[0]

    @property
    def heads(self) -> int:
        return self.attn.shape[1]

    @property
    def positions(self) -> int:
        return self.attn.shape[2]


def _capture(found: Plan, ids: torch.Tensor) -> tuple[dict, dict, dict]:
    """One forward of the twin: each block's input and output, each attention and feed-forward output."""
    seen: dict = {}
    keep = _recorder(seen)
    hooks = []
    for layer in found.layers:
        hooks.append(
            layer.block.register_forward_pre_hook(
                lambda m, a, kw: keep(("in", m), (a[0] if a else kw["hidden_states"])[0].detach()),
                with_kwargs=True,
            )
        )
        for tag, module in (("out", layer.block), ("attn", layer.attention), ("ffn", layer.ffn)):
            hooks.append(
                module.register_forward_hook(lambda m, a, o, tag=tag: keep((tag, m), _first(o)[0].detach()))
            )
    try:
        with torch.no_grad(), points.recording(points.PROBS, points.HEAD_VALUES) as rec:
            getattr(found.twin, "base_model", found.twin)(input_ids=ids)
    finally:
        for h in hooks:
            h.remove()
    return seen, rec[points.PROBS], rec[points.HEAD_VALUES]


def contributions_of(
    model: torch.nn.Module,
    ids: torch.Tensor,
    tokens: list[str] | None = None,
    name: str = "the model",
    keep_attention: bool = False,
    count_future: bool = False,
) -> Contributions:
    """The contributions of every layer for ``ids`` ``[1, n]``."""
    found = plan(model, name)
    device = next(found.twin.parameters()).device
    seen, probs, values = _capture(found, ids.to(device))
    n_layers, n = len(found.layers), ids.shape[1]
    attn = np.zeros((n_layers, found.heads, n, n), np.float32)
    kept = np.zeros_like(attn) if keep_attention else None
    attn_res, ffn, ffn_res = (np.zeros((n_layers, n), np.float32) for _ in range(3))
    for k, layer in enumerate(found.layers):
        x_in = seen.pop(("in", layer.block)).float()
        mid = x_in + seen.pop(("attn", layer.attention)).float()
        a, v = probs.pop(layer.attention).float(), values.pop(layer.attention)
        parts, _ = head_parts(layer.out_proj, v, found.heads)
        attn[k], attn_res[k] = (
            t.cpu().numpy() for t in attention_contributions(x_in, mid, a, parts, count_future)
        )
        if kept is not None:
            kept[k] = a.cpu().numpy()
        del a, v, parts
        out = seen.pop(("out", layer.block)).float()
        ffn_part = seen.pop(("ffn", layer.ffn)).float()
        ffn[k], ffn_res[k] = (
            t.cpu().numpy() for t in normalised(torch.stack([ffn_part, mid]), out, torch.stack([mid, ffn_part]))
        )
    return Contributions(attn, attn_res, ffn, ffn_res, list(tokens or []), kept)


def _raw(whole: torch.Tensor, part: torch.Tensor, rest: torch.Tensor | None = None) -> torch.Tensor:
    """``max(EPS, ‖whole‖₁ − ‖whole − part‖₁)`` over the last axis (float64), without subtracting the
    two nearly equal norms a small part gives: per element ``sign(wholeᵢ)·partᵢ`` where ``wholeᵢ``
    and ``restᵢ = wholeᵢ − partᵢ`` share a sign, else ``2|wholeᵢ| − |partᵢ|`` (each at most ``|partᵢ|``),
    summed in float64. ``rest`` is the other parts' sum when known (not rounded by a subtraction)."""
    rest = whole - part if rest is None else rest
    same = ((whole > 0) & (rest > 0)) | ((whole < 0) & (rest < 0))
    each = torch.where(same, torch.where(whole > 0, part, -part), 2 * whole.abs() - part.abs())
    return each.sum(-1, dtype=torch.float64).clamp_min(EPS)


def normalised(parts: torch.Tensor, whole: torch.Tensor, rests: torch.Tensor | None = None) -> torch.Tensor:
    """Contributions of ``parts [k, ..., d]`` to ``whole [..., d]``, normalised over the k parts (float32);
    ``rests [k, ..., d]``, when known, each ``whole − parts[k]`` as the other parts' sum."""
    raw = _raw(whole, parts, rests)
    return (raw / raw.sum(0, keepdim=True)).float()


def attention_contributions(
    x_in: torch.Tensor,
    mid: torch.Tensor,
    probs: torch.Tensor,
    parts: torch.Tensor,
    count_future: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(attn [H, n, n], residual [n])``: each part ``probs[h, i, j] · parts[h, j]`` (j ≤ i) and the
    residual ``x_in`` into ``mid``, normalised per query position ``i``."""
    heads, n, _ = parts.shape
    sign, absy = torch.where(mid >= 0, 1.0, -1.0), mid.abs()  # shared by every head
    raw = torch.stack([_head_raw(sign, absy, probs[h], parts[h]) for h in range(heads)])
    causal = torch.ones(n, n, dtype=torch.bool, device=mid.device).tril()
    raw = torch.where(causal, raw.double().clamp_min(EPS), torch.zeros((), dtype=torch.float64, device=mid.device))
    res = _raw(mid, x_in)
    total = raw.sum((0, 2)) + res
    if count_future:
        total = total + EPS * heads * torch.arange(n - 1, -1, -1, device=mid.device)
    return (raw / total[None, :, None]).float(), (res / total).float()


def _fourth(x: torch.Tensor) -> torch.Tensor:
    x = x * x
    return x.mul_(x)


def _head_raw(s: torch.Tensor, absy: torch.Tensor, a: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    """``‖y_i‖₁ − ‖y_i − a_ij p_j‖₁`` for every ``i, j`` of one head (before the floor), exactly, from
    ``s = sign(y)`` and ``|y|``: ``a (s·p) − 2 Σ_d relu(a s_d p_d − |y_d|)``, the second sum only over
    dimensions where ``max_j a_ij |p_jd|`` may exceed ``|y_id|``."""
    linear = a * (s @ p.T)
    tiny = torch.finfo(p.dtype).tiny
    scale = p.abs().amax().clamp_min(tiny)
    bound = (_fourth(a) @ _fourth(p / scale)).sqrt_().sqrt_().mul_(scale)  # ≥ max_j a_ij |p_jd|
    ratio = absy / bound.clamp_min_(tiny)
    active = (ratio <= 1.001).sum(1)  # [n]: dimensions that may need the correction, per row
    n = absy.shape[0]
    pt = p.T.contiguous()  # [d, n]: a dimension's values over the keys, gathered per row
    rows = max(1, MAX_FLOATS // (n * absy.shape[1]))  # small blocks: each k fits its own rows
    for i0 in range(0, n, rows):
        i1 = min(n, i0 + rows)
        k = int(active[i0:i1].max())
        if k:
            linear[i0:i1, :i1] -= 2 * _correction(
                absy[i0:i1], s[i0:i1], a[i0:i1, :i1], pt[:, :i1], ratio[i0:i1], k
            )
    return linear


def _correction(absy, s, a, pt, ratio, k: int) -> torch.Tensor:
    """``Σ_d relu(a_ij s_id p_jd − |y_id|)`` over each row's ``k`` dimensions of smallest ratio."""
    idx = ratio.topk(k, dim=1, largest=False).indices  # [B, k]
    ys, ss = absy.gather(1, idx), s.gather(1, idx)
    ps = pt[idx]  # [B, k, m], contiguous
    return ps.mul_(ss[..., None]).mul_(a[:, None, :]).sub_(ys[..., None]).clamp_min_(0).sum(1)


# -- from text --------------------------------------------------------------------------------------


def contributions(adapter, text: str, **options) -> Contributions:
    """The contributions of ``text`` as the adapter encodes it (``options`` as ``contributions_of``)."""
    model = getattr(adapter, "model", None)
    if getattr(adapter, "family", None) != "causal" or not isinstance(model, torch.nn.Module):
        raise ContributionError(
            f"{adapter.model_id} is not a causal language model: it has no contribution graph"
        )
    plan(model, adapter.model_id)  # refuse before tokenizing
    src = adapter.encode(text)
    return contributions_of(model, src.ids, list(src.tokens), adapter.model_id, **options)


# -- the routes graph, per-head views ---------------------------------------------------------------


class Node(NamedTuple):
    """A residual state: ``("x", l, i)`` enters block l at token i (``l = layers``: the output),
    ``("mid", l, i)`` is after block l's attention."""

    kind: str
    layer: int
    position: int


class Edge(NamedTuple):
    source: Node
    target: Node
    kind: str  # "attention" (all heads of one layer, token j → i), "residual" or "ffn"
    weight: float  # renormalised over the target's kept incoming edges
    contribution: float  # the normalised contribution before the threshold


@dataclass(frozen=True)
class Routes:
    """The routes from one token's output back to the input, above a threshold."""

    nodes: list[Node]
    edges: list[Edge]
    threshold: float

    def as_dict(self) -> dict:
        return {
            "threshold": self.threshold,
            "nodes": [n._asdict() for n in self.nodes],
            "edges": [
                e._asdict() | {"source": e.source._asdict(), "target": e.target._asdict()} for e in self.edges
            ],
        }


def incoming(result: Contributions, node: Node) -> list[tuple[Node, str, float]]:
    """Every edge into ``node``: ``(source, kind, contribution)``."""
    layer, i = node.layer, node.position
    if node.kind == "x":
        if layer == 0:
            return []
        mid = Node("mid", layer - 1, i)
        return [
            (mid, "residual", float(result.ffn_residual[layer - 1, i])),
            (mid, "ffn", float(result.ffn[layer - 1, i])),
        ]
    heads = result.attn[layer, :, i, : i + 1].sum(0)
    edges = [(Node("x", layer, i), "residual", float(result.attn_residual[layer, i]))]
    return edges + [(Node("x", layer, j), "attention", float(w)) for j, w in enumerate(heads)]


def routes(result: Contributions, position: int = -1, threshold: float = 0.04) -> Routes:
    """The graph of routes from token ``position``'s output back to the input: from each reached node
    the incoming edges of at least ``threshold``, renormalised to sum to 1 per node."""
    n = result.positions
    if not -n <= position < n:
        raise ContributionError(
            later(
                "position {position} is out of range: the input has positions 0..{last}",
                position=position,
                last=n - 1,
            )
        )
    if not 0 <= threshold < 1:
        raise ContributionError(
            later("threshold {threshold}: give a contribution between 0 and 1 (not 1)", threshold=threshold)
        )
    start = Node("x", result.layers, position % n)
    nodes, edges, todo = {start: None}, [], [start]
    while todo:
        node = todo.pop(0)
        kept = [e for e in incoming(result, node) if e[2] >= threshold]
        total = sum(w for _, _, w in kept)
        for source, kind, w in kept:
            edges.append(Edge(source, node, kind, w / total, w))
            if source not in nodes:
                nodes[source] = None
                todo.append(source)
    return Routes(list(nodes), edges, threshold)


def heads_of_edge(result: Contributions, layer: int, target: int, source: int) -> list[tuple[int, float]]:
    """The heads of ``layer`` ranked by their contribution to the edge token ``source`` → ``target``."""
    _check(result, layer, 0, target, source)
    c = result.attn[layer, :, target, source]
    return [(int(h), float(c[h])) for h in np.argsort(-c, kind="stable")]


def head_maps(result: Contributions, layer: int, head: int) -> tuple[np.ndarray, np.ndarray | None]:
    """``(contributions [n, n], attention [n, n] or None)`` of one head: its contribution map beside its
    attention map (kept when run with ``keep_attention=True``)."""
    _check(result, layer, head, 0, 0)
    kept = result.attention
    return result.attn[layer, head], None if kept is None else kept[layer, head]


def _check(result: Contributions, layer: int, head: int, target: int, source: int) -> None:
    for what, value, size in (
        ("layer", layer, result.layers),
        ("head", head, result.heads),
        ("position", target, result.positions),
        ("position", source, result.positions),
    ):
        if not 0 <= value < size:
            raise ContributionError(f"{what} {value} is out of range: give 0..{size - 1}")
    if source > target:
        raise ContributionError(
            f"token {source} comes after token {target}: a causal model cannot move it there"
        )
