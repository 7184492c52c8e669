"""Records derived from records for viewing: sub-word pieces merged into words, special tokens hidden.

Extraction stays token-level and exact; these only change what a view shows.

Per-token lists in a record's ``meta`` (``<side>_special``, ``<side>_word_ids``, and
``<side>_pieces``, the tokenizer's own strings of a byte-level BPE model) follow both.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from attention_atlas.viz_core.record import AttentionRecord
from attention_atlas.viz_core.tokens import byte_level_labels, clean_token, piece_bytes

PER_TOKEN = ("special", "word_ids", "pieces")  # meta lists with one entry per token, on each side


@dataclass(frozen=True)
class ViewOptions:
    """How a Transformer record is looked at, one value through every cached call and view: which
    record (``kind``), word pieces merged into words, special tokens hidden, and the weights
    weighted by value norms ‖α f(x)‖ instead of α (``value_weighted``: the adapter's business,
    applied before ``apply``)."""

    kind: str = "self"
    merge: bool = False
    hide: bool = False
    value_weighted: bool = False

    def apply(self, record: AttentionRecord) -> AttentionRecord:
        """What a view shows of ``record``: word pieces merged, then special tokens hidden."""
        record = merge_words(record) if self.merge else record
        return hide_special(record) if self.hide else record


def groups_from_word_ids(word_ids: list[int | None]) -> list[list[int]]:
    """Consecutive positions of one word form a group; a position without a word stands alone."""
    groups: list[list[int]] = []
    previous = object()
    for pos, wid in enumerate(word_ids):
        if wid is not None and wid == previous:
            groups[-1].append(pos)
        else:
            groups.append([pos])
        previous = wid
    return groups


def _join(tokens: list[str], pieces: list[str] | None, group: list[int]) -> str:
    """A word's label: its byte pieces decoded together (two halves of 两 make one 两), else its
    pieces' labels glued."""
    if pieces is not None and len(group) > 1:
        joined = "".join(pieces[i] for i in group)
        if piece_bytes(joined) is not None:
            return clean_token(byte_level_labels([joined])[0])
    return "".join(clean_token(tokens[i]) for i in group)


def merge_words(record: AttentionRecord) -> AttentionRecord:
    """Pieces → words: sum the weights over a word's key pieces, average over its query pieces.

    Rows still sum to 1 (a sum over keys keeps each row's total; a mean of such rows too), or to
    1 − their sink's mass, which is averaged over a word's query pieces as the rows are. Needs ``meta['query_word_ids']`` and ``meta['key_word_ids']``; returns the record as is without them.
    """
    q_ids, k_ids = record.meta.get("query_word_ids"), record.meta.get("key_word_ids")
    if q_ids is None or k_ids is None:
        return record
    q_groups, k_groups = groups_from_word_ids(q_ids), groups_from_word_ids(k_ids)
    w = record.weights  # [layers, heads, query, key]
    summed = np.stack([w[..., g].sum(-1) for g in k_groups], axis=-1)  # [layers, heads, query, key words]
    merged = np.stack([summed[..., g, :].mean(-2) for g in q_groups], axis=-2)  # [.., query words, key words]
    meta = dict(record.meta)
    for side, groups in (("query", q_groups), ("key", k_groups)):
        special, pieces = record.meta.get(f"{side}_special"), record.meta.get(f"{side}_pieces")
        if special is not None:
            meta[f"{side}_special"] = [all(special[i] for i in g) for g in groups]
        if pieces is not None:
            meta[f"{side}_pieces"] = ["".join(pieces[i] for i in g) for g in groups]
        meta[f"{side}_word_ids"] = list(range(len(groups)))
    q_pieces, k_pieces = record.meta.get("query_pieces"), record.meta.get("key_pieces")
    return replace(
        record,
        weights=merged,
        sink=None if record.sink is None else np.stack([record.sink[..., g].mean(-1) for g in q_groups], -1),
        query_tokens=[_join(record.query_tokens, q_pieces, g) for g in q_groups],
        key_tokens=[_join(record.key_tokens, k_pieces, g) for g in k_groups],
        scores=None,
        meta={**meta, "merged": True},
    )


def special_share(record: AttentionRecord) -> np.ndarray:
    """``[layers, heads]``: mean share of each row's attention that lands on special keys."""
    special = np.asarray(record.meta.get("key_special") or [False] * len(record.key_tokens), dtype=bool)
    return record.weights[..., special].sum(-1).mean(-1)


def hide_special(record: AttentionRecord) -> AttentionRecord:
    """Drop special tokens from both axes and renormalise each row over the remaining keys (to 1,
    or to 1 − the row's sink mass where the model has sinks: the sink keeps its share).

    Returns the record unchanged when it has no special tokens or nothing would be left.
    """
    k_special = np.asarray(record.meta.get("key_special") or [False] * len(record.key_tokens), dtype=bool)
    q_special = np.asarray(record.meta.get("query_special") or [False] * len(record.query_tokens), dtype=bool)
    if not (k_special.any() or q_special.any()) or k_special.all() or q_special.all():
        return record
    w = record.weights[..., ~q_special, :][..., ~k_special]
    total = w.sum(-1, keepdims=True)
    w = np.divide(w, total, out=np.full_like(w, 1.0 / w.shape[-1]), where=total > 0)
    sink = None if record.sink is None else record.sink[..., ~q_special]
    if sink is not None:
        w *= (1 - sink)[..., None]
    meta = {k: v for k, v in record.meta.items() if not k.endswith(tuple(f"_{n}" for n in PER_TOKEN))}
    for side, keep in (("query", ~q_special), ("key", ~k_special)):
        for name in PER_TOKEN:
            values = record.meta.get(f"{side}_{name}")
            if values is not None:
                meta[f"{side}_{name}"] = [x for x, k in zip(values, keep, strict=True) if k]
        meta[f"{side}_special"] = [False] * int(keep.sum())
    return replace(
        record,
        weights=w,
        sink=sink,
        query_tokens=[t for t, k in zip(record.query_tokens, ~q_special, strict=True) if k],
        key_tokens=[t for t, k in zip(record.key_tokens, ~k_special, strict=True) if k],
        scores=None,
        meta={**meta, "special_hidden": True},
    )
