"""The logit lens: what a causal LM would predict from its residual stream after each block.

    grid = lens(adapter, "The capital of France is", top=10)        # adapter-level, text in
    grid.top_ids[l, p], grid.top_probs[l, p]     # after block l, at position p: the top 10 tokens
    stream = residuals(model, ids)                # model-level: one forward, every block's output
    part = top_tokens(stream, 10, positions=range(n - 64, n))   # the last 64 positions first

Each block's output (the residual stream) is read through the model's own final norm and output
head, with the final logit softcapping where the config has one (Gemma 2/3): ``softmax(head(norm(h)))``.
Row ``l`` is after block ``l``; the last row is the model's output, its own next-token distribution.

Nothing here names a model family. Everything is found in the model and checked on numbers, once
per model, by one short probe forward (``readout``):
- the blocks: the one ``ModuleList`` as long as the config's layer count; their outputs are hooked
  (transformers' ``output_hidden_states`` has the final norm already applied to its last entry in
  most models, so it is not used);
- the output head: ``model.get_output_embeddings()``;
- the final norm: the module outside the blocks that turns the last block's output into exactly
  what the head receives (a forward pre-hook on the head captures that), or nothing where the head
  receives the block's output as it is;
- then ``softcap(head(norm(last block)))`` must equal the model's logits; a model where it does not
  (logits scaled after the head, a second module in between) is refused in one line, as is a model
  with no output head or no causal LM at all.

Logits exist a chunk of positions and a block of the vocabulary at a time (all layers of ``chunk``
positions, ``VOCAB_BLOCK`` entries: small enough to stay in the CPU's cache while they are read, which
makes the lens as fast as the head's matrix product alone): a full tensor for SmolLM2 at 512 tokens
would be 30 × 512 × 49,152 floats. Per chunk: top-K ids and probabilities, optionally a chosen token's probability and rank, and what
each block promoted and suppressed (the tokens whose logit rose or fell most from the block's
input to its output, both read through the same norm and head).
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass

import numpy as np
import torch

from attention_atlas.i18n import later

ROWS = 704  # states put through the head together (SmolLM2: 22 positions × 31 rows)
VOCAB_BLOCK = 2048  # logits of a chunk made at a time: ROWS × VOCAB_BLOCK floats (5.5 MB) stay in cache
MAX_TOP = (
    100  # tokens kept per cell: more is no longer a lens, and the grid would grow toward the full tensor
)
PROBE = 8  # tokens of the probe forward that finds and checks the readout
ATOL, RTOL = 1e-4, 1e-4  # float32 agreement of the readout with the model's own numbers


class LensError(ValueError):
    """A model or a request the lens cannot serve: one line that says why."""


@dataclass(frozen=True)
class Readout:
    """How a model turns a block's output into logits: ``softcap(head(norm(h)))``."""

    blocks: tuple[torch.nn.Module, ...]
    norm: torch.nn.Module | None  # None: the head reads the last block's output as it is
    head: torch.nn.Module
    softcap: float | None
    vocab: int

    @property
    def blockwise(self) -> bool:
        """Whether the head is a plain linear layer, whose rows can make a block of the logits."""
        return type(self.head) is torch.nn.Linear

    def normed(self, h: torch.Tensor) -> torch.Tensor:
        return self.norm(h) if self.norm is not None else h

    def project(self, x: torch.Tensor, lo: int = 0, hi: int | None = None) -> torch.Tensor:
        """Logits ``lo:hi`` (default all) of normed states ``x``, softcapped where the model caps."""
        if hi is None or (lo, hi) == (0, self.vocab) or not self.blockwise:
            x = self.head(x).float()
        else:
            bias = None if self.head.bias is None else self.head.bias[lo:hi]
            x = torch.nn.functional.linear(x, self.head.weight[lo:hi], bias).float()
        return torch.tanh(x / self.softcap) * self.softcap if self.softcap else x

    def logits(self, h: torch.Tensor) -> torch.Tensor:
        return self.project(self.normed(h))


@dataclass(frozen=True)
class Stream:
    """The residual stream of one input: ``states[0]`` enters block 0, ``states[l + 1]`` leaves block l."""

    readout: Readout
    states: torch.Tensor  # [layers + 1, positions, d_model]

    @property
    def layers(self) -> int:
        return self.states.shape[0] - 1

    @property
    def positions(self) -> int:
        return self.states.shape[1]


