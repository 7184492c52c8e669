"""Attention Atlas: the Streamlit entry point (page list and the shared sidebar).

The pages live in views/, not pages/: Streamlit still treats a folder named pages/ as a
legacy multipage app on a fresh server's first request, which bypasses this navigation.
"""

import streamlit as st

st.set_page_config(page_title="Attention Atlas", page_icon="🔭", layout="wide")

PAGES = {
    "Start": [
        st.Page("views/home.py", title="Home", icon="🏠", default=True),
    ],
    "Attention math": [
        st.Page("views/scoring.py", title="Scoring functions", icon="🎯", url_path="scoring"),
        st.Page("views/positional.py", title="Positional encoding", icon="🌊", url_path="positional"),
        st.Page("views/pooling.py", title="Attention pooling", icon="📈", url_path="pooling"),
    ],
    "Transformers": [
        st.Page("views/transformer.py", title="Transformer heads", icon="🧠", url_path="transformer"),
    ],
    "Seq2seq": [
        st.Page("views/couplets.py", title="Couplets", icon="🏮", url_path="couplets"),
        st.Page("views/translation.py", title="Translation", icon="🗼", url_path="translation"),
    ],
    "Your models": [
        st.Page("views/checkpoint.py", title="Checkpoint inspector", icon="🧳", url_path="checkpoint"),
    ],
}

page = st.navigation(PAGES)

from atlas_ui import sidebar_device  # noqa: E402  (after set_page_config, as Streamlit requires)

sidebar_device()
page.run()
