"""Named capture points: one recorder for the tensors a forward computes on its way to the weights.

In the manner of TransformerLens's HookPoints, each quantity a model can hand over has a name
and a shape (``POINTS``), and a caller opens one recording naming the points it wants::

    with recording(QUERIES, KEYS) as rec:
        model(...)
    rec[QUERIES]  # {site: tensor [heads, query, d_head]}: one entry per layer or attention module

Three places report to it, each with the same point names:

- transformers' attention interface: ``models.adapters.capture`` registers ``atlas_capture``, an
  attention function that reports each layer's ``queries``, ``keys``, ``scaling``, ``variant`` and ``masked``
  (site: the layer index) and then runs SDPA; a Hugging Face model's capture twin runs it (BLOOM's,
  whose attention modules add ALiBi themselves, runs eager: a hook before each reports the same);
- our ``MultiHeadAttention`` (``models.attention.multihead``): its projected ``queries`` and
  ``keys`` (site: the module itself);
- a ``Tap``: a forward hook that reports a module's output as a point, installed by the recording
  that names it for as long as that recording is open (``values``: the value projections of BERT-
  and Llama-style models, ``models.adapters.value_norms``).

The open recording lives in a context variable, so a model that several sessions share records
only the calls of the thread that opened it: a report made in another thread, or with no
recording open, costs one lookup and keeps nothing. A hook is counted: it stays on its module
while any thread's recording needs it and is removed when the last such recording closes, so no
hook outlives the ``with`` block that asked for it. A site reported twice keeps its last report
(the couplet Transformer's search calls each attention module step by step before the
teacher-forced pass that gives the records). A recording opened inside another hides the outer
one until it closes.

What a point holds is what ``keep`` makes of each reported tensor (``detached`` by default: the
tensor, detached, on its device; the long-context capture keeps float32 numpy arrays at once, so a
long forward does not hold every layer on the GPU). Values that are not tensors are kept as given.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Hashable, Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import torch

QUERIES = "queries"
KEYS = "keys"
VALUES = "values"
SCALING = "scaling"
MASKED = "masked"
VARIANT = "variant"
PROBS = "probs"
HEAD_VALUES = "head_values"

# name: what one report holds (one layer's, or one attention module's, for one forward)
POINTS = {
    QUERIES: "[heads, query, d_head]: after the projection (and the rotary embedding); batch item 0",
    KEYS: "[key heads, key, d_head]: the same; grouped key heads as the model keeps them",
    VALUES: "[key, key heads · d_head]: the value projection's output, heads not yet split",
    SCALING: "float: what q·kᵀ is multiplied by before the softmax",
    MASKED: "bool: whether the attention call was handed a mask that its variant does not explain",
    VARIANT: "viz_core.blockwise.Variant: window, softcap, sink logits beyond q·k (from the module and call)",
    PROBS: "[heads, query, key]: the attention probabilities the eager attention computed; batch item 0",
    HEAD_VALUES: "[key heads, key, d_head]: the values the attention function is handed (bias in); batch item 0",
}


def detached(t: torch.Tensor) -> torch.Tensor:
    return t.detach()


class Recording:
    """What one ``recording`` block kept: ``rec[point]`` is ``{site: value}`` in report order."""

    def __init__(self, points: Iterable[str], keep: Callable[[torch.Tensor], Any] = detached):
        points = tuple(points)
        unknown = sorted(set(points) - POINTS.keys())
        if unknown:
            raise ValueError(f"unknown capture points {unknown}; the points are {sorted(POINTS)}")
        self.points = frozenset(points)
        self._keep = keep
        self._kept: dict[str, dict[Hashable, Any]] = {p: {} for p in points}
        self.memo: dict[Hashable, Any] = {}  # reporters' scratch for this recording (a mask checked once)

    def __getitem__(self, point: str) -> dict[Hashable, Any]:
        if point not in self._kept:
            raise KeyError(f"this recording did not ask for {point!r} (it holds {sorted(self.points)})")
        return self._kept[point]

    def get(self, point: str) -> dict[Hashable, Any]:
        """``rec[point]``, or an empty dict where the recording did not ask for ``point``."""
        return self._kept.get(point, {})

    def report(self, site: Hashable, **values: Any) -> None:
        """Keep ``values`` (``point=value``) of ``site``; points the recording did not name are dropped."""
        for point, value in values.items():
            kept = self._kept.get(point)
            if kept is not None:
                kept[site] = self._keep(value) if isinstance(value, torch.Tensor) else value


_ACTIVE: ContextVar[Recording | None] = ContextVar("atlas_capture_recording", default=None)


def active() -> Recording | None:
    """The recording this thread (context) has open, or None: check before preparing a report."""
    return _ACTIVE.get()


def report(site: Hashable, **values: Any) -> None:
    """Hand ``values`` (``point=value``) of ``site`` to this thread's open recording, if any."""
    rec = _ACTIVE.get()
    if rec is not None:
        rec.report(site, **values)


@dataclass(frozen=True, eq=False)
class Tap:
    """A forward hook on ``module`` that reports its output (batch item 0) as ``point`` at ``site``."""

    module: torch.nn.Module
    point: str
    site: Hashable


@contextlib.contextmanager
def recording(
    *points: str, keep: Callable[[torch.Tensor], Any] = detached, taps: Iterable[Tap] = ()
) -> Iterator[Recording]:
    """Record ``points`` of every forward this thread runs inside the block; ``taps`` are hooked
    for the block's duration (and removed once no open recording needs them)."""
    rec = Recording(points, keep)
    token = _ACTIVE.set(rec)
    try:
        with _tapped(list(taps)):
            yield rec
    finally:
        _ACTIVE.reset(token)


class SharedHooks:
    """Hooks on modules, each put on once however many open blocks need it and taken off when the
    last of them closes (blocks of several threads may overlap on one model)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._hooks: dict[Hashable, list] = {}  # key -> [handle, blocks that need it]

    @contextlib.contextmanager
    def held(self, wanted: Iterable[tuple[Hashable, Callable[[], Any]]]) -> Iterator[None]:
        """Inside the block, the hook of each ``(key, register)`` is on: ``register()`` puts it on
        (and returns its handle) unless a hook of that key is on already."""
        held: list[Hashable] = []
        try:
            with self._lock:
                for key, register in wanted:
                    if key not in self._hooks:
                        self._hooks[key] = [register(), 0]
                    self._hooks[key][1] += 1
                    held.append(key)
            yield
        finally:
            with self._lock:
                for key in held:
                    entry = self._hooks[key]
                    entry[1] -= 1
                    if entry[1] == 0:
                        entry[0].remove()
                        del self._hooks[key]

    def __len__(self) -> int:
        with self._lock:
            return len(self._hooks)


_TAPS = SharedHooks()  # (id(module), point, site) -> the forward hook that reports the point


def _tapped(taps: list[Tap]):
    return _TAPS.held(
        ((id(t.module), t.point, t.site), lambda t=t: t.module.register_forward_hook(_hook(t.point, t.site)))
        for t in taps
    )


def _hook(point: str, site: Hashable):
    def hook(_module, _inputs, output) -> None:
        rec = _ACTIVE.get()  # the thread running this forward: another session's recording, or none
        if rec is not None:
            rec.report(site, **{point: output[0]})

    return hook


def hooks_installed() -> int:
    """How many capture hooks are on modules now (0 once every recording has closed)."""
    return len(_TAPS)
