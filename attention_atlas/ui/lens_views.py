"""The "Inside a prediction" page's logit-lens tab (``app_pages/prediction.py``): the grid of blocks ×
positions (the last ``FIRST`` positions drawn first, the rest filled in by a background job under a
progress bar, ``ui.lens_cached``), a window of at most 64 positions on screen, one position's
followed token through the blocks, and what each block promoted and suppressed there.

Widget keys start with ``lens_``; the window, the position and the followed token are in the URL.
"""

from __future__ import annotations

import functools

import streamlit as st

from attention_atlas.i18n import N_, _, ngettext
from attention_atlas.ui import lens_cached as lc
from attention_atlas.ui.cached import Source
from attention_atlas.ui.url_state import Link, Unlinked, rerun_page
from attention_atlas.ui.views import show_notices
from attention_atlas.ui.widgets import PLOTLY_CONFIG, chart, csv_button, fact, for_screen, plain
from attention_atlas.viz_core import lens_figures as lf

K = "lens_"
WIDTHS = ("16", "32", "64")  # positions on screen at once: 64 at most keeps the page's payload small
POLL = 2.0  # s between two looks at the background fill
FOLLOW_CHARS = 100
ABOUT = N_(
    "The **logit lens** reads the model's residual stream after every block through the model's own "
    "final norm and output head, as if the model stopped there and had to predict the next token. "
    "Each cell is the top token after that block at that position, coloured by its probability; "
    "the top row is the model's real prediction. Watch where the right answer first appears, and "
    "follow any token to see its rank climb through the blocks."
)


def computed(source: Source, text: str) -> lc.LensInput | None:
    """The input's stream and first screen, behind a spinner; a refusal is one line, and None."""
    try:
        with st.spinner(_("Reading every block's output (the last {n} positions first)…", n=lc.FIRST)):
            return lc.shared(source, text)
    except ValueError as err:  # LensError (a model the lens cannot read), InputError (no tokens)
        st.warning(plain(err))
    except (OSError, RuntimeError) as err:  # missing weights or package
        st.error(_("{model} cannot run here: {error}", model=source.name, error=plain(err)))
    return None


def lens_tab(source: Source, text: str, link: Link | Unlinked) -> None:
    if not text.strip():
        st.info(_("Type a text to see what the model predicts after each block."))
        return
    got = computed(source, text)
    if got is None:
        return
    show_notices(got.notices)
    run = got.run
    fact(
        _(
            "{tokens} × {blocks}; the forward and the last {n} positions took {seconds:.1f} s.",
            tokens=ngettext("{count:,} token", "{count:,} tokens", run.n, count=run.n),
            blocks=ngettext(
                "{count:,} block", "{count:,} blocks", run.stream.layers, count=run.stream.layers
            ),
            n=min(lc.FIRST, run.n),
            seconds=got.seconds,
        )
    )
    a, b = window(run.n, link)
    st.fragment(grid_view, run_every=None if run.complete else POLL)(source, got, a, b)
    position_view(source, text, got, link)


def window(n: int, link: Link | Unlinked) -> tuple[int, int]:
    """Positions ``a``–``b − 1`` on screen: the last ones at first; a width and a first position to pick."""
    if n <= int(WIDTHS[0]):
        return 0, n
    c1, c2 = st.columns([1, 3])
    width = int(
        c1.radio(
            _("positions shown"),
            WIDTHS,
            horizontal=True,
            key=link.choice("width", K + "width", WIDTHS, WIDTHS[-1]),
        )
    )
    width = min(width, n)
    if width == n:
        return 0, n
    last = n - width
    start = c2.slider(_("first position shown"), 0, last, key=link.number("from", K + "from", 0, last, last))
    return start, start + width