@dataclass(frozen=True)
class Grid:
    """Top-K tokens of the residual stream after every block, at ``positions``."""

    positions: np.ndarray  # [P]: which positions of the input the columns are
    top_ids: np.ndarray  # int64 [layers, P, K], most probable first
    top_probs: np.ndarray  # float32 [layers, P, K]
    token: int | None = None  # the followed token, if any
    token_probs: np.ndarray | None = None  # float32 [layers, P]
    token_ranks: np.ndarray | None = None  # int64 [layers, P]: 0 = the top token
    promoted_ids: np.ndarray | None = None  # int64 [layers, P, K]: the logits block l raised most
    promoted_by: np.ndarray | None = None  # float32 [layers, P, K]: by how much
    suppressed_ids: np.ndarray | None = None  # int64 [layers, P, K]: the logits block l lowered most
    suppressed_by: np.ndarray | None = None  # float32 [layers, P, K]: by how much (negative)


# -- finding the readout ----------------------------------------------------------------------------

_READOUTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _first(out):
    return out[0] if isinstance(out, tuple | list) else out


def _n_layers(model: torch.nn.Module) -> int | None:
    config = getattr(model, "config", None)
    if config is None:
        return None
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    return getattr(text, "num_hidden_layers", None)


def find_blocks(model: torch.nn.Module, name: str = "the model") -> tuple[torch.nn.Module, ...]:
    """The decoder blocks: the outermost ``ModuleList`` as long as the config's layer count."""
    n = _n_layers(model)
    for module in model.modules():
        if isinstance(module, torch.nn.ModuleList) and n and len(module) == n:
            return tuple(module)
    raise LensError(f"{name}: no list of {n} blocks found in the model (its config's layer count)")


def _softcap(model: torch.nn.Module) -> float | None:
    config = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    cap = getattr(config, "final_logit_softcapping", None)
    return float(cap) if cap else None


def _candidates(model: torch.nn.Module, blocks: tuple, head: torch.nn.Module):
    """Modules that could sit between the last block and the head: outside the blocks and the head,
    holding neither, and not an embedding or a container."""
    skip = (torch.nn.Embedding, torch.nn.ModuleList, torch.nn.ModuleDict, torch.nn.Sequential)
    inside = {id(m) for root in (*blocks, head) for m in root.modules()}
    for module in model.modules():
        if module is model or isinstance(module, skip) or id(module) in inside:
            continue
        if any(m is blocks[0] or m is head for m in module.modules()):
            continue
        yield module


def _recorder(store: dict | list):
    """``keep(key, tensor)`` into ``store``, from this thread only: the model is shared, and another
    session's forward running meanwhile passes through the same hooks."""
    owner = threading.get_ident()

    def keep(key, h: torch.Tensor) -> None:
        if threading.get_ident() == owner:
            store[key] = h

    return keep


def _close(a, b) -> bool:
    return isinstance(a, torch.Tensor) and a.shape == b.shape and torch.allclose(a, b, atol=ATOL, rtol=RTOL)


def _probe(model: torch.nn.Module, blocks: tuple, head: torch.nn.Module, vocab: int):
    """The last block's output, the head's input and the model's logits on a short probe input."""
    seen: dict[str, torch.Tensor] = {}
    keep = _recorder(seen)
    hooks = [
        blocks[-1].register_forward_hook(lambda m, a, out: keep("last", _first(out))),
        head.register_forward_pre_hook(lambda m, a: keep("head_in", a[0])),
    ]
    ids = (torch.arange(PROBE) * 7 + 1).remainder(vocab).unsqueeze(0).to(head.weight.device)
    try:
        with torch.no_grad():
            logits = model(input_ids=ids).logits.float()
    finally:
        for h in hooks:
            h.remove()
    return seen["last"], seen["head_in"], logits


def _norm(model, blocks, head, last, head_in) -> tuple[bool, torch.nn.Module | None]:
    """Whether a module maps ``last`` to ``head_in``, and which (None: they are equal already)."""
    if _close(last, head_in):
        return True, None
    for module in _candidates(model, blocks, head):
        try:
            with torch.no_grad():
                out = module(last)
        except Exception:  # a module that cannot take one tensor is not the norm
            continue
        if _close(_first(out), head_in):
            return True, module
    return False, None


