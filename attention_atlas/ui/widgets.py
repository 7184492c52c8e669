"""Streamlit pieces every page shares: the device line and display switches in the sidebar (projector
mode, high-contrast colours), a chart with its CSV download, user text shown as text, counted
words, and the inputs that say what they cut or refuse.

Kept apart from ``viz_core`` (no streamlit there) and ``models`` (no streamlit there).
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from attention_atlas.i18n import _, ngettext
from attention_atlas.ui.plain_text import plain  # the pages import it from here too
from attention_atlas.ui.url_state import app_flag
from attention_atlas.viz_core.export import to_csv
from attention_atlas.viz_core.figures import PLOTLY_CONFIG
from attention_atlas.viz_core.layout import high_contrast, projector

PRESENT, CONTRAST = "present", "contrast"  # the sidebar's display switches (?present=1, ?contrast=1)
NOTE = "_note_"  # session-state prefix: what an input cut or refused, shown on the next run
_EXAMPLE = "_example_"  # session-state prefix: the example a text box was last given


# The words ``plural`` is called with, in the catalog: "12 个头" in Chinese. A word not here stays English.
_COUNTED: dict[str, Callable[[int], str]] = {
    "block": lambda n: ngettext("{n:,} block", "{n:,} blocks", n, n=n),
    "character": lambda n: ngettext("{n:,} character", "{n:,} characters", n, n=n),
    "convolution layer": lambda n: ngettext("{n:,} convolution layer", "{n:,} convolution layers", n, n=n),
    "edge": lambda n: ngettext("{n:,} edge", "{n:,} edges", n, n=n),
    "head": lambda n: ngettext("{n:,} head", "{n:,} heads", n, n=n),
    "hit": lambda n: ngettext("{n:,} hit", "{n:,} hits", n, n=n),
    "layer": lambda n: ngettext("{n:,} layer", "{n:,} layers", n, n=n),
    "new token": lambda n: ngettext("{n:,} new token", "{n:,} new tokens", n, n=n),
    "position": lambda n: ngettext("{n:,} position", "{n:,} positions", n, n=n),
    "query": lambda n: ngettext("{n:,} query", "{n:,} queries", n, n=n),
    "step": lambda n: ngettext("{n:,} step", "{n:,} steps", n, n=n),
    "tensor": lambda n: ngettext("{n:,} tensor", "{n:,} tensors", n, n=n),
    "text": lambda n: ngettext("{n:,} text", "{n:,} texts", n, n=n),
    "token": lambda n: ngettext("{n:,} token", "{n:,} tokens", n, n=n),
}
_IRREGULAR = {"query": "queries"}  # the plurals of ``_COUNTED`` that are not the word and an s


def plural(n: int, word: str, many: str | None = None) -> str:
    """``'1 character'``, ``'2 characters'``, ``'1,024 tokens'``; in the interface's language when
    the catalog knows ``word`` (``_COUNTED``). New code calls ``ngettext`` itself."""
    many = many or word + "s"
    if word in _COUNTED and many == _IRREGULAR.get(word, word + "s"):
        return _COUNTED[word](n)
    return f"{n:,} {word if n == 1 else many}"


@st.cache_resource(show_spinner=False)
def _device_line():
    """The server's device (None: the CPU as a fallback) and the problem with the one asked for;
    described where it is shown, in the visitor's language (a resource is shared by every visitor)."""
    from attention_atlas.models.device import DeviceError, pick_device

    try:
        return pick_device(), None
    except DeviceError as err:
        return None, err.args[0]  # an i18n.later message: plain() shows it in each visitor's language


def sidebar_device() -> None:
    from attention_atlas.models.device import describe

    chosen, problem = _device_line()
    device = _("CPU (fallback)") if chosen is None else plain(describe(chosen))
    st.sidebar.markdown(_("**Device:** {device}", device=device))
    if problem:
        st.sidebar.warning(plain(problem))


