"""Attention Atlas: the Streamlit entry point (page list and the shared sidebar).

The pages live in app_pages/, not pages/: Streamlit 1.67 still treats a folder named pages/
beside the entry point as a legacy multipage app on a fresh server's first request, which
serves its own menu on a deep link and bypasses this navigation (a browser test guards it).
"""

import streamlit as st

from attention_atlas.serve.process import limit_arenas, limit_kernel_cache, passive_threads

limit_arenas()  # once per server: what sessions free goes back to the system (serve/process.py)
limit_kernel_cache()  # before any model runs: oneDNN's kernels per input shape stay bounded
passive_threads()  # before torch loads: its threads sleep between operations instead of spinning
st.set_page_config(page_title="Attention Atlas", page_icon="🔭", layout="wide")

PAGES = {
    "Start": [
        st.Page("app_pages/home.py", title="Home", icon="🏠", default=True),
    ],
    "Attention math": [
        st.Page("app_pages/scoring.py", title="Scoring functions", icon="🎯", url_path="scoring"),
        st.Page("app_pages/positional.py", title="Positional encoding", icon="🌊", url_path="positional"),
        st.Page("app_pages/pooling.py", title="Attention pooling", icon="📈", url_path="pooling"),
        st.Page("app_pages/complexity.py", title="Attention vs CNN, RNN", icon="⏱️", url_path="complexity"),
    ],
    "Transformers": [
        st.Page("app_pages/transformer.py", title="Transformer heads", icon="🧠", url_path="transformer"),
        st.Page("app_pages/long_input.py", title="Long inputs", icon="📜", url_path="long-input"),
        st.Page("app_pages/corpus.py", title="Corpus", icon="📚", url_path="corpus"),
        st.Page("app_pages/prediction.py", title="Inside a prediction", icon="🔬", url_path="prediction"),
    ],
    "Seq2seq": [
        st.Page("app_pages/couplets.py", title="Couplets", icon="🏮", url_path="couplets"),
        st.Page("app_pages/translation.py", title="Translation", icon="🗼", url_path="translation"),
        st.Page("app_pages/watch_learn.py", title="Watch attention learn", icon="🎬", url_path="watch-learn"),
    ],
    "Your models": [
        st.Page("app_pages/checkpoint.py", title="Checkpoint inspector", icon="🧳", url_path="checkpoint"),
    ],
}

# Every page listed: a folded "View 3 more" hid Translation and Watch attention learn from a class.
page = st.navigation(PAGES, expanded=True)

# A fresh server's first run imports PyTorch, Plotly and pandas here (seconds): say so, instead of a
# blank page. Later runs find them imported and finish before the spinner's half-second delay.
with st.spinner("Starting Attention Atlas: loading PyTorch and the charts (once per server)…"):
    from attention_atlas.ui import cached  # noqa: F401  (the pages' shared imports)
    from attention_atlas.ui.widgets import sidebar_device, sidebar_display

    sidebar_device()
sidebar_display()  # projector mode and high-contrast colours, kept in the URL (?present=1, ?contrast=1)
page.run()
