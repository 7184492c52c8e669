"""BertViz's line view as data: the tokens in two columns and one link per (query, key) weight.

The browser (``ui/line_view.js``) draws each link as a line whose opacity is its weight, one
colour per head, and isolates a token's links on hover. Links under ``THRESHOLD`` are left out
(they would be invisible), which keeps the message small; ``MAX_TOKENS`` bounds the columns.
"""

from __future__ import annotations

import math

import numpy as np

from attention_atlas.i18n import _
from attention_atlas.viz_core.record import AttentionRecord
from attention_atlas.viz_core.tokens import clean_tokens

THRESHOLD = 0.01  # a weight below this draws nothing visible
MAX_TOKENS = 256  # more rows than this do not fit a page as two columns
# Okabe–Ito, colour-blind safe: one colour per overlaid head, in the order the heads are picked.
COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")
# Those of them that read on a white page and on a black one alike (no black, no yellow).
BOTH_THEMES = COLOURS[:6]


def head_colours(n: int) -> list[str]:
    """A colour for each of ``n`` heads, all different, each readable on a light and a dark page:
    Okabe–Ito's for up to six, else hues spread evenly round OKLCH's circle at one perceived
    lightness (neighbouring heads a step lighter and darker, so that 12 or 32 stay apart)."""
    if n <= len(BOTH_THEMES):
        return list(BOTH_THEMES[:n])
    return [_oklch(0.6 if i % 2 else 0.7, 0.14, 250 + 360 * i / n) for i in range(n)]


def _oklch(lightness: float, chroma: float, hue: float) -> str:
    """``#rrggbb`` of an OKLCH colour (Björn Ottosson's matrices), each channel clipped to sRGB."""
    a, b = chroma * math.cos(math.radians(hue)), chroma * math.sin(math.radians(hue))
    lms = np.array([lightness + 0.3963377774 * a + 0.2158037573 * b,
                    lightness - 0.1055613458 * a - 0.0638541728 * b,
                    lightness - 0.0894841775 * a - 1.2914855480 * b]) ** 3  # fmt: skip
    rgb = np.array([[4.0767416621, -3.3077115913, 0.2309699292],
                    [-1.2684380046, 2.6097574011, -0.3413193965],
                    [-0.0041960863, -0.7034186147, 1.7076147010]]) @ lms  # fmt: skip
    rgb = np.clip(rgb, 0, 1)
    srgb = np.where(rgb <= 0.0031308, 12.92 * rgb, 1.055 * rgb ** (1 / 2.4) - 0.055)
    return "#" + "".join(f"{round(255 * c):02x}" for c in srgb)


def head_links(weights: np.ndarray, threshold: float = THRESHOLD) -> list[list[float]]:
    """``[query, key, weight]`` for every weight of a ``[query, key]`` matrix at or above ``threshold``."""
    q, k = np.nonzero(weights >= threshold)
    return [[int(i), int(j), round(float(weights[i, j]), 4)] for i, j in zip(q, k, strict=True)]


def line_data(
    record: AttentionRecord,
    layer: int,
    heads: list[int],
    threshold: float = THRESHOLD,
    colours: list[str] | None = None,
) -> dict:
    """What the line view draws: both token columns and each picked head's links and colour:
    ``colours[h]`` for head ``h`` where given (a head keeps its colour whichever are drawn),
    else ``COLOURS`` in the order the heads are picked."""
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
                "colour": colours[h] if colours else COLOURS[i % len(COLOURS)],
                "links": head_links(record.head(layer, h), threshold),
            }
            for i, h in enumerate(picked)
        ],
        "self": record.kind != "cross",
    }
