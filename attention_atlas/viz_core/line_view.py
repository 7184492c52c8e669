"""BertViz's line view as data: the tokens in two columns and one link per (query, key) weight.

The browser (``ui/line_view.js``) draws each link as a line whose opacity is its weight, one
colour per head, and isolates a token's links on hover. Links under ``THRESHOLD`` are left out
(they would be invisible), which keeps the message small; ``MAX_TOKENS`` bounds the columns.
"""

from __future__ import annotations

import numpy as np

from attention_atlas.i18n import _
from attention_atlas.viz_core.record import AttentionRecord
from attention_atlas.viz_core.tokens import clean_tokens

THRESHOLD = 0.01  # a weight below this draws nothing visible
MAX_TOKENS = 256  # more rows than this do not fit a page as two columns
# Okabe–Ito, colour-blind safe: one colour per overlaid head, in the order the heads are picked.
COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")


def head_links(weights: np.ndarray, threshold: float = THRESHOLD) -> list[list[float]]:
    """``[query, key, weight]`` for every weight of a ``[query, key]`` matrix at or above ``threshold``."""
    q, k = np.nonzero(weights >= threshold)
    return [[int(i), int(j), round(float(weights[i, j]), 4)] for i, j in zip(q, k, strict=True)]


def line_data(record: AttentionRecord, layer: int, heads: list[int], threshold: float = THRESHOLD) -> dict:
    """What the line view draws: both token columns and each picked head's links and colour."""
    n_q, n_k = len(record.query_tokens), len(record.key_tokens)
    if max(n_q, n_k) > MAX_TOKENS:
        raise ValueError(
            _(
                "the line view draws up to {limit} tokens a column; this input has {n} "
                "(the heatmap above shows them all)",
                limit=MAX_TOKENS,
                n=max(n_q, n_k),
            )
        )
    if not 0 <= layer < record.n_layers:
        raise ValueError(_("layer {layer} is out of range (0–{last})", layer=layer, last=record.n_layers - 1))
    picked = [h for h in dict.fromkeys(heads) if 0 <= h < record.n_heads]
    return {
        "queries": clean_tokens(record.query_tokens),
        "keys": clean_tokens(record.key_tokens),
        "heads": [
            {
                "head": h,
                "label": _("head {h}", h=h),  # the legend's, in the language in force
                "colour": COLOURS[i % len(COLOURS)],
                "links": head_links(record.head(layer, h), threshold),
            }
            for i, h in enumerate(picked)
        ],
        "self": record.kind != "cross",
    }
