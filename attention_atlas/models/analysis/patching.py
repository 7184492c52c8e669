"""Activation patching (causal tracing) of any causal LM: which components cause an answer.

    result = patching(adapter, "The Eiffel Tower is in the city of", "The Colosseum is in the city of",
                      " Paris", " Rome")                      # denoising: clean activations into the corrupted run
    result.resid[l, p]     # the residual stream entering block l at position p, patched
    result.attn_out[l, p], result.mlp_out[l, p]   # one attention / feed-forward block's output at one position
    result.heads[l, h]     # one head's output (before the output projection), at every position
    result.pattern[l, h]   # one head's attention weights, at every position (on the run's own values)
    head_positions(adapter, ..., layer=l)          # [heads, positions]: each head of layer l at one position

Two runs of the same length: the clean prompt gives the answer, the corrupted one another. The
metric is the logit difference ``logit(answer) − logit(wrong)`` at the last position; each patched run
is normalised so that 0 is the corrupted run and 1 the clean run. *Denoising* copies one clean
activation into the corrupted run (the effect: how much of the answer comes back); *noising* copies a
corrupted one into the clean run (the effect is ``1 −`` the same: how much of the answer is lost).
Patching an activation that equals the run's own changes nothing: such a patch is not run, its
effect is exactly 0, and a residual stream patched into exactly the other run's is exactly 1.

Nothing names a model family. Found in the model, once per model (``plan``), on a capture twin that
shares its weights and runs the model's own eager attention through transformers' attention
interface (``ATTENTION``): the blocks (``lens.find_blocks``); in each, the attention module (the one
that calls the interface) and the feed-forward (the block's largest child besides it: ``mlp`` in
every Hugging Face decoder); the readout (``lens.readout``: the final norm and head). The attention
function receives each head's queries, keys and values, so the pattern and a head's output (what the
function returns, reshaped into the output projection's input) are patched there.

Fast: a patched run starts where it first differs from the run it patches. A patch at layer ``l``
leaves the blocks before ``l`` unchanged, so the run starts at block ``l`` from the cached residual
stream, calling the blocks themselves with the arguments the model gave them in the cached run; a
patch at position ``p`` leaves the positions before ``p`` unchanged, so the run carries only positions
``p..n-1``, the attention reading the cached keys and values of the positions before. Runs that start
at the same position are one batch, each row joining at its own block. One probe per model checks that
a run resumed this way reproduces the model's own; a model where it does not is refused in one line,
as is one whose attention does not go through transformers' interface, a model that is not a causal
LM, or whose logits are not its head on its final norm. ``tests/unit/test_patching.py`` holds every
array to a direct, one-forward-per-patch implementation with plain hooks to 1e-4.
"""

from __future__ import annotations

import sys
import threading
import weakref
from collections import defaultdict
from contextvars import ContextVar
from dataclasses import dataclass, field

import numpy as np
import torch

from attention_atlas.i18n import later
from attention_atlas.models.analysis import lens as lens_mod
from attention_atlas.models.analysis.lens import _close, _first

ATTENTION = "atlas_patching"
KINDS = ("resid", "attn_out", "mlp_out", "heads", "pattern")
DIRECTIONS = ("denoise", "noise")
TOKEN_ROWS = 4096  # batch rows × positions of one batched run (memory: SmolLM2's MLP ~25 MB per 1k)
PROBE = 8
MIN_GAP = 1e-6  # |metric_clean − metric_corrupt| below this has nothing to normalise by


class PatchError(ValueError):
    """A model or request activation patching cannot serve: one line that says why."""


# -- the plan: twin, blocks, attention, feed-forward ------------------------------------------------


@dataclass
class _Pass:
    """What this thread's forward through the twin does: record a run, or resume one with edits."""

    start: int = 0  # the first position the batch carries
    record: _Run | None = None
    prefix: _Run | None = None  # the run whose keys and values stand for positions < start
    # (kind, layer) -> [(row, head or None, positions (absolute), values)]
    edits: dict = field(default_factory=lambda: defaultdict(list))
    callers: list | None = None  # the probe that finds the attention modules: who called


_STATE: ContextVar[_Pass | None] = ContextVar("atlas_patching", default=None)


