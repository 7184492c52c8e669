"""The one record every model produces and every view consumes.

Rows sum to 1, except where a model has learned sink logits (gpt-oss style: one more logit per
head in the softmax's denominator that belongs to no key). There the mass the sink takes is part of
the record, ``sink[layer, head, query]``, and the rule is that a row and its sink sum to 1: the
weights shown are the model's own, smaller than 1 by what the sink took."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attention_atlas.i18n import N_, _

KINDS = ("self", "encoder_self", "decoder_self", "cross")
# each kind as a person reads it (the ids stay the values: in links, files and records)
KIND_NAMES = {
    "self": N_("self-attention"),
    "encoder_self": N_("encoder self-attention"),
    "decoder_self": N_("decoder self-attention"),
    "cross": N_("cross-attention"),
}
SCORINGS = ("dot", "scaled_dot", "additive", "general", "cosine", "gaussian")
ROW_SUM_TOLERANCE = 1e-4


class RecordError(ValueError):
    """An attention record that does not describe itself consistently."""


def kind_name(kind: str) -> str:
    """A record kind's readable name in the current language (``encoder_self``: "encoder
    self-attention"); an unknown kind as it is."""
    return _(KIND_NAMES[kind]) if kind in KIND_NAMES else kind


@dataclass(frozen=True, eq=False)
class AttentionRecord:
    """Attention weights ``[layers, heads, query, key]`` after softmax, with their tokens.

    It checks itself when built, and a mismatch names both numbers:

    >>> AttentionRecord(np.full((1, 1, 2, 3), 1 / 3), ["a", "b"], ["x", "y"], "cross", "demo")
    Traceback (most recent call last):
    ...
    viz_core.record.RecordError: weights have 3 key positions but 2 key_tokens
    """

    weights: np.ndarray  # [layers, heads, query, key], rows sum to 1
    query_tokens: list[str]
    key_tokens: list[str]
    kind: str
    model_id: str
    scoring: str | None = None
    scores: np.ndarray | None = None  # pre-softmax, same shape as weights
    meta: dict[str, Any] = field(default_factory=dict)
    sink: np.ndarray | None = None  # [layers, heads, query]: mass each row leaves to a sink logit

    def __post_init__(self):
        weights = np.asarray(self.weights, dtype=np.float32)
        object.__setattr__(self, "weights", weights)
        object.__setattr__(self, "query_tokens", [str(t) for t in self.query_tokens])
        object.__setattr__(self, "key_tokens", [str(t) for t in self.key_tokens])
        if self.scores is not None:
            object.__setattr__(self, "scores", np.asarray(self.scores, dtype=np.float32))
        if self.sink is not None:
            object.__setattr__(self, "sink", np.asarray(self.sink, dtype=np.float32))
        _validate(self)

    @property
    def n_layers(self) -> int:
        return self.weights.shape[0]

    @property
    def n_heads(self) -> int:
        return self.weights.shape[1]

    def head(self, layer: int = 0, head: int = 0) -> np.ndarray:
        """The ``[query, key]`` matrix of one layer and head."""
        _check_index("layer", layer, self.n_layers)
        _check_index("head", head, self.n_heads)
        return self.weights[layer, head]


def _validate(rec: AttentionRecord) -> None:
    w = rec.weights
    if w.ndim != 4:
        raise RecordError(f"weights need 4 axes [layers, heads, query, key], got {w.ndim} {w.shape}")
    if min(w.shape) == 0:
        raise RecordError(f"weights have an empty axis: shape {w.shape}")
    if w.shape[2] != len(rec.query_tokens):
        raise RecordError(
            f"weights have {w.shape[2]} query positions but {len(rec.query_tokens)} query_tokens"
        )
    if w.shape[3] != len(rec.key_tokens):
        raise RecordError(f"weights have {w.shape[3]} key positions but {len(rec.key_tokens)} key_tokens")
    if rec.kind not in KINDS:
        raise RecordError(f"kind {rec.kind!r} is not one of {KINDS}")
    if rec.scoring is not None and rec.scoring not in SCORINGS:
        raise RecordError(f"scoring {rec.scoring!r} is not one of {SCORINGS}")
    sums = w.sum(-1, dtype=np.float64)  # one pass: a non-finite weight makes its row's sum non-finite
    if not np.isfinite(sums).all():
        raise RecordError(f"weights hold {int((~np.isfinite(w)).sum())} non-finite values")
    if (low := w.min()) < 0:
        raise RecordError(f"weights hold negative values (min {low:.3g}); pass them after softmax")
    sink = _sink(rec)
    worst = np.unravel_index(np.abs(sums + sink - 1).argmax(), sums.shape)
    if abs(sums[worst] + sink[worst] - 1) > ROW_SUM_TOLERANCE:
        layer, head, query = (int(i) for i in worst)
        want = f"1 − its sink's {sink[worst]:.6f}" if rec.sink is not None else "1"
        raise RecordError(
            f"row (layer {layer}, head {head}, query {query}) sums to {sums[worst]:.6f}, not {want}"
        )
    if rec.scores is not None and rec.scores.shape != w.shape:
        raise RecordError(f"scores have shape {rec.scores.shape} but weights {w.shape}")


def _sink(rec: AttentionRecord) -> np.ndarray:
    """The sink's mass per row ``[layers, heads, query]`` (zeros without sinks), checked."""
    w = rec.weights
    if rec.sink is None:
        return np.zeros(w.shape[:3])
    if rec.sink.shape != w.shape[:3]:
        raise RecordError(f"sink has shape {rec.sink.shape} but the rows are {w.shape[:3]}")
    if not np.isfinite(rec.sink).all() or (rec.sink < 0).any() or (rec.sink > 1).any():
        raise RecordError("a sink's mass must lie between 0 and 1")
    return rec.sink.astype(np.float64)


def _check_index(axis: str, index: int, size: int) -> None:
    if not 0 <= index < size:
        raise IndexError(f"{axis} {index} is out of range: the record has {size} (0..{size - 1})")
