"""Inside a prediction's four tabs (the logit lens, generation, contributions, patching) for one causal LM: the
page's bundled models (``app_pages/prediction.py``) and an uploaded decoder in the Checkpoint
inspector share them. Each tab runs the model, so only the one a visitor opened is drawn."""

from __future__ import annotations

import streamlit as st

from attention_atlas.i18n import N_
from attention_atlas.ui import contribution_views, generate_views, lens_views, patching_views
from attention_atlas.ui.cached import Source
from attention_atlas.ui.url_state import Link, Unlinked

TABS = [N_("Logit lens"), N_("Generate"), N_("Contributions"), N_("Patching")]


def prediction_tabs(source: Source, text: str, text_key: str, link: Link | Unlinked, tab_key: str) -> None:
    """The tabs for ``source`` reading ``text`` (``text_key``: the text box's key, which Generate can
    fill with the prompt and its continuation)."""
    labels, key = link.tabs("tab", tab_key, TABS)
    lens, generate, contrib, patch = st.tabs(labels, key=key, on_change="rerun")
    if lens.open:
        with lens:
            lens_views.lens_tab(source, text, link)
    if generate.open:
        with generate:
            generate_views.generate_tab(source, text, text_key)
    if contrib.open:
        with contrib:
            contribution_views.contributions_tab(source, text)
    if patch.open:
        with patch:
            patching_views.patching_tab(source, link)