@dataclass
class _Run:
    """One prompt's run through the twin: what a patch copies, and where a patched run starts from."""

    resid: list = field(default_factory=list)  # [layer] -> [n, d]: entering the block
    calls: list = field(default_factory=list)  # [layer] -> (args, kwargs, hidden as keyword)
    attn_out: dict = field(default_factory=dict)  # layer -> [n, d]
    mlp_out: dict = field(default_factory=dict)
    heads: dict = field(default_factory=dict)  # layer -> [n, H, dh]: the attention function's output
    pattern: dict = field(default_factory=dict)  # layer -> [H, n, n]
    keys: dict = field(default_factory=dict)  # layer -> [kv, n, dh]
    values: dict = field(default_factory=dict)
    final: torch.Tensor | None = None  # [n, d]: the last block's output
    metric: float = 0.0
    recomputed: bool = True  # each attention output was its weights times its values


@dataclass(frozen=True)
class Plan:
    twin: torch.nn.Module
    blocks: tuple[torch.nn.Module, ...]
    attention: tuple[torch.nn.Module, ...]
    ffn: tuple[torch.nn.Module, ...]
    readout: lens_mod.Readout
    heads: int
    layer_of: dict  # id(attention or ffn module) -> layer


_PLANS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def _attention(module, query, key, value, attention_mask, **kwargs):
    """transformers' attention interface: the model's own eager attention, with this thread's pass
    recording the run, prepending the cached keys and values of the positions before the batch, and
    patching a head's pattern or output."""
    eager = getattr(sys.modules[type(module).__module__], "eager_attention_forward", None)
    if eager is None:
        raise PatchError(f"{type(module).__name__} has no eager attention to patch")
    state = _STATE.get()
    if state is None:
        return eager(module, query, key, value, attention_mask, **kwargs)
    if state.callers is not None:
        state.callers.append(module)
        return eager(module, query, key, value, attention_mask, **kwargs)
    layer = _LAYER_OF[id(module)]
    q = query.shape[-2]
    if state.prefix is not None and state.start:
        batch = query.shape[0]
        k0 = state.prefix.keys[layer][None, :, : state.start].expand(batch, -1, -1, -1)
        v0 = state.prefix.values[layer][None, :, : state.start].expand(batch, -1, -1, -1)
        key, value = torch.cat([k0, key], 2), torch.cat([v0, value], 2)
    if isinstance(attention_mask, torch.Tensor) and attention_mask.shape[-2] != q:
        attention_mask = attention_mask[..., -q:, :]
    out, probs = eager(module, query, key, value, attention_mask, **kwargs)
    pattern = state.edits.get(("pattern", layer))
    if pattern:  # written in place: the eager function's probabilities and output are its own new tensors
        for row, head, pos, vals in pattern:
            probs[row, head, pos - state.start] = vals
        out = (probs @ _repeat(value, probs.shape[1])).transpose(1, 2).contiguous()
    heads = state.edits.get(("heads", layer))
    if heads:
        for row, head, pos, vals in heads:
            out[row, pos - state.start, head] = vals
    if state.record is not None:
        run = state.record
        run.keys[layer], run.values[layer] = key[0].detach(), value[0].detach()
        run.pattern[layer], run.heads[layer] = probs[0].detach(), out[0].detach()
        run.recomputed = run.recomputed and _close(
            (probs @ _repeat(value, probs.shape[1])).transpose(1, 2), out
        )
    return out, probs