def readout(model: torch.nn.Module, name: str = "the model") -> Readout:
    """The model's blocks, final norm, head and softcap, found and checked once per model."""
    if model in _READOUTS:
        return _READOUTS[model]
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if head is None or getattr(head, "weight", None) is None:
        raise LensError(
            later("{name} has no output head: it does not map its states to the vocabulary", name=name)
        )
    blocks = find_blocks(model, name)
    vocab = head.weight.shape[0]
    last, head_in, logits = _probe(model, blocks, head, vocab)
    found_norm, norm = _norm(model, blocks, head, last, head_in)
    if not found_norm:
        raise LensError(
            f"{name}: no single module turns its last block's output into what its output head reads"
        )
    found = Readout(blocks, norm, head, _softcap(model), logits.shape[-1])
    with torch.no_grad():
        if not _close(found.logits(last), logits):
            raise LensError(
                f"{name}: its logits are not its output head applied to its final norm"
                " (something else acts after the head), so a block's output cannot be read the same way"
            )
    _READOUTS[model] = found
    return found


# -- the residual stream ----------------------------------------------------------------------------


def residuals(model: torch.nn.Module, ids: torch.Tensor, name: str = "the model") -> Stream:
    """One forward of ``ids`` ``[1, n]``: the input of block 0 and every block's output."""
    found = readout(model, name)
    states: list[torch.Tensor | None] = [None] * (len(found.blocks) + 1)
    keep = _recorder(states)

    def enter(module, args, kwargs):
        keep(0, args[0] if args else kwargs["hidden_states"])

    hooks = [found.blocks[0].register_forward_pre_hook(enter, with_kwargs=True)]
    for i, block in enumerate(found.blocks):
        hooks.append(block.register_forward_hook(lambda m, a, out, i=i: keep(i + 1, _first(out))))
    base = getattr(model, "base_model", model)  # the stack without the head: no full logits
    try:
        with torch.no_grad():
            base(input_ids=ids.to(found.head.weight.device))
    finally:
        for h in hooks:
            h.remove()
    return Stream(found, torch.stack([s[0] for s in states]))


# -- the grid ---------------------------------------------------------------------------------------


def check_request(stream: Stream, top: int, token: int | None) -> None:
    vocab = stream.readout.vocab
    if not 1 <= top <= min(MAX_TOP, vocab):
        raise LensError(
            later("top {top}: keep between 1 and {most} tokens per cell", top=top, most=min(MAX_TOP, vocab))
        )
    if token is not None and not 0 <= token < vocab:
        raise LensError(
            later("token id {token} is not in the vocabulary (0–{last})", token=token, last=vocab - 1)
        )


