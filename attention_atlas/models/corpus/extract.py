"""Texts → reduced batches: the model runs on a batch, its weights become statistics at once.

``extractor(adapter, options)`` picks how: a Hugging Face encoder or causal model runs whole
padded batches in one forward (``HFExtractor``, texts sorted by length so that padding is
small); any other adapter (our seq2seq families) runs text by text, or through its own
``run_batch``, and each record is reduced the same way (``RecordExtractor``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import torch

from attention_atlas.models.adapters.hf_common import kept
from attention_atlas.models.corpus.stats import STAT_COLUMNS, Reduced, reduce_batch

STATS_VERSION = 1  # part of a store's key: bump when a statistic's definition changes (its name is there too)
CELL_BUDGET = 24_000_000  # weights per batch (texts × layers × heads × tokens²): ~100 MB float32


class NoWeights(Exception):
    """A model that returns no attention weights at all (not one text's problem: the run stops)."""


@dataclass(frozen=True)
class Options:
    """What a run computes, part of its store's key."""

    kind: str | None = None  # the record kind; None: cross attention where there is one, else the first
    top_k: int = 3  # keys kept per token × layer × head
    max_tokens: int | None = None  # tokens read per text; None: the model's own limit (512 at most)
    batch_size: int = 128  # texts per forward at most (not part of the key: it changes no number)

    def key(self) -> dict:
        d = asdict(self)
        d.pop("batch_size")
        # the statistics' names too: a store with other columns (one added, one renamed) is another store
        return {**d, "stats_version": STATS_VERSION, "statistics": list(STAT_COLUMNS)}


@dataclass
class Batch:
    """What one batch gives: reduced weights, the query (and, for cross, key) tokens, per-text facts."""

    reduced: Reduced
    tokens: dict[str, np.ndarray]  # text_id, pos, token, special: the query side
    key_tokens: dict[str, np.ndarray] | None  # the key side when it differs (cross attention)
    texts: dict[str, np.ndarray]  # text_id, n_tokens, truncated, output
    failed: list[tuple[int, str]]  # (text_id, one-line reason)


def _token_rows(text_ids, labels: list[list[str]], specials: list[list[bool]]) -> dict[str, np.ndarray]:
    lengths = [len(t) for t in labels]
    return {
        "text_id": np.repeat(np.asarray(text_ids, dtype=np.int64), lengths),
        "pos": np.concatenate([np.arange(n, dtype=np.int16) for n in lengths]) if lengths else np.zeros(0),
        "token": np.asarray([t for row in labels for t in row], dtype=object),
        "special": np.asarray([s for row in specials for s in row], dtype=bool),
    }


ERRORS = (ValueError, TypeError, RuntimeError)  # one batch's or text's failure, not the run's


def _reason(err: Exception) -> str:
    return " ".join(str(err).split()) or type(err).__name__


@dataclass
class Prepared:
    """A batch tokenized and padded, with what its rows need besides the weights: the model's half
    of the work (``Forward``) runs on it without the tokenizer (a Ray actor gets only this)."""

    text_ids: list[int]
    ids: torch.Tensor  # [B, T] right-padded
    lengths: torch.Tensor  # [B] tokens per text
    special: torch.Tensor  # [B, T] special tokens (False on padding)
    labels: list[list[str]]  # each text's token labels
    truncated: np.ndarray  # [B] whether a text was cut

    @property
    def mask(self) -> torch.Tensor:
        return (torch.arange(self.ids.shape[1]) < self.lengths[:, None]).long()

    def split(self) -> list[Prepared]:
        """One Prepared per text, without padding (what tokenizing it alone gives)."""
        return [
            Prepared(
                [tid],
                self.ids[b : b + 1, :n],
                self.lengths[b : b + 1],
                self.special[b : b + 1, :n],
                [self.labels[b]],
                self.truncated[b : b + 1],
            )
            for b, (tid, n) in enumerate(zip(self.text_ids, self.lengths.tolist(), strict=True))
        ]


class Forward:
    """The model's half of a batch: ``attend(ids, mask)`` gives every layer's weights, reduced at once."""

    def __init__(self, attend, model_id: str, top_k: int):
        self.attend, self.model_id, self.top_k = attend, model_id, top_k

    def batch(self, p: Prepared) -> Batch:
        with torch.inference_mode():
            attentions = self.attend(p.ids.long(), p.mask)
        if not attentions or any(a is None for a in attentions):
            raise NoWeights(f"{self.model_id}: the model returned no attention weights")
        w = torch.stack([a.float() for a in attentions], dim=1).cpu()  # [B, L, H, Q, K]
        n = p.lengths
        reduced = reduce_batch(w, n, n, p.special, np.asarray(p.text_ids), self.top_k)
        specials = [p.special[b, :k].tolist() for b, k in enumerate(n.tolist())]
        facts = {
            "text_id": np.asarray(p.text_ids, dtype=np.int64),
            "n_tokens": n.numpy().astype(np.int32),
            "truncated": p.truncated,
            "output": np.asarray([None] * len(p.text_ids), dtype=object),
        }
        return Batch(reduced, _token_rows(p.text_ids, p.labels, specials), None, facts, [])

    def run(self, parts: list[Prepared], failed: list[tuple[int, str]]) -> Batch:
        """Each part in one forward; a part that fails, text by text, keeping each one's reason."""
        out, failed = [], list(failed)
        for part in parts:
            try:
                out.append(self.batch(part))
            except ERRORS as err:
                if len(part.text_ids) == 1:
                    failed.append((part.text_ids[0], _reason(err)))
                else:
                    self._one_by_one(part, out, failed)
        return out[0] if len(out) == 1 and not failed else _join(out, failed)

    def _one_by_one(self, part: Prepared, out: list[Batch], failed: list[tuple[int, str]]) -> None:
        for one in part.split():
            try:
                out.append(self.batch(one))
            except ERRORS as err:
                failed.append((one.text_ids[0], _reason(err)))


class HFExtractor:
    """A Hugging Face encoder or causal model: one padded forward per batch, eager attention."""

    def __init__(self, adapter, options: Options):
        self.adapter, self.options = adapter, options
        self.kind = "self"
        if options.kind not in (None, "self"):
            raise ValueError(f"{adapter.model_id} gives self attention only, not {options.kind!r}")
        self.limit = min(options.max_tokens or adapter.max_tokens, adapter.max_tokens)
        self.model = adapter.model.base_model  # no language-model head: its logits are not needed
        self.n_layers, self.n_heads = adapter.n_layers, adapter.n_heads
        self.forward = Forward(self.attend, adapter.model_id, options.top_k)

    def attend(self, ids: torch.Tensor, mask: torch.Tensor) -> tuple:
        device = self.adapter.device
        return self.model(
            input_ids=ids.to(device), attention_mask=mask.to(device), output_attentions=True
        ).attentions

    def lengths(self, texts: list[str]) -> list[int]:
        """Token counts (after the cut to the limit), to sort texts into batches of like length."""
        enc = self.adapter.tokenizer(texts, truncation=True, max_length=self.limit, return_special_tokens_mask=True)
        return [kept(self.adapter.family, s) for s in enc["special_tokens_mask"]]

    def run(self, text_ids: list[int], texts: list[str]) -> Batch:
        """The batch in one forward; if it fails, text by text, keeping each one's reason."""
        return self.forward.run(*self.prepare(text_ids, texts))

    def prepare(self, text_ids: list[int], texts: list[str]) -> tuple[list[Prepared], list[tuple[int, str]]]:
        """The batch tokenized as one; if that fails, text by text (the parts, and who failed why)."""
        try:
            return [self._prepare(text_ids, texts)], []
        except ERRORS:
            pass
        parts, failed = [], []
        for tid, text in zip(text_ids, texts, strict=True):
            try:
                parts.append(self._prepare([tid], [text]))
            except ERRORS as err:
                failed.append((tid, _reason(err)))
        return parts, failed

    def _prepare(self, text_ids: list[int], texts: list[str]) -> Prepared:
        from attention_atlas.models.adapters.hf import MAX_CHARS

        tok = self.adapter.tokenizer
        cut = [t[:MAX_CHARS] for t in texts]  # as HFAdapter.encode cuts (the token limit then applies)
        enc = tok(cut, truncation=True, max_length=self.limit, return_special_tokens_mask=True)
        keep = [kept(self.adapter.family, s) for s in enc["special_tokens_mask"]]  # as HFAdapter.encode reads
        rows = [i[:k] for i, k in zip(enc["input_ids"], keep, strict=True)]
        masks = [s[:k] for s, k in zip(enc["special_tokens_mask"], keep, strict=True)]
        ids, lengths, special = _pad(rows, masks, tok.pad_token_id or 0)
        n = lengths.tolist()
        labels = [
            self.adapter._encoded(ids[b : b + 1, :k], special[b, :k].tolist(), [], []).tokens
            for b, k in enumerate(n)
        ]
        return Prepared(list(text_ids), ids, lengths, special, labels, self._truncated(cut, texts, n))

    def _truncated(self, cut: list[str], texts: list[str], n: list[int]) -> np.ndarray:
        """Whether a text was cut (characters, or tokens: only texts at the limit are re-tokenized)."""
        out = [len(c) < len(t) for c, t in zip(cut, texts, strict=True)]
        at_limit = [i for i, k in enumerate(n) if k >= self.limit - 1]  # less a separator dropped
        if at_limit:
            full = self.adapter.tokenizer([cut[i] for i in at_limit])["input_ids"]
            for i, f in zip(at_limit, full, strict=True):
                out[i] = out[i] or len(f) > self.limit
        return np.asarray(out, dtype=bool)


def _pad(ids: list[list[int]], special: list[list[int]], pad: int):
    """Right-padded ``ids``, each text's length and the special-token mask (False on padding)."""
    longest = max(len(i) for i in ids)
    out = torch.full((len(ids), longest), pad, dtype=torch.long)
    sp = torch.zeros((len(ids), longest), dtype=torch.bool)
    for b, (row, s) in enumerate(zip(ids, special, strict=True)):
        out[b, : len(row)] = torch.tensor(row)
        sp[b, : len(row)] = torch.tensor(s, dtype=torch.bool)
    return out, torch.tensor([len(row) for row in ids]), sp


class RecordExtractor:
    """Any adapter with ``run`` (our seq2seq families): each text's record of ``kind``, reduced."""

    def __init__(self, adapter, options: Options, kinds: tuple[str, ...]):
        self.adapter, self.options = adapter, options
        self.kind = options.kind or ("cross" if "cross" in kinds else kinds[0])
        if kinds and self.kind not in kinds:
            raise ValueError(f"{adapter.model_id} gives {', '.join(kinds)} attention, not {self.kind!r}")

    def lengths(self, texts: list[str]) -> list[int]:
        return [len(t) for t in texts]

    def _results(self, texts: list[str]) -> list:
        if hasattr(self.adapter, "run_batch"):
            return self.adapter.run_batch([(t, None) for t in texts])
        out = []
        for t in texts:
            try:
                out.append(self.adapter.run(t, max_tokens=self.options.max_tokens))
            except ValueError as err:
                out.append(err)
        return out

    def run(self, text_ids: list[int], texts: list[str]) -> Batch:
        parts, failed = [], []
        for tid, result in zip(text_ids, self._results(texts), strict=True):
            if isinstance(result, Exception):
                failed.append((tid, _reason(result)))
            else:
                parts.append((tid, result))
        return _join([self._one(tid, r) for tid, r in parts], failed)

    def _one(self, tid: int, result) -> Batch:
        rec = result.records[self.kind]
        w = torch.from_numpy(np.ascontiguousarray(rec.weights))[None]
        q, k = len(rec.query_tokens), len(rec.key_tokens)
        ksp = list(rec.meta.get("key_special") or [False] * k)
        qsp = list(rec.meta.get("query_special") or [False] * q)
        special = torch.tensor([ksp], dtype=torch.bool)
        reduced = reduce_batch(
            w, torch.tensor([q]), torch.tensor([k]), special, np.asarray([tid]), self.options.top_k
        )
        same = rec.query_tokens == rec.key_tokens and qsp == ksp
        facts = {
            "text_id": np.asarray([tid], dtype=np.int64),
            "n_tokens": np.asarray([k], dtype=np.int32),
            "truncated": np.asarray([bool(rec.meta.get("truncated", False))]),
            "output": np.asarray([result.output], dtype=object),
        }
        keys = None if same else _token_rows([tid], [list(rec.key_tokens)], [ksp])
        return Batch(reduced, _token_rows([tid], [list(rec.query_tokens)], [qsp]), keys, facts, [])


def _cat(parts: list[dict]) -> dict[str, np.ndarray]:
    return {c: np.concatenate([p[c] for p in parts]) for c in parts[0]}


def _join(batches: list[Batch], failed: list[tuple[int, str]]) -> Batch:
    """One Batch from per-text ones (a batch where every text failed has empty tables)."""
    if not batches:
        return Batch(Reduced({}, {}), {}, None, {}, failed)
    keys = [b.key_tokens for b in batches if b.key_tokens is not None]
    return Batch(
        Reduced(_cat([b.reduced.stats for b in batches]), _cat([b.reduced.links for b in batches])),
        _cat([b.tokens for b in batches]),
        _cat(keys) if keys else None,
        _cat([b.texts for b in batches]),
        failed,
    )


def extractor(adapter, options: Options):
    """The extractor for ``adapter``: batched for a Hugging Face encoder or causal model."""
    from attention_atlas.models.registry import info

    if getattr(adapter, "family", None) in ("encoder", "causal") and hasattr(adapter, "tokenizer"):
        return HFExtractor(adapter, options)
    try:
        kinds = info(adapter.model_id).kinds
    except KeyError:
        kinds = ()
    return RecordExtractor(adapter, options, kinds)


def plan(lengths: list[int], ids: list[int], options: Options, cells_per_token2: int) -> list[list[int]]:
    """Batches of text ids, sorted by length so a batch pads little, each within the cell budget."""
    order = sorted(range(len(ids)), key=lambda i: lengths[i])
    batches, cur, longest = [], [], 0
    for i in order:
        n = max(longest, lengths[i], 1)
        if cur and (
            len(cur) >= options.batch_size or (len(cur) + 1) * n * n * cells_per_token2 > CELL_BUDGET
        ):
            batches.append(cur)
            cur, n = [], max(lengths[i], 1)
        cur.append(ids[i])
        longest = n
    if cur:
        batches.append(cur)
    return batches
