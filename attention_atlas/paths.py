"""Where the package keeps its files, and where it may write its own.

Everything the app reads ships inside the package (a wheel works from any folder): the bundled
weights with their cards, the corpora, the measured training costs. What the app writes (the
converted SmolLM2, corpus stores, training runs) goes to the cache folder, never next to the code.
"""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
WEIGHTS = PACKAGE / "weights"  # our bundles, one folder per model id, each with its model card
DATA = PACKAGE / "data"  # the corpora (each with its SOURCE.md) and measured results the pages show
APP = PACKAGE / "app.py"  # the Streamlit entry point `atlas serve` runs
PAGES = PACKAGE / "app_pages"  # one script per page


def page(name: str) -> str:
    """The page script ``name`` (``"home.py"``) by its absolute path: Streamlit resolves a relative one
    against the main script's folder, which is the checkout's root under ``streamlit run app.py``."""
    return str(PAGES / name)


def cache_dir() -> Path:
    """``$ATLAS_CACHE``, default ``~/.cache/attention-atlas``: read at each call, so tests can move it."""
    return Path(os.environ.get("ATLAS_CACHE", Path.home() / ".cache" / "attention-atlas"))