# Projector mode: figures get their fonts, gaps and colours in ``for_screen`` (every chart passes
# through it), captions (secondary prose) are hidden, and the sidebar collapses (``sidebar_display``);
# a page's introduction folds into an expander through ``intro``. The controls grow with the text,
# and their labels (buttons, tabs, page links, widget labels) wrap instead of being cut; columns of
# controls too narrow for them wrap onto the next row, and tabs that do not fit onto a second line
# (a projector is often driven at a zoom, where none of them fit on one line any more).
# A select box shows its value in an input, which cannot wrap: it is as wide as its value, and its
# column no narrower. (Icons keep their size: they are glyphs in a box of fixed width.)
_CONTROLS = (
    '[data-testid="stWidgetLabel"], [data-testid="stMetricLabel"], [data-testid="stTab"], '
    '[data-testid="stPageLink"], [data-testid="stSliderThumbValue"], [data-testid="stSliderTickBar"], '
    "button, label, input, textarea, summary"
)
# A slider's value sits in a box as narrow as its thumb: it stays on one line ("32", not "3" over "2").
_SLIDER_VALUES = '[data-testid="stSliderThumbValue"], [data-testid="stSliderTickBar"]'
_MAIN = '[data-testid="stMain"]'
# A table (st.dataframe) draws its cells on a canvas, which no font size reaches: it is zoomed instead,
# its 14 px text to 20 px (the grid maps the pointer through the scale it measures on itself).
TABLE_ZOOM = 20 / 14
_PROJECTOR_CSS = f"""<style>
{_MAIN} [data-testid="stCaptionContainer"] {{ display: none; }}
[data-testid="stMainBlockContainer"] {{ padding-top: 2rem; }}
{_MAIN} :is({_CONTROLS}), {_MAIN} :is({_CONTROLS}) :not([data-testid="stIconMaterial"]) {{ font-size: 1.2rem; }}
{_MAIN} :is({_CONTROLS}) * {{ white-space: normal; overflow: visible; text-overflow: clip; }}
{_MAIN} :is({_SLIDER_VALUES}), {_MAIN} :is({_SLIDER_VALUES}) * {{ white-space: nowrap; }}
{_MAIN} [role="tablist"] {{ flex-wrap: wrap; }}
{_MAIN} [data-testid="stHorizontalBlock"] {{ flex-wrap: wrap; }}
{_MAIN} [data-testid="stColumn"] {{ min-width: min(11rem, 100%); }}
{_MAIN} input[role="combobox"] {{ field-sizing: content; }}
{_MAIN} [data-testid="stColumn"]:has(input[role="combobox"]) {{ min-width: min-content; }}
{_MAIN} [data-testid="stDataFrame"] {{ zoom: {TABLE_ZOOM:.3f}; max-width: 100%; }}
{_MAIN} [data-testid="stDataFrameResizable"] {{ width: 100% !important; }}
</style>"""


def presenting() -> bool:
    """Whether projector mode is on (the sidebar's toggle or ``?present=1``)."""
    return bool(st.session_state.get(PRESENT))


def sidebar_display() -> None:
    """The sidebar's display switches, each kept in the URL across pages: projector mode (large
    figure text, thicker cell gaps, larger controls, captions hidden, the sidebar collapsed) and
    high-contrast colours."""
    st.sidebar.toggle(
        _("Projector mode"),
        key=app_flag(PRESENT),
        help=_(
            "For a classroom: figure text of 20 px and more, thicker cell gaps, larger controls, captions "
            "hidden, the sidebar collapsed (» brings it back). In a link: ?present=1."
        ),
    )
    st.sidebar.toggle(
        _("High-contrast colours"),
        key=app_flag(CONTRAST),
        help=_(
            "Cividis instead of blues, and colour-blind-safe line colours (Okabe–Ito). In a link: ?contrast=1."
        ),
    )
    # Streamlit applies a changed initial state at once (unless this browser's visitor has opened or
    # closed the sidebar by hand before: that choice is kept); the toggle is then behind the ">" button.
    st.set_page_config(initial_sidebar_state="collapsed" if presenting() else "auto")
    if presenting():
        st.html(_PROJECTOR_CSS)


def for_screen(fig: go.Figure) -> go.Figure:
    """``fig`` as this visitor's display switches want it: projector fonts and gaps, high-contrast
    colours. Whatever draws a figure without ``chart`` passes it through here first."""
    contrast = bool(st.session_state.get(CONTRAST))
    if presenting() or contrast:
        return projector(fig, contrast=contrast) if presenting() else high_contrast(go.Figure(fig))
    return fig


def intro(text: str, label: str | None = None) -> None:
    """A page's introduction (Markdown): shown, or folded into an expander ``label`` ("About this
    page" unless given) in projector mode."""
    if presenting():
        with st.expander(_("About this page") if label is None else label):
            st.markdown(text)
    else:
        st.markdown(text)


def fact(text: str, where=None) -> None:
    """A caption that carries a number (or a notice) the class should see: a caption, or plain
    text in projector mode (where captions are hidden); in ``where`` (a column) if given."""
    place = st if where is None else where
    (place.markdown if presenting() else place.caption)(text)


def chart(fig: go.Figure, frame: pd.DataFrame | Callable[[], pd.DataFrame], key: str, filename: str) -> None:
    """A Plotly chart (as ``for_screen`` draws it) with a CSV download of the numbers behind it underneath
    (``frame``, or a function that makes it when the button is pressed: ``csv_button``)."""
    st.plotly_chart(for_screen(fig), width="stretch", config=PLOTLY_CONFIG, key=f"{key}_chart")
    csv_button(frame, key, filename)


