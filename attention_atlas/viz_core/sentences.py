"""Documents read by sentence: the token ranges of a long input's sentences (or paragraphs), and a
head's attention between them — each query sentence's rows averaged, each key sentence's columns
summed, so a row still sums to what a token's row sums to (1, or 1 less a sink's share) — computed
from captured queries and keys a block of rows at a time (``viz_core.blockwise``), never the full matrix.

A sentence ends after a token that ends in ``. ! ? … 。 ！ ？`` (closing quotes and brackets allowed)
when the next token starts a new word (it begins with a space or a line break; tokenizers whose labels
carry no spaces, such as WordPiece, split at every such token), or after a line break. A paragraph ends
at a blank line. Spans of nothing but white space join the span before them.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

import numpy as np

from attention_atlas.i18n import N_
from attention_atlas.viz_core import blockwise as bw

UNITS = (N_("sentence"), N_("paragraph"))  # values (the URL, the code); shown through ``_``
_END = re.compile(r"[.!?…。！？][\"'”’)\]」』）]*$")
SNIPPET = 60  # characters of a span's text in its label (the hover)


@dataclass(frozen=True)
class Spans:
    """``edges[s]:edges[s + 1]`` are span ``s``'s tokens; ``texts[s]`` its text."""

    edges: np.ndarray  # [spans + 1] int64, 0 … n
    texts: list[str]

    def __len__(self) -> int:
        return len(self.texts)

    def labels(self) -> list[str]:
        """``"s · first words…"`` per span (unique, for category axes)."""
        return [f"{s} · {_snippet(t)}" for s, t in enumerate(self.texts)]

    def of_token(self, i: int) -> int:
        return int(np.searchsorted(self.edges, i, side="right")) - 1


def _snippet(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= SNIPPET else text[: SNIPPET - 1] + "…"


def _breaks(tokens: list[str], unit: str) -> list[int]:
    """Token positions after which a span ends."""
    if unit not in UNITS:
        raise ValueError(f"read by {' or '.join(UNITS)}, not {unit!r}")
    spaced = any(t[:1].isspace() for t in tokens)
    out = []
    for i, t in enumerate(tokens):
        nxt = tokens[i + 1] if i + 1 < len(tokens) else " "
        if unit == "paragraph":
            blank = "\n\n" in t or (t.startswith("\n") and i > 0 and tokens[i - 1].endswith("\n"))
            ends = blank or ("\n" in t and nxt.startswith("\n"))
        else:
            new_word = not spaced or nxt[:1].isspace()
            ends = "\n" in t or (bool(_END.search(t.rstrip())) and new_word)
        if ends:
            out.append(i + 1)
    return out


def spans(tokens: list[str], unit: str = "sentence") -> Spans:
    """The sentences (or paragraphs) of ``tokens`` (labels as the model reads them)."""
    n = len(tokens)
    if n == 0:
        raise ValueError("no tokens to split")
    edges = [0]
    for b in _breaks(tokens, unit):
        if b < n and b > edges[-1]:
            edges.append(b)
    edges.append(n)
    kept = [edges[0]]
    for a, b in itertools.pairwise(edges):  # a blank span joins the one before it
        if "".join(tokens[a:b]).strip() or a == 0:
            kept.append(b)
        else:
            kept[-1] = b
    texts = ["".join(tokens[a:b]) for a, b in itertools.pairwise(kept)]
    return Spans(np.asarray(kept, dtype=np.int64), texts)


def by_span(cap: bw.QKCapture, layer: int, head: int, parts: Spans) -> np.ndarray:
    """``[spans, spans]``: query span ``s``'s rows averaged, summed over key span ``t``'s columns."""
    edges = parts.edges
    total = np.zeros((len(parts), len(parts)), dtype=np.float64)
    for start, block in bw.head_blocks(cap, layer, head):
        cols = np.add.reduceat(block, edges[:-1], axis=1)  # [rows, spans]: each key span summed
        stop = start + len(block)
        first, last = parts.of_token(start), parts.of_token(stop - 1)
        cuts = np.clip(edges[first : last + 1], start, stop) - start  # this block's rows of each span
        total[first : last + 1] += np.add.reduceat(cols, cuts, axis=0)
    return (total / np.diff(edges)[:, None]).astype(np.float32)


def layer_by_span(cap: bw.QKCapture, layer: int, parts: Spans) -> np.ndarray:
    """``by_span`` averaged over the layer's heads."""
    return np.mean([by_span(cap, layer, h, parts) for h in range(cap.n_heads)], axis=0)
