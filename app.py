"""Attention Atlas: the Streamlit entry point (page list and the shared sidebar)."""

import streamlit as st

st.set_page_config(page_title="Attention Atlas", page_icon="🔭", layout="wide")

PAGES = {
    "Start": [
        st.Page("pages/home.py", title="Home", icon="🏠", default=True),
    ],
    "Attention math": [
        st.Page("pages/scoring.py", title="Scoring functions", icon="🎯", url_path="scoring"),
        st.Page("pages/positional.py", title="Positional encoding", icon="🌊", url_path="positional"),
        st.Page("pages/pooling.py", title="Attention pooling", icon="📈", url_path="pooling"),
    ],
}

page = st.navigation(PAGES)

from atlas_ui import sidebar_device  # noqa: E402  (after set_page_config, as Streamlit requires)

sidebar_device()
page.run()