def grid_view(source: Source, got: lc.LensInput, a: int, b: int) -> None:
    """The progress of the fill and the grid of positions ``a``–``b − 1`` (a fragment that polls while
    the fill goes on; a poll that finds it done reruns the page once, so that it stops polling)."""
    run = got.run
    run.ask()
    done = run.done()
    if run.error:
        st.error(_("Reading the earlier positions failed: {error}", error=plain(run.error)))
    elif done < run.n:
        st.progress(
            done / run.n,
            text=_("Every position, from the end back: {done:,} of {n:,} read…", done=done, n=run.n),
        )
    elif st.session_state.get(K + "polling"):
        st.session_state[K + "polling"] = False
        rerun_page()
    st.session_state[K + "polling"] = done < run.n
    shown = run.window(a, b)
    if shown is None:
        st.info(
            _("Positions {a:,}–{b:,} are still being read: they appear here when they are.", a=a, b=b - 1)
        )
        return
    labels, probs, positions = shown
    tokens = got.tokens[a:b]
    title = _("Top token after each block, positions {a:,}–{b:,}", a=a, b=b - 1)
    fig = lf.lens_grid(labels, probs, tokens, positions, title)
    key = K + "grid_chart"
    st.plotly_chart(
        for_screen(fig),
        key=key,
        config=PLOTLY_CONFIG,
        on_select=functools.partial(_clicked_cell, key, probs.shape[0], a, b),
        selection_mode="points",
        width="stretch",
    )
    csv_button(
        lf.grid_frame(labels, probs, tokens, positions), K + "grid", f"{source.name}_logit_lens_{a}_{b - 1}"
    )
    st.caption(
        _(
            "Hover a cell for its top 10 tokens; **click** one to follow that position below. Block 0 is at "
            "the bottom; the top row is the model's own next-token distribution. A cell's colour is its top "
            "token's probability."
        )
    )
    if st.session_state.pop(K + "clicked", False):
        rerun_page()  # the position view lies outside this fragment


def _clicked_cell(key: str, blocks: int, a: int, b: int) -> None:
    """A click on a grid cell → that position in the position view (a cleared selection: no change)."""
    points = getattr(getattr(st.session_state.get(key), "selection", None), "points", None) or []
    for point in points:
        index = point.get("point_index", point.get("point_number"))
        cell = (
            None
            if point.get("curve_number") != 1 or index is None
            else lf.clicked_cell(int(index), blocks, b - a)
        )
        if cell is not None:
            st.session_state[K + "pos"] = a + cell[1]
            st.session_state[K + "clicked"] = True
            return


def followed(source: Source, link: Link | Unlinked) -> tuple[int | None, str | None]:
    """The token to follow, typed (its first token, with a note when it has more), or None: the model's
    own prediction at the position; and a one-line problem."""
    word = st.text_input(
        _("token to follow (empty: the model's own prediction there)"),
        key=link.text("follow", K + "follow", FOLLOW_CHARS),
        help=_(
            "Mid-sentence words start with a space: ' Paris', not 'Paris'. A word of several tokens is "
            "followed by its first."
        ),
    )
    if not word:
        return None, None
    ids = lc.token_ids(source.key, word, source)
    if not ids:
        return None, _("{word!r} gives no token; following the model's own prediction instead.", word=word)
    if len(ids) > 1:
        st.caption(
            plain(
                _(
                    "{word!r} is {n} tokens for {model}; following the first.",
                    word=word,
                    n=len(ids),
                    model=source.name,
                )
            )
        )
    return ids[0], None


def position_key(source: Source, text: str, n: int, link: Link | Unlinked) -> str:
    """The position slider's key, its value the last position whenever the input is new (another text
    or model since the view was last drawn): a position kept from the old prompt points at a token
    the visitor never chose. A link's own position still stands."""
    from_link = link.spoke("pos")
    key = link.number("pos", K + "pos", 0, n - 1, n - 1)
    basis = (source.key, text)
    held = st.session_state.get(K + "pos_input")
    if held is not None and held != basis and not from_link:
        st.session_state[key] = n - 1
    st.session_state[K + "pos_input"] = basis
    return key


def position_view(source: Source, text: str, got: lc.LensInput, link: Link | Unlinked) -> None:
    run, n = got.run, got.run.n
    st.subheader(_("One position: a token through the blocks"))
    c1, c2 = st.columns([1, 1])
    with c1:
        pos = st.slider(_("position"), 0, n - 1, key=position_key(source, text, n, link)) if n > 1 else 0
    with c2:
        token, problem = followed(source, link)
    if problem:
        st.warning(plain(problem))
    at = lc.at_position(source.key, text, pos, token, run)
    where = lf.position_names([got.tokens[pos]], [pos])[0]
    fig = lf.follow_figure(at["probs"], at["ranks"], at["label"], _("position {where}", where=where))
    frame = lf.follow_frame(at["probs"], at["ranks"])
    chart(fig, frame, K + "follow", f"{source.name}_follow_{at['token']}_at_{pos}")
    st.subheader(_("What each block promoted and suppressed there"))
    st.caption(
        _(
            "The tokens whose logit each block raised and lowered most: the logits read through the final "
            "norm and head before the block and after it."
        )
    )
    table = lf.changes_table(at["promoted"], at["promoted_by"], at["suppressed"], at["suppressed_by"])
    st.dataframe(table, hide_index=True, key=K + "changes")
    csv_button(table, K + "changes", f"{source.name}_changes_at_{pos}")
