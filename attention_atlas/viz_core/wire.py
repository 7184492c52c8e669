"""What the browser's live views receive: every head's weights packed in 16 bits, and record ids.

Pure numpy (no streamlit): ``ui.live_heads`` sends these; ``ui/live_heads.js`` unpacks them.
"""

from __future__ import annotations

import base64
import hashlib

import numpy as np

from attention_atlas.viz_core.figures import display_precision, head_title
from attention_atlas.viz_core.record import AttentionRecord

# All heads' weights travel with the model view up to this size (16 bits a weight, the same
# 3 significant digits as every heatmap): minilm's 72 heads up to 131 tokens, smollm2's 270
# up to 68, couplet-transformer's 12 up to 322. Beyond it a click asks Python for the head.
MAX_HEADS_BYTES = 2_500_000


def record_id(*inputs: object) -> str:
    """A short id of the record that these inputs (model, text, options…) produce."""
    return hashlib.sha256("\x1f".join(map(str, inputs)).encode()).hexdigest()[:16]


def pack16(weights: np.ndarray) -> np.ndarray:
    """Attention weights in [0, 1] at display precision, losslessly in 16 bits each.

    ``display_precision`` leaves 10 mantissa bits and no magnitude below 2⁻⁶², so the
    float32 exponent (65…127) fits in 6 bits: code = (exponent − 64) · 2¹⁰ + mantissa,
    0 for 0. ``ui/live_heads.js`` turns the codes back into the same float32 values.
    """
    bits = display_precision(np.clip(weights, 0, 1)).view(np.uint32).astype(np.int64)
    code = ((bits >> 23) - 64) << 10 | (bits >> 13) & 0x3FF
    return np.where(bits == 0, 0, code).astype("<u2")


def all_heads(record: AttentionRecord, rid: str, limit: int = MAX_HEADS_BYTES) -> dict | None:
    """Every head's weights, colour range and title for redrawing in the browser, or None if they
    take more than ``limit`` bytes (a page's message; a notebook's file allows more)."""
    if record.weights.size * 2 > limit:
        return None
    layers, heads = record.n_layers, record.n_heads
    return {
        "id": rid,
        "shape": list(record.weights.shape),
        "weights": base64.b64encode(pack16(record.weights).tobytes()).decode("ascii"),
        "zmax": record.weights.max(axis=(-2, -1)).ravel().tolist(),  # as heatmap() sets it
        "titles": titles(layers, heads),
    }


def titles(layers: int, heads: int) -> list[str]:
    """Every head's title, layer by layer, in the language in force."""
    return [head_title(layer, head) for layer in range(layers) for head in range(heads)]


def in_language(heads: dict | None) -> dict | None:
    """``heads`` (``all_heads``) with its titles in the language in force: a page that caches it
    (built once per input, for every visitor, in the first one's language) calls this where it
    shows it."""
    if heads is None:
        return None
    layers, per_layer = heads["shape"][:2]
    return {**heads, "titles": titles(layers, per_layer)}
