"""The Transformer page's comparisons: a second input beside the first (the difference of every
head where the tokens line up), and one token masked and the model rerun (exBERT's idea)."""

from __future__ import annotations

import streamlit as st


def compare_tab(model_id: str, text: str, kind: str, merge: bool, hide: bool, view: dict) -> None:
    """A second sentence, its heads, and the difference from the first input's."""
    st.info("Comparing two inputs is being built.")


def mask_tab(model_id: str, text: str, kind: str, merge: bool, hide: bool, view: dict) -> None:
    """Click a token to replace it with the model's mask (or pad) token, and see every head's change."""
    st.info("Masking a token is being built.")
