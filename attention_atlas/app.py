"""Attention Atlas: the Streamlit entry point (page list and the shared sidebar).

``atlas serve`` runs this file; ``streamlit run app.py`` in a checkout runs the root ``app.py``,
which calls ``main`` from here. Page scripts are named by their absolute paths (``paths.page``), so
navigation, deep links and page links work whichever of the two is Streamlit's main script.

The pages live in app_pages/, not pages/: Streamlit 1.67 still treats a folder named pages/
beside the entry point as a legacy multipage app on a fresh server's first request, which
serves its own menu on a deep link and bypasses this navigation (a browser test guards it).
"""

import streamlit as st

from attention_atlas.i18n import _
from attention_atlas.paths import page
from attention_atlas.serve.process import limit_arenas, limit_kernel_cache, passive_threads

limit_arenas()  # once per server: what sessions free goes back to the system (serve/process.py)
limit_kernel_cache()  # before any model runs: oneDNN's kernels per input shape stay bounded
passive_threads()  # before torch loads: its threads sleep between operations instead of spinning


def pages() -> dict[str, list[st.Page]]:
    """The navigation's sections and their pages (built in a script run: ``st.Page`` needs one)."""
    return {
        _("Start"): [
            st.Page(page("home.py"), title=_("Home"), icon="🏠", default=True),
        ],
        _("Attention math"): [
            st.Page(page("scoring.py"), title=_("Scoring functions"), icon="🎯", url_path="scoring"),
            st.Page(page("positional.py"), title=_("Positional encoding"), icon="🌊", url_path="positional"),
            st.Page(page("pooling.py"), title=_("Attention pooling"), icon="📈", url_path="pooling"),
            st.Page(page("complexity.py"), title=_("Attention vs CNN, RNN"), icon="⏱️", url_path="complexity"),
        ],
        _("Transformers"): [
            st.Page(page("transformer.py"), title=_("Transformer heads"), icon="🧠", url_path="transformer"),
            st.Page(page("long_input.py"), title=_("Long inputs"), icon="📜", url_path="long-input"),
            st.Page(page("corpus.py"), title=_("Corpus"), icon="📚", url_path="corpus"),
            st.Page(page("prediction.py"), title=_("Inside a prediction"), icon="🔬", url_path="prediction"),
            st.Page(page("attribution.py"), title=_("Does attention explain?"), icon="🔍", url_path="attribution"),
        ],
        _("Seq2seq"): [
            st.Page(page("couplets.py"), title=_("Couplets"), icon="🏮", url_path="couplets"),
            st.Page(page("translation.py"), title=_("Translation"), icon="🗼", url_path="translation"),
            st.Page(page("watch_learn.py"), title=_("Watch attention learn"), icon="🎬", url_path="watch-learn"),
        ],
        _("Your models"): [
            st.Page(page("checkpoint.py"), title=_("Checkpoint inspector"), icon="🧳", url_path="checkpoint"),
        ],
    }


def main() -> None:
    """One script run: the page config, the navigation, the sidebar, then the page asked for."""
    st.set_page_config(page_title="Attention Atlas", page_icon="🔭", layout="wide")
    from attention_atlas.ui.language import choose_language, sidebar_language

    choose_language()  # before anything is drawn: the page list is in the visitor's language too
    # Every page listed: a folded "View 3 more" hid Translation and Watch attention learn from a class.
    current = st.navigation(pages(), expanded=True)

    # A fresh server's first run imports PyTorch, Plotly and pandas here (seconds): say so, instead of a
    # blank page. Later runs find them imported and finish before the spinner's half-second delay.
    with st.spinner(_("Starting Attention Atlas: loading PyTorch and the charts (once per server)…")):
        from attention_atlas.ui import cached  # noqa: F401  (the pages' shared imports)
        from attention_atlas.ui.widgets import sidebar_device, sidebar_display

        sidebar_device()
    sidebar_language()  # English / 中文, kept in the URL (?lang=zh)
    sidebar_display()  # projector mode and high-contrast colours, kept in the URL (?present=1, ?contrast=1)
    current.run()


if __name__ == "__main__":  # Streamlit runs its main script as __main__
    main()