def _repeat(values: torch.Tensor, heads: int) -> torch.Tensor:
    """Grouped key-value heads ``[B, kv, n, d]`` repeated to their query heads."""
    kv = values.shape[1]
    return values.repeat_interleave(heads // kv, dim=1) if kv != heads else values


_LAYER_OF: dict = {}  # id(twin attention or feed-forward module) -> layer, for every plan
_HOOKED: weakref.WeakSet = weakref.WeakSet()  # twins whose modules carry this module's hooks


def _output_hook(kind: str):
    """A forward hook on an attention or feed-forward module: records its output in a recorded run,
    and writes the patched positions of the rows this pass edits."""

    def hook(module, args, out):
        state = _STATE.get()
        if state is None:
            return None
        layer = _LAYER_OF[id(module)]
        y = _first(out)
        if state.record is not None:
            getattr(state.record, kind)[layer] = y[0].detach()
        edits = state.edits.get((kind, layer))
        if not edits:
            return None
        y = y.clone()
        for row, _, pos, vals in edits:
            y[row, pos - state.start] = vals
        return (y, *out[1:]) if isinstance(out, tuple) else y

    return hook


def _block_hook(module, args, kwargs):
    """Records, in a recorded run, what each block is handed: its input and every other argument."""
    state = _STATE.get()
    if state is None or state.record is None:
        return None
    in_kw = not args
    hidden = kwargs["hidden_states"] if in_kw else args[0]
    rest = {k: v for k, v in kwargs.items() if k != "hidden_states"}
    state.record.resid.append(hidden[0].detach())
    state.record.calls.append((tuple(args[1:]), rest, in_kw))
    return None


def _twin(model: torch.nn.Module) -> torch.nn.Module:
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, eager_mask

    from attention_atlas.models.adapters.capture import _twin as twin_of

    AttentionInterface.register(ATTENTION, _attention)
    AttentionMaskInterface.register(ATTENTION, eager_mask)  # the eager function adds a float mask
    return twin_of(model, next(model.parameters()).device, ATTENTION)


def _size(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def plan(model: torch.nn.Module, name: str = "the model") -> Plan:
    """The twin and, in each block, its attention and feed-forward, found and checked once per model."""
    with _LOCK:
        if model in _PLANS:
            return _PLANS[model]
    try:
        readout = lens_mod.readout(model, name)
        twin = _twin(model)
        blocks = lens_mod.find_blocks(twin, name)
    except lens_mod.LensError as err:
        raise PatchError(str(err)) from err
    callers: list = []
    ids = _probe_ids(twin)
    token = _STATE.set(_Pass(callers=callers))
    try:
        with torch.no_grad():
            getattr(twin, "base_model", twin)(input_ids=ids, use_cache=False)
    finally:
        _STATE.reset(token)
    attention, ffn = [], []
    for block in blocks:
        inside = [m for m in callers if any(m is x for x in block.modules())]
        if len(inside) != 1:
            raise PatchError(
                f"{name}: its blocks do not each call attention once through transformers' attention"
                " interface, so their heads cannot be reached"
            )
        attention.append(inside[0])
        children = [
            c for c in block.children() if not any(m is inside[0] for m in c.modules()) and _size(c)
        ]
        if not children:
            raise PatchError(f"{name}: its blocks hold no feed-forward beside their attention")
        ffn.append(max(children, key=_size))
    layer_of = {id(m): k for k, m in enumerate(attention)} | {id(m): k for k, m in enumerate(ffn)}
    found = Plan(twin, blocks, tuple(attention), tuple(ffn), readout, 0, layer_of)
    with _LOCK:
        _LAYER_OF.update(layer_of)
        if twin not in _HOOKED:  # once per twin: they act only inside this module's passes
            _HOOKED.add(twin)
            for k in range(len(blocks)):
                blocks[k].register_forward_pre_hook(_block_hook, with_kwargs=True)
                attention[k].register_forward_hook(_output_hook("attn_out"))
                ffn[k].register_forward_hook(_output_hook("mlp_out"))
    found = _check(model, found, ids, name)
    with _LOCK:
        _PLANS[model] = found
    return found


def _probe_ids(twin: torch.nn.Module) -> torch.Tensor:
    vocab = twin.get_input_embeddings().weight.shape[0]
    return (torch.arange(PROBE) * 7 + 1).remainder(vocab).unsqueeze(0).to(next(twin.parameters()).device)


def _check(model: torch.nn.Module, found: Plan, ids: torch.Tensor, name: str) -> Plan:
    """The twin must compute the model's logits, and a run resumed mid-way must reproduce the run."""
    run = _record(found, ids, None)
    with torch.no_grad():
        own = model(input_ids=ids, use_cache=False).logits[0, -1].float()
        got = found.readout.logits(run.final[-1:])[0]
    if not _close(got, own):
        raise PatchError(f"{name}: its attention does not run the same through transformers' interface")
    if not run.recomputed:
        raise PatchError(
            f"{name}: its attention output is not its attention weights times its values, so a pattern"
            " cannot be patched"
        )
    heads = run.pattern[0].shape[0]
    found = Plan(found.twin, found.blocks, found.attention, found.ffn, found.readout, heads, found.layer_of)
    layer, start = len(found.blocks) // 2, PROBE // 2
    try:
        h = _sweep(found, run, [_Patch("resid", layer, None, (start,), run.resid[layer][start:start + 1])], start)
    except Exception as err:  # a block that cannot be called on its own with what it was handed
        raise PatchError(
            f"{name}: its blocks cannot be run from a cached input ({type(err).__name__}), so a patched"
            " run cannot start mid-way"
        ) from err
    if not _close(h[0], run.final[-1]):
        raise PatchError(
            f"{name}: a run resumed from a block's cached input does not reproduce its own run,"
            " so a patched run cannot start mid-way"
        )
    return found


# -- runs -----------------------------------------------------------------------------------------


def _record(found: Plan, ids: torch.Tensor, pair: tuple[int, int] | None) -> _Run:
    """One full run of ``ids`` ``[1, n]`` through the twin, keeping every activation a patch copies."""
    run = _Run()
    token = _STATE.set(_Pass(record=run))
    keep: list = []
    hook = found.blocks[-1].register_forward_hook(lambda m, a, o: keep.append(_first(o)[0].detach()))
    try:
        with torch.no_grad():
            getattr(found.twin, "base_model", found.twin)(input_ids=ids, use_cache=False)
    finally:
        _STATE.reset(token)
        hook.remove()
    run.final = keep[-1]
    if pair is not None:
        run.metric = float(_metric(found, run.final[-1:], pair)[0])
    return run


@torch.no_grad()
def _metric(found: Plan, h: torch.Tensor, pair: tuple[int, int]) -> torch.Tensor:
    """``logit(answer) − logit(wrong)`` of each row of ``h`` ``[B, d]`` (the last block's output), in
    float64: only the two rows of the head are applied where the head is a plain linear map."""
    r = found.readout
    x = r.norm(h) if r.norm is not None else h
    head = r.head
    if type(head) is torch.nn.Linear:
        idx = torch.tensor(pair, device=h.device)
        bias = head.bias[idx] if head.bias is not None else None
        logits = torch.nn.functional.linear(x, head.weight[idx], bias).float()
        if r.softcap:
            logits = torch.tanh(logits / r.softcap) * r.softcap
    else:
        logits = r.logits(h)[:, list(pair)]
    return (logits[:, 0] - logits[:, 1]).double()


@dataclass(frozen=True)
class _Patch:
    kind: str
    layer: int
    head: int | None
    positions: tuple[int, ...]  # absolute positions written
    values: torch.Tensor  # [len(positions), ...]: what is written there


def _cut(x, n: int, start: int):
    """The arguments a block was handed, cut to positions ``start..n-1``: a tensor with ``n`` positions
    on its second axis (position ids, rotary tables) or a 1-d tensor of ``n`` (cache positions); the
    attention mask keeps all its rows (the attention function takes the last ones)."""
    if isinstance(x, torch.Tensor):
        if x.dim() == 1 and x.shape[0] == n:
            return x[start:]
        if 2 <= x.dim() <= 3 and x.shape[0] == 1 and x.shape[1] == n:
            return x[:, start:]
        return x
    if isinstance(x, tuple | list):
        return type(x)(_cut(v, n, start) for v in x)
    if isinstance(x, dict):
        return {k: _cut(v, n, start) for k, v in x.items()}
    return x


def _sweep(found: Plan, target: _Run, patches: list[_Patch], start: int) -> torch.Tensor:
    """The last block's output at the last position ``[len(patches), d]`` of the target run with each
    patch in a row of its own, every row starting at its patch's layer and at position ``start``."""
    n = target.resid[0].shape[0]
    order = sorted(range(len(patches)), key=lambda i: patches[i].layer)
    state = _Pass(start=start, prefix=target)
    hidden = None
    rows: list[int] = []
    token = _STATE.set(state)
    try:
        with torch.inference_mode():
            for k, block in enumerate(found.blocks):
                state.edits.clear()
                joining = [i for i in order if patches[i].layer == k]
                if joining:
                    new = target.resid[k][start:].unsqueeze(0).repeat(len(joining), 1, 1)
                    for r, i in enumerate(joining):
                        p = patches[i]
                        row = len(rows) + r
                        if p.kind == "resid":
                            new[r, torch.tensor(p.positions) - start] = p.values
                        else:
                            state.edits[(p.kind, k)].append((row, p.head, torch.tensor(p.positions), p.values))
                    rows += joining
                    hidden = new if hidden is None else torch.cat([hidden, new])
                if hidden is None:
                    continue
                args, kwargs, in_kw = target.calls[k]
                if start:
                    args, kwargs = _cut(args, n, start), _cut(kwargs, n, start)
                out = block(*args, hidden_states=hidden, **kwargs) if in_kw else block(hidden, *args, **kwargs)
                hidden = _first(out)
    finally:
        _STATE.reset(token)
    last = hidden[:, -1]
    back = torch.empty_like(last)
    back[torch.tensor(rows)] = last
    return back


def _differs(a: torch.Tensor, b: torch.Tensor) -> int | None:
    """The first index along the first axis where ``a`` and ``b`` differ, or None."""
    ne = (a != b).reshape(a.shape[0], -1).any(1).nonzero()
    return int(ne[0]) if len(ne) else None


# -- the analysis ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Patching:
    """Normalised effects of patching every component (float32; 0 = no effect, 1 = all of it)."""

    tokens_clean: list[str]
    tokens_corrupt: list[str]
    direction: str
    answer: int
    wrong: int
    metric_clean: float  # logit(answer) − logit(wrong) at the last position, raw
    metric_corrupt: float
    resid: np.ndarray | None  # [layers, positions]
    attn_out: np.ndarray | None  # [layers, positions]
    mlp_out: np.ndarray | None  # [layers, positions]
    heads: np.ndarray | None  # [layers, heads]
    pattern: np.ndarray | None  # [layers, heads]
    probs_clean: tuple[float, float] = (0.0, 0.0)  # the answer's and the wrong token's probability
    probs_corrupt: tuple[float, float] = (0.0, 0.0)

    @property
    def differ(self) -> list[int]:
        """The positions where the two prompts' tokens differ."""
        return [i for i, (a, b) in enumerate(zip(self.tokens_clean, self.tokens_corrupt, strict=True)) if a != b]

    def arrays(self) -> dict:
        return {k: getattr(self, k) for k in KINDS if getattr(self, k) is not None}


def _runs_of(
    found: Plan, target: _Run, source: _Run, kinds, layer: int | None = None
) -> list[tuple[str, _Patch]]:
    """Every patch of ``kinds`` copying ``source``'s activation into ``target``, with its kind
    (``"head_positions"``: each head of ``layer`` at one position at a time)."""
    out: list[tuple[str, _Patch]] = []
    n = target.resid[0].shape[0]
    for k in range(len(found.blocks)):
        for kind in ("resid", "attn_out", "mlp_out"):
            if kind in kinds:
                src = source.resid[k] if kind == "resid" else getattr(source, kind)[k]
                out += [(kind, _Patch(kind, k, None, (p,), src[p : p + 1])) for p in range(n)]
        everywhere = tuple(range(n))
        for h in range(found.heads):
            if "heads" in kinds:
                out.append(("heads", _Patch("heads", k, h, everywhere, source.heads[k][:, h])))
            if "pattern" in kinds:
                out.append(("pattern", _Patch("pattern", k, h, everywhere, source.pattern[k][h])))
            if "head_positions" in kinds and k == layer:
                out += [
                    ("head_positions", _Patch("heads", k, h, (p,), source.heads[k][p : p + 1, h]))
                    for p in range(n)
                ]
    return out


def _own(target: _Run, p: _Patch) -> torch.Tensor:
    """What the target run itself has where ``p`` writes."""
    pos = list(p.positions)
    if p.kind == "resid":
        return target.resid[p.layer][pos]
    if p.kind == "heads":
        return target.heads[p.layer][pos, p.head]
    if p.kind == "pattern":
        return target.pattern[p.layer][p.head][pos]
    return getattr(target, p.kind)[p.layer][pos]


def patched_metrics(found: Plan, target: _Run, source: _Run, patches: list[_Patch], pair) -> np.ndarray:
    """The raw metric of the target run with each patch (float64 ``[len(patches)]``): a patch that writes
    what the run has already is the run's own metric, a residual stream made exactly the source's is
    the source's, and the rest run batched by the position where they first differ."""
    result = np.full(len(patches), target.metric, np.float64)
    groups: dict[int, list[int]] = defaultdict(list)
    for i, p in enumerate(patches):
        first = _differs(p.values, _own(target, p))
        if first is None:
            continue
        if p.kind == "resid" and _resid_is_source(target, source, p):
            result[i] = source.metric
            continue
        trimmed = _Patch(p.kind, p.layer, p.head, p.positions[first:], p.values[first:])
        patches[i] = trimmed
        groups[trimmed.positions[0]].append(i)
    for start, members in sorted(groups.items()):
        q = target.resid[0].shape[0] - start
        size = max(1, TOKEN_ROWS // q)
        members.sort(key=lambda i: patches[i].layer)
        for c in range(0, len(members), size):
            chunk = members[c : c + size]
            h = _sweep(found, target, [patches[i] for i in chunk], start)
            result[chunk] = _metric(found, h, pair).cpu().numpy()
    return result


def _resid_is_source(target: _Run, source: _Run, p: _Patch) -> bool:
    rows = (target.resid[p.layer] != source.resid[p.layer]).reshape(len(target.resid[p.layer]), -1).any(1)
    return set(rows.nonzero()[:, 0].tolist()) <= set(p.positions) and bool(
        torch.equal(p.values, source.resid[p.layer][list(p.positions)])
    )


def normalise(raw: np.ndarray, clean: float, corrupt: float, direction: str) -> np.ndarray:
    """0 at the corrupted run's metric, 1 at the clean run's; for noising, 1 minus that."""
    effect = (raw - corrupt) / (clean - corrupt)
    return (1 - effect if direction == "noise" else effect).astype(np.float32) + np.float32(0)  # no -0


def _shape(kind: str, found: Plan, n: int) -> tuple[int, int]:
    return (len(found.blocks), n if kind in ("resid", "attn_out", "mlp_out") else found.heads)


def patching_of(
    model: torch.nn.Module,
    clean: torch.Tensor,
    corrupt: torch.Tensor,
    answer: int,
    wrong: int,
    direction: str = "denoise",
    kinds=KINDS,
    name: str = "the model",
    layer: int | None = None,
) -> dict:
    """The raw metrics and the normalised effect arrays for ``clean`` and ``corrupt`` ids ``[1, n]``:
    ``{"metric_clean", "metric_corrupt", kind: [layers, positions | heads]}``."""
    if direction not in DIRECTIONS:
        raise PatchError(f"direction {direction!r}: give denoise or noise")
    unknown = sorted(set(kinds) - set(KINDS) - {"head_positions"})
    if unknown:
        raise PatchError(f"unknown kinds {unknown}: the kinds are {', '.join(KINDS)}")
    found = plan(model, name)
    device = next(found.twin.parameters()).device
    pair = (int(answer), int(wrong))
    runs = {w: _record(found, ids.to(device), pair) for w, ids in (("clean", clean), ("corrupt", corrupt))}
    m_clean, m_corrupt = runs["clean"].metric, runs["corrupt"].metric
    if abs(m_clean - m_corrupt) < MIN_GAP:
        raise PatchError(
            later(
                "the logit difference is the same on both prompts ({value}): the corruption changes"
                " nothing to restore",
                value=f"{m_clean:.4f}",
            )
        )
    target, source = (runs["corrupt"], runs["clean"]) if direction == "denoise" else (runs["clean"], runs["corrupt"])
    labelled = _runs_of(found, target, source, kinds, layer)
    kind_of, patches = [k for k, _ in labelled], [p for _, p in labelled]
    raw = patched_metrics(found, target, source, patches, pair)
    effect = normalise(raw, m_clean, m_corrupt, direction)
    n = clean.shape[1]
    out: dict = {"metric_clean": m_clean, "metric_corrupt": m_corrupt}
    for kind in kinds:
        picked = np.array([e for e, k in zip(effect, kind_of, strict=True) if k == kind], np.float32)
        if kind == "head_positions":
            out[kind] = picked.reshape(found.heads, n)
        else:
            out[kind] = picked.reshape(_shape(kind, found, n))
    with torch.no_grad():
        for w in ("clean", "corrupt"):
            probs = torch.softmax(found.readout.logits(runs[w].final[-1:])[0], -1)
            out[f"probs_{w}"] = (float(probs[pair[0]]), float(probs[pair[1]]))
    return out


# -- from text ------------------------------------------------------------------------------------


def _causal(adapter) -> torch.nn.Module:
    model = getattr(adapter, "model", None)
    if getattr(adapter, "family", None) != "causal" or not isinstance(model, torch.nn.Module):
        raise PatchError(
            later("{model} is not a causal language model: it has nothing to patch", model=adapter.model_id)
        )
    return model


def single_token(adapter, text: str, what: str = "the answer") -> int:
    """The one token ``text`` is as the model's tokenizer reads it (no special tokens), or PatchError."""
    if not text:
        raise PatchError(later("{what} is empty: give one token, such as ' Paris'", what=what))
    tok = adapter.tokenizer
    ids = tok(text, add_special_tokens=False)["input_ids"]
    if len(ids) == 1:
        return int(ids[0])
    pieces = ", ".join(repr(tok.decode([i])) for i in ids)
    hint = ""
    spaced = " " + text.lstrip()
    if spaced != text and len(tok(spaced, add_special_tokens=False)["input_ids"]) == 1:
        hint = f"; {spaced!r} with a leading space is one"
    raise PatchError(f"{what} {text!r} is {len(ids)} tokens for this model ({pieces}): give one token{hint}")


def check_pair(tokens_clean: list[str], tokens_corrupt: list[str]) -> None:
    """Refuse prompts of different lengths (saying where they first differ) or the same tokens."""
    first = next(
        (i for i, (a, b) in enumerate(zip(tokens_clean, tokens_corrupt, strict=False)) if a != b),
        min(len(tokens_clean), len(tokens_corrupt)),
    )
    if len(tokens_clean) != len(tokens_corrupt):
        here = lambda t: repr(t[first]) if first < len(t) else later("the end")  # noqa: E731
        raise PatchError(
            later(
                "the clean prompt is {a} tokens and the corrupted one {b}: patching needs the same number; they"
                " first differ at token {first} ({x} / {y}): swap that word for one of as many tokens",
                a=len(tokens_clean),
                b=len(tokens_corrupt),
                first=first,
                x=here(tokens_clean),
                y=here(tokens_corrupt),
            )
        )
    if first == len(tokens_clean):
        raise PatchError(
            later("the clean and corrupted prompts are the same tokens: change a word in the corrupted one")
        )


def swap(adapter, text: str, old: str, new: str) -> str:
    """``text`` with its word ``old`` replaced by ``new``, refused unless the token count is unchanged."""
    if not old or old not in text:
        raise PatchError(later("{old} is not in the clean prompt", old=repr(old)))
    swapped = text.replace(old, new, 1)
    a, b = (len(adapter.tokenizer(t)["input_ids"]) for t in (text, swapped))
    if a != b:
        raise PatchError(
            later(
                "{old} → {new} makes {b} tokens of {a}: pick a word of as many tokens",
                old=repr(old),
                new=repr(new),
                a=a,
                b=b,
            )
        )
    return swapped


def _encode_pair(adapter, clean: str, corrupt: str):
    a, b = adapter.encode(clean), adapter.encode(corrupt)
    ta, tb = list(a.tokens), list(b.tokens)
    check_pair(ta, tb)
    return a.ids, b.ids, ta, tb


def patching(
    adapter,
    clean: str,
    corrupt: str,
    answer: str,
    wrong: str,
    direction: str = "denoise",
    kinds=KINDS,
) -> Patching:
    """Every patch of ``kinds`` for two prompts as the adapter encodes them, answer and wrong as text."""
    model = _causal(adapter)
    plan(model, adapter.model_id)  # refuse the model before reading the input
    if direction not in DIRECTIONS:
        raise PatchError(f"direction {direction!r}: give denoise or noise")
    a, w = single_token(adapter, answer, "the answer"), single_token(adapter, wrong, "the wrong answer")
    if a == w:
        raise PatchError("the answer and the wrong answer are the same token: give two different ones")
    ids_clean, ids_corrupt, ta, tb = _encode_pair(adapter, clean, corrupt)
    got = patching_of(model, ids_clean, ids_corrupt, a, w, direction, kinds, adapter.model_id)
    return Patching(
        ta, tb, direction, a, w, got["metric_clean"], got["metric_corrupt"],
        *(got.get(k) for k in KINDS), got["probs_clean"], got["probs_corrupt"],
    )  # fmt: skip


def head_positions(
    adapter, clean: str, corrupt: str, answer: str, wrong: str, layer: int, direction: str = "denoise"
) -> np.ndarray:
    """``[heads, positions]``: each head of ``layer`` patched at one position at a time."""
    model = _causal(adapter)
    found = plan(model, adapter.model_id)
    if not 0 <= layer < len(found.blocks):
        raise PatchError(f"layer {layer} is out of range: give 0..{len(found.blocks) - 1}")
    a, w = single_token(adapter, answer, "the answer"), single_token(adapter, wrong, "the wrong answer")
    ids_clean, ids_corrupt, _, _ = _encode_pair(adapter, clean, corrupt)
    got = patching_of(model, ids_clean, ids_corrupt, a, w, direction, ("head_positions",), adapter.model_id, layer)
    return got["head_positions"]
