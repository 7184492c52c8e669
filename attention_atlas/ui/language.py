"""The interface's language for each visitor: the sidebar's English / 中文 switch, kept in the URL
(``?lang=zh``), a first visit following the browser's language (``st.context.locale``). Strings are
looked up through ``attention_atlas.i18n``, whose resolver reads this session's choice."""

from __future__ import annotations

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from attention_atlas import i18n
from attention_atlas.i18n import _
from attention_atlas.ui.url_state import LANG, app_language


def session_language() -> str | None:
    """This session's language, or None outside a script run (a background thread: English)."""
    if get_script_run_ctx(suppress_warning=True) is None:
        return None
    return st.session_state.get(LANG)


i18n.set_resolver(session_language)


def choose_language() -> str:
    """Settle this run's language before anything is drawn (the page list is translated too)."""
    return app_language(i18n.normalise(st.context.locale) or i18n.SOURCE)


def sidebar_language() -> None:
    """The switch itself: a change reruns the page in the other language, every setting kept."""
    st.sidebar.radio(
        _("Language"),
        list(i18n.LANGUAGES),
        format_func=i18n.LANGUAGES.get,
        key=LANG,
        horizontal=True,
        help=_("The interface's language. In a link: ?lang=zh or ?lang=en."),
    )