def chunk_size(stream: Stream, changes: bool) -> int:
    """Positions per chunk: about ``ROWS`` rows of states (every layer's, one more with ``changes``)
    go through the head together, a vocabulary block at a time."""
    return max(1, ROWS // (stream.layers + (1 if changes else 0)))


def top_tokens(
    stream: Stream,
    top: int = 10,
    positions: range | None = None,
    token: int | None = None,
    changes: bool = False,
    chunk: int | None = None,
    block: int = VOCAB_BLOCK,
) -> Grid:
    """Top-``top`` tokens after every block at ``positions`` (default all), ``chunk`` positions and
    ``block`` vocabulary entries at a time; with ``token``, its probability and rank everywhere; with
    ``changes``, what each block promoted and suppressed."""
    check_request(stream, top, token)
    cols = np.arange(stream.positions)[positions if positions is not None else slice(None)]
    if cols.size == 0:
        raise LensError("no positions to read")
    step = chunk or chunk_size(stream, changes)
    parts = [
        _chunk(stream, torch.as_tensor(cols[i : i + step]), _Reading(top, token, changes), block)
        for i in range(0, cols.size, step)
    ]
    joined = {k: np.concatenate([p[k] for p in parts], axis=1) for k in parts[0]}
    return Grid(positions=cols, token=token, **joined)


def _chunk(stream: Stream, cols: torch.Tensor, reading: _Reading, block: int) -> dict:
    """One chunk of positions, its logits a vocabulary block at a time, each block read while it is
    still in the CPU's cache: the chunk's whole ``[rows, vocab]`` logits never exist."""
    found = stream.readout
    with torch.no_grad():
        states = stream.states[:, cols] if reading.changes else stream.states[1:, cols]
        normed = found.normed(states)
        for lo, hi in _spans(found, reading.token, block):
            reading.add(found.project(normed, lo, hi), lo)
        return reading.result()


def _spans(found: Readout, token: int | None, block: int) -> list[tuple[int, int]]:
    """The vocabulary's blocks, the followed token's first (its logit ranks the others); the whole
    vocabulary at once where the head is not a plain linear layer."""
    size = block if found.blockwise else found.vocab
    spans = [(lo, min(lo + size, found.vocab)) for lo in range(0, found.vocab, size)]
    if token is not None:
        spans.sort(key=lambda span: not span[0] <= token < span[1])
    return spans


class _Best:
    """The ``k`` largest (or smallest) values over vocabulary blocks seen one at a time, with their ids."""

    def __init__(self, k: int, largest: bool = True) -> None:
        self.k, self.largest = k, largest
        self.values: list[torch.Tensor] = []
        self.ids: list[torch.Tensor] = []

    def add(self, x: torch.Tensor, lo: int) -> None:
        values, ids = x.topk(min(self.k, x.shape[-1]), -1, largest=self.largest)
        self.values.append(values)
        self.ids.append(ids + lo)

    def result(self) -> tuple[torch.Tensor, torch.Tensor]:
        values, at = torch.cat(self.values, -1).topk(self.k, -1, largest=self.largest)
        return values, torch.cat(self.ids, -1).gather(-1, at)


class _Reading:
    """What a chunk's logits leave behind, block by block: the top tokens and the log-sum-exp, and
    optionally the followed token's logit and rank and each block's largest changes."""

    def __init__(self, top: int, token: int | None, changes: bool) -> None:
        self.token, self.changes = token, changes
        self.best = _Best(top)
        self.up, self.down = _Best(top), _Best(top, largest=False)
        self.lse: list[torch.Tensor] = []
        self.own: torch.Tensor | None = None  # the followed token's logit [rows..., 1]
        self.rank: torch.Tensor | None = None

    def add(self, logits: torch.Tensor, lo: int) -> None:
        after = logits[1:] if self.changes else logits
        self.best.add(after, lo)
        self.lse.append(torch.logsumexp(after, -1, keepdim=True))
        if self.token is not None:
            if self.own is None:  # its block comes first
                self.own = after[..., self.token - lo : self.token - lo + 1].clone()
                self.rank = torch.zeros(self.own.shape[:-1], dtype=torch.int64)
            self.rank += (after > self.own).sum(-1)
        if self.changes:
            delta = logits[1:] - logits[:-1]
            self.up.add(delta, lo)
            self.down.add(delta, lo)

    def result(self) -> dict:
        values, ids = self.best.result()
        lse = torch.logsumexp(torch.cat(self.lse, -1), -1, keepdim=True)
        out = {"top_ids": ids.cpu().numpy(), "top_probs": (values - lse).exp().cpu().numpy()}
        if self.token is not None:
            out["token_ranks"] = self.rank.cpu().numpy()
            out["token_probs"] = (self.own - lse)[..., 0].exp().cpu().numpy()
        if self.changes:
            (up, up_ids), (down, down_ids) = self.up.result(), self.down.result()
            out |= {
                "promoted_ids": up_ids.cpu().numpy(),
                "promoted_by": up.cpu().numpy(),
                "suppressed_ids": down_ids.cpu().numpy(),
                "suppressed_by": down.cpu().numpy(),
            }
        return out


# -- from text --------------------------------------------------------------------------------------


def stream_of(adapter, text: str):
    """The residual stream of ``text`` as the adapter encodes it, and the encoding (``tokens``, ``ids``,
    ``notices``: a text cut to the model's limit says so there)."""
    model = getattr(adapter, "model", None)
    if getattr(adapter, "family", None) != "causal" or not isinstance(model, torch.nn.Module):
        raise LensError(
            later("{model} is not a causal language model: it predicts no next token", model=adapter.model_id)
        )
    readout(model, adapter.model_id)  # refuse before tokenizing
    src = adapter.encode(text)
    return residuals(model, src.ids, adapter.model_id), src


def lens(adapter, text: str, top: int = 10, **options) -> tuple[Grid, list[str]]:
    """The logit lens of ``text`` (``options`` as ``top_tokens``) and its token labels."""
    stream, src = stream_of(adapter, text)
    return top_tokens(stream, top, **options), list(src.tokens)
