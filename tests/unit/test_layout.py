"""The house stays one a newcomer can find their way in: ``models/`` keeps a handful of top-level
modules, the rest in subpackages, one per concern (``analysis/``: what a forward pass is read for).
The other rules of the layout: pages (test_page_size.py), the command line's modules
(test_import_rules.py), no edits of ``sys.path`` (test_entry.py)."""

from __future__ import annotations

from tests.support import PACKAGE

MODELS_TOP_LEVEL = 6  # modules directly in models/, __init__ included


def test_models_keeps_at_most_six_top_level_modules():
    top = sorted(p.name for p in (PACKAGE / "models").glob("*.py"))
    assert 1 < len(top) <= MODELS_TOP_LEVEL, f"models/ has {len(top)} top-level modules: {top}"