def csv_button(
    frame: pd.DataFrame | Callable[[], pd.DataFrame], key: str, filename: str, label: str | None = None
) -> None:
    """A download of ``frame`` (or of what ``frame()`` returns) as ``filename``.csv (the numbers
    behind a chart), named ``label``. The CSV is written when the button is pressed, not on every
    run: a 200-token head's is 1.2 MB and ~0.1 s, which each click on a head used to pay. An upload's
    id (``upload:…``) in ``filename`` is written with ``_``: no colon in a file name."""
    filename = filename.replace(":", "_")
    make = frame if callable(frame) else (lambda: frame)
    st.download_button(
        _("⬇ CSV: {name}", name=label or filename),
        lambda: to_csv(make()),
        file_name=f"{filename}.csv",
        mime="text/csv",
        key=f"{key}_csv",
        on_click="ignore",
    )


def text_box(where, label: str, key: str, limit: int, example: str = "", **kw) -> str:
    """A text input holding at most ``limit`` characters, that says what it cuts.

    The browser's own ``max_chars`` drops a longer paste without a word (the box keeps the old
    text); here a longer text is cut to ``limit`` in the box itself, and a warning says so for
    as long as the box holds the cut text. ``example`` fills the box until the user types in
    it: a new example (another model's) replaces the old one, never what the user typed.
    """
    if st.session_state.get(key) in (None, st.session_state.get(_EXAMPLE + key)):
        st.session_state[key] = example
    st.session_state[_EXAMPLE + key] = example

    def cut() -> None:
        text = st.session_state[key]
        if len(text) > limit:
            st.session_state[key] = text[:limit]
            had = ngettext("{n:,} character", "{n:,} characters", len(text), n=len(text))
            note = _(
                "The text had {had}; the box keeps the first {limit:,}, and they are what is used.",
                had=had,
                limit=limit,
            )
            st.session_state[NOTE + key] = (note, text[:limit])

    text = where.text_input(label, key=key, on_change=cut, **kw)
    note, kept = st.session_state.get(NOTE + key, (None, None))
    if note and text == kept:
        st.warning(note)
    return text


def whole_number(where, label: str, lo: int, hi: int, default: int, key: str, **kw) -> int:
    """A whole number from ``lo`` to ``hi``, the range in its label.

    With ``min_value``/``max_value`` the browser refuses a number outside them by turning the
    field red while the page silently stays as it was; here such a number is brought back into
    the range in the field itself, and a warning says what was refused and what is used.
    """
    value = st.session_state.setdefault(key, default)
    if value is None or not lo <= value <= hi:  # typed out of range, or a range that shrank (another model)
        fixed = default if value is None else min(max(int(value), lo), hi)
        st.session_state[key] = fixed
        st.warning(
            _(
                "{label} {value} is outside {lo:,}–{hi:,}; {fixed} is used.",
                label=label,
                value=value,
                lo=lo,
                hi=hi,
                fixed=fixed,
            )
        )
    return int(
        where.number_input(_("{label} ({lo:,}–{hi:,})", label=label, lo=lo, hi=hi), step=1, key=key, **kw)
    )


HELD = "_held"  # after a group's name: the widget values a callback set, until the browser reports them


def hold(group: str, values: dict) -> None:
    """Set widgets' values from a callback (a click on a tile, a box drawn) and hold them until the
    browser reports them back: call ``keep_held(group)`` before those widgets are made.

    Every rerun carries the values the browser holds for every widget. On a page whose fragments
    rerun on a timer (the long-input page, while it computes), a timed rerun that leaves before
    the callback's run has reached the browser carries the old values, which would undo the
    click: Streamlit cannot tell them from the user's own change."""
    st.session_state.update(values)
    st.session_state[group + HELD] = (dict(values), True)  # True: the callback's own run is next


def keep_held(group: str, polling: bool = True) -> None:
    """Before ``group``'s widgets are made: values a callback ``hold``-s win over what the rerun
    brought, until a later rerun brings them back from the browser; the widgets are then the
    user's again. Where nothing reruns on a timer (``polling`` False), every later rerun is the
    user's own: the values are let go after the callback's run."""
    held = st.session_state.get(group + HELD)
    if not held:
        return
    values, own_run = held
    if own_run or (polling and any(st.session_state.get(k) != v for k, v in values.items())):
        st.session_state.update(values)
        st.session_state[group + HELD] = (values, False)
    else:
        del st.session_state[group + HELD]


def last_poll() -> None:
    """In the timed run that ends a page's polling, before its ``st.rerun()``: that run may have
    brought a widget's old value from a browser that had not yet drawn a callback's run, and the
    full rerun after it (which no longer polls) lets held values go, so every held group wins here."""
    for key in [k for k in st.session_state if isinstance(k, str) and k.endswith(HELD)]:
        keep_held(key.removesuffix(HELD), polling=True)
