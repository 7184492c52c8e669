"""The Transformer page's long-input mode: inputs up to the model's own context (SmolLM2: 8,192
tokens), every view computed from captured queries and keys (``models.adapters.capture``,
``viz_core.blockwise``), never from a full tensor of every head's weights."""

from __future__ import annotations

HELP = "Up to the model's own context (SmolLM2: 8,192 tokens): views computed block-wise from queries and keys."


def offered(model_id: str) -> bool:
    """Whether ``model_id`` has a long-input mode (its adapter's attention can be captured)."""
    return model_id in ("smollm2", "minilm")


def page(model_id: str, where) -> None:
    """Draw the long-input mode of the Transformer page for ``model_id``; ``where`` holds the input box."""
    where.info("Long inputs are being built.")
