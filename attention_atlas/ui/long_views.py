"""The long-input page's pieces (``app_pages/long_input.py``): the text and its checks, the
capture, and the three tabs' views, all computed from captured queries and keys
(``ui.long_cached``), never from a tensor of every head's weights; and the Transformer page's
"long input" switch that leads there.

- Input: a text box without the Transformer page's 10,000-character cap (up to the capture's
  ``MAX_CHARS``), or an uploaded UTF-8 ``.txt``; the token count against the model's context; a
  text over the context or over the memory estimate is refused with both numbers, never cut.
  Where the text came from is in the URL (``source``: the bundled sample, a typed text, which
  travels in the URL too up to ``LINK_CHARS``, or a file, which a link cannot carry).
- Heads: the model view (every head's max-pooled thumbnail, filled in by a background job; the
  view and the statistics poll it and grow layer by layer) and the head view: the overview
  max-pooled to ≤ 512² cells (about a pixel each; 256² or 1024² on request), a box drawn on it
  picks a window shown at full resolution (≤ 512² tokens) with the tokens on its axes. Model view
  and head view are one fragment: a click reruns only them.
- Head statistics: ``viz_core.head_stats``'s, for every head over every query row.
- Queries and keys of one head in 2-D (PCA), a clicked query joined to its top keys.

Widget keys start with ``tfl_``.
"""

from __future__ import annotations

import functools
import unicodedata

import numpy as np
import pandas as pd
import streamlit as st

from attention_atlas.i18n import N_, _, ngettext
from attention_atlas.paths import page
from attention_atlas.ui import cached
from attention_atlas.ui import long_cached as lc
from attention_atlas.ui.live_heads import model_view_chart
from attention_atlas.ui.url_state import Link, kept, rerun_page
from attention_atlas.ui.views import head_stats_block
from attention_atlas.ui.widgets import (
    PLOTLY_CONFIG,
    csv_button,
    for_screen,
    hold,
    keep_held,
    last_poll,
    plain,
    whole_number,
)
from attention_atlas.viz_core import blockwise as bw
from attention_atlas.viz_core import long_figures as lf
from attention_atlas.viz_core import sentences as sn
from attention_atlas.viz_core.export import cells_frame, token_matrix_frame

K = "tfl_"
PAGE = page("long_input.py")
HELP = N_(
    "Texts up to the model's own context (thousands of tokens) on a page of their own: every view "
    "computed block-wise from the captured queries and keys."
)
MAX_CHARS = 400_000  # models.adapters.capture.MAX_CHARS (not imported here: it pulls in torch)
LINK_CHARS = 10_000  # a typed text travels in the URL up to this (the Transformer page's limit)
LINE = "\u2028"  # a typed line break, in the URL (which refuses control characters)
SOURCES = ("sample", "text", "file")  # where the text came from (?source=): the bundled sample, typed, a file
CELLS = (256, 512, 1024)  # the head overview's cells a side at most: a choice, 512 first (a pixel each)
POLL = 2.0  # s between two looks at the background work
WINDOW_GROUP = K + "window"  # the zoom window's four numbers, set by a box (``hold``)
TOP = 10  # keys listed for a chosen query
WINDOW = 128  # tokens a side of the first zoom window
AVERAGE = N_("average")  # the sentence view's head that is the layer's average
# The sentence view's sentences per unit (``viz_core.sentences.UNITS``), whole: a unit's word
# changes the sentence around it in Chinese.
UNIT_WORDS = {
    "sentence": {
        "one": N_(
            "This text is one sentence: there is nothing between sentences to show. Try reading by sentence."
        ),
        "summing": N_("Summing layer {layer}'s attention sentence by sentence…"),
        "caption": N_(
            "A cell is how much of a query sentence's attention, per token, goes to a key sentence: each row "
            "sums to what a token's row sums to. Hover a cell for both sentences' first words. **Draw a box** "
            "over cells to open those sentences at token level in the zoom window of the Heads tab (at most "
            "{most} tokens a side)."
        ),
    },
    "paragraph": {
        "one": N_(
            "This text is one paragraph: there is nothing between paragraphs to show. Try reading by sentence."
        ),
        "summing": N_("Summing layer {layer}'s attention paragraph by paragraph…"),
        "caption": N_(
            "A cell is how much of a query paragraph's attention, per token, goes to a key paragraph: each row "
            "sums to what a token's row sums to. Hover a cell for both paragraphs' first words. **Draw a box** "
            "over cells to open those paragraphs at token level in the zoom window of the Heads tab (at most "
            "{most} tokens a side)."
        ),
    },
}


# -- from the Transformer page ------------------------------------------------------------------------


def switch(where, key: str, model_id: str, text_key: str, example: str) -> None:
    """The Transformer page's "long input" toggle (``key``): turned on, it opens the long-input page
    with this model, and with the text typed there (``text_key``) unless it is the model's example
    (the long page then starts from its own long sample). A link from before the page existed
    (``?long=1``) goes there too."""

    def go() -> None:
        st.session_state[key] = False  # off again for the visitor's return
        text = st.session_state.get(text_key) or ""
        query = {"model": model_id}
        if text.strip() and text != example:
            query |= {"source": "text", "text": text}
        st.session_state[K + "go"] = query

    where.toggle(_("long input"), key=key, on_change=go, help=_(HELP))
    query = st.session_state.pop(K + "go", None)
    if query is None and st.query_params.get("long") == "1":
        query = {"model": model_id}
    if query is not None:
        st.switch_page(PAGE, query_params=query | kept())


# -- the input -----------------------------------------------------------------------------------------


def read_upload(name: str, data: bytes) -> tuple[str | None, str | None]:
    """``(text, None)`` from an uploaded file's bytes, or ``(None, why not)`` in one line."""
    if len(data) > 4 * MAX_CHARS:
        return None, _(
            "{name} is {size:,} bytes; a text file is read up to {limit:,}: shorten it",
            name=name,
            size=len(data),
            limit=4 * MAX_CHARS,
        )
    if b"\x00" in data:
        return None, _("{name} holds binary data (NUL bytes), not text: upload a UTF-8 .txt file", name=name)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        return None, _(
            "{name} is not UTF-8 text (byte 0x{byte:02x} at offset {offset:,}): "
            "save it as UTF-8 and upload it again",
            name=name,
            byte=data[err.start],
            offset=err.start,
        )
    return text, None


def text_input(link: Link, model_id: str, where) -> str:
    """The text box (the model's sample until the user types) or an uploaded file's text; where it
    came from in the URL (``source``, and ``text`` for a typed text of at most ``LINK_CHARS``)."""
    state = st.session_state
    source = link.choice("source", K + "source", SOURCES, SOURCES[0])
    linked = link.text("text", K + "linked", LINK_CHARS, "")
    asked = (state[source], state[linked])
    if asked != state.get(K + "asked"):  # a link (or the Transformer page's switch) asks for a text
        if state[source] == "text" and state[linked]:
            state[K + "text"] = state[linked].replace(LINE, "\n")
        elif state[source] != "sample":
            st.info(
                _(
                    "This link's text is not in the link (a file, or longer than a link holds): upload or paste it."
                )
            )
    cached.ensure_loaded(model_id)  # the sample's token count needs the model: say so on a first visit
    key, example = K + "text", lc.default_text(model_id)
    if state.get(key) in (None, state.get(K + "example")):
        state[key] = example  # another model's sample is replaced, never typed text
    state[K + "example"] = example
    text = where.text_area(
        _("long text"), key=key, height=160, help=_("Up to {n:,} characters; nothing is cut.", n=MAX_CHARS)
    )
    upload = where.file_uploader(_("or a .txt file (UTF-8)"), type=["txt"], key=K + "file")
    state[source] = "file" if upload is not None else "sample" if text == example else "text"
    state[linked] = _linkable(text) if state[source] == "text" else ""
    state[K + "asked"] = (state[source], state[linked])
    if upload is None:
        return text
    text, problem = read_upload(upload.name, upload.getvalue())
    if problem:
        st.warning(plain(problem))
        st.stop()
    where.caption(
        _(
            "Reading {name} ({characters}); remove it to use the box.",
            name=plain(upload.name),
            characters=ngettext("{n:,} character", "{n:,} characters", len(text)).format(n=len(text)),
        )
    )
    return text


def size_text(nbytes: int) -> str:
    """``'37 MB'`` from one megabyte (2²⁰ bytes) up, ``'48 KB'`` below it (``'1 KB'`` at least)."""
    if nbytes >= 2**20:
        return _("{mb:,.0f} MB", mb=nbytes / 2**20)
    return _("{kb:,.0f} KB", kb=max(1, nbytes / 2**10))


def _linkable(text: str) -> str:
    """``text`` as the URL holds it (line breaks as U+2028, which a link may carry), or "" when a
    link cannot carry it: over ``LINK_CHARS``, or with other control characters (a tab)."""
    if len(text) > LINK_CHARS:
        return ""
    one_line = text.replace("\r\n", "\n").replace("\n", LINE)
    return "" if any(unicodedata.category(ch) == "Cc" for ch in one_line) else one_line


def checked(model_id: str, text: str, where) -> int:
    """The token count, after every refusal that applies (each stops the page with one message)."""
    if not text.strip():
        st.info(_("Type or paste a text, or upload a .txt file."))
        st.stop()
    if len(text) > MAX_CHARS:
        st.warning(
            _(
                "The text has {n:,} characters; at most {limit:,} are read. Shorten it: nothing is cut.",
                n=len(text),
                limit=MAX_CHARS,
            )
        )
        st.stop()
    n, limit = lc.token_count(model_id, text), lc.limits(model_id)
    where.caption(
        _(
            "**{tokens}** of the {limit:,} {model} reads at most.",
            tokens=ngettext("{n:,} token", "{n:,} tokens", n).format(n=n),
            limit=limit,
            model=model_id,
        )
    )
    if n > limit:
        st.warning(
            _(
                "The text is {n:,} tokens; {model} reads at most {limit:,}. Shorten it (nothing is cut), "
                "or pick a model with a longer context.",
                n=n,
                model=model_id,
                limit=limit,
            )
        )
        st.stop()
    from attention_atlas.models.adapters.capture import CaptureError, check_fits

    try:
        check_fits(cached.adapter(model_id), n)
    except CaptureError as err:
        st.error(plain(err))
        st.stop()
    return n


def captured(model_id: str, text: str, n: int) -> lc.LongInput:
    """The capture of ``text`` (cached), behind a spinner; a refusal stops the page with one line."""
    tokens = ngettext("{n:,} token", "{n:,} tokens", n).format(n=n)
    message = (
        _(
            "Capturing every layer's queries and keys for {tokens} (tens of seconds at thousands of tokens "
            "on a CPU)…",
            tokens=tokens,
        )
        if n > 1024
        else _("Capturing every layer's queries and keys for {tokens}…", tokens=tokens)
    )
    try:
        with st.spinner(message):
            return lc.shared(model_id, text)
    except ValueError as err:  # CaptureError, InputError: refused with one line
        st.warning(plain(err))
    except (OSError, RuntimeError) as err:
        st.error(_("{model} cannot capture here: {error}", model=model_id, error=plain(err)))
    st.stop()


# -- the background work, polled -------------------------------------------------------------------


def polled(view, long: lc.LongInput, *args) -> None:
    """``view(long, polling, *args)`` as a fragment that reruns every ``POLL`` s while the summaries
    are still being computed (and not once they are done)."""
    polling = not long.summaries.complete and long.summaries.error is None
    st.fragment(view, run_every=POLL if polling else None)(long, polling, *args)


def progress(long: lc.LongInput, polling: bool) -> None:
    """The one progress bar of the summaries (a fragment, ``polled``, above the tabs), or their
    error; a poll that finds them done reruns the page once, so that every fragment stops polling."""
    s = long.summaries
    lc.looked_at(long)
    done, layers = s.snapshot()[2], s.cap.n_layers
    if s.error:
        st.error(_("Computing the heads' thumbnails and statistics failed: {error}", error=plain(s.error)))
    elif done < layers:
        text = (
            _(
                "Every head, block-wise: {done} of {layers} layers done, {rate:.1f} s a layer…",
                done=done,
                layers=layers,
                rate=s.seconds / done,
            )
            if done
            else _("Every head, block-wise: {done} of {layers} layers done…", done=done, layers=layers)
        )
        st.progress(done / layers, text=text)
    elif polling:
        last_poll()
        rerun_page()


def _so_far(long: lc.LongInput) -> tuple[np.ndarray, pd.DataFrame, int]:
    """What the summaries hold so far, for a view that grows with them (``progress`` shows how far)."""
    lc.looked_at(long)
    return long.summaries.snapshot()


# -- heads: the model view and one head ---------------------------------------------------------------


def heads(long: lc.LongInput, polling: bool, model_id: str, text: str, link: Link) -> None:
    """Model view and head view, one fragment (``polled``): a click on a tile, another head or a box
    drawn reruns only this, never the rest of the page. The layer and head follow the link."""
    cap = long.cap
    L, H = cap.n_layers, cap.n_heads
    thumbs, _table, done = _so_far(long)
    csv = (lambda: cells_frame(thumbs[:done], "max"), f"{model_id}_thumbnails", _("every head's thumbnail"))
    model_view_chart(lf.long_model_view(thumbs, done), K + "heads", (L, H), (K + "layer", K + "head"), csv=csv)

    st.subheader(_("Head view"))
    keep_held(K + "heads", polling)  # a tile clicked, a box on the sentence view: not undone by a timed rerun
    c1, c2, c3, c4 = st.columns([2, 1, 2, 2])  # "√ colours" whole at 150 % zoom with the sidebar open
    layer = c1.slider(_("layer"), 0, L - 1, key=K + "layer")
    head = int(c2.selectbox(_("head"), [str(h) for h in range(H)], key=K + "head"))
    link.sync("layer", "head")  # a fragment's rerun: the link follows the head opened
    cells = c3.select_slider(
        _("overview cells a side"),
        CELLS,
        value=CELLS[1],
        key=K + "cells",
        help=_(
            "The overview is max-pooled to at most this many cells a side: 512 is about a pixel each "
            "at full width; 1024 sends four times the data."
        ),
    )
    sqrt = c4.toggle(
        _("√ colours"),
        value=True,
        key=K + "sqrt",
        help=_(
            "Colour by the square root of the weight, so that faint weights beside a sink that takes "
            "almost everything still show; the colour bar and the hover keep the weights."
        ),
    )
    red = lc.overview(model_id, text, layer, head, cells, cap)
    _overview_chart(red, cap, layer, head, sqrt)
    _window_view(cap, layer, head, sqrt, polling)


def keep_in_range(key: str, size: int, default: int, kind=int) -> None:
    """A layer or head widget's value from another model, out of this one's range, goes back to ``default``."""
    value = st.session_state.get(key)
    if value is None or not 0 <= int(value) < size:
        st.session_state[key] = kind(default)


def _overview_chart(red: bw.Reduced, cap: bw.QKCapture, layer: int, head: int, sqrt: bool) -> None:
    key = K + "overview"
    fig = lf.head_overview(red, cap.tokens, layer, head, sqrt)  # the command line's figure too
    _box_chart(fig, key, False, functools.partial(_boxed, key, red))
    st.caption(
        _(
            "Hover: each cell's query and key token ranges and its largest weight. **Draw a box** on the "
            "overview to see that window at full resolution below (at most {most} × {most} tokens; "
            "a larger box keeps its top-left corner), or type the window.",
            most=bw.MAX_WINDOW,
        )
    )
    variant = cap.variant(layer)
    if not variant.plain:
        st.caption(
            _(
                "Layer {layer}'s attention beyond softmax(q·k): {variant}.",
                layer=layer,
                variant=variant.describe(),
            )
        )


def _box_chart(fig, key: str, sqrt: bool, on_box) -> None:
    """A heatmap on which a box drawn calls ``on_box`` (√ colours when ``sqrt``)."""
    if sqrt:
        lf.sqrt_colours(fig)
    st.plotly_chart(
        for_screen(fig), key=key, config=PLOTLY_CONFIG, on_select=on_box, selection_mode="box", width="stretch"
    )


def _boxed(key: str, red: bw.Reduced) -> None:
    """The overview's box selection → the window's number inputs."""
    boxes = getattr(getattr(st.session_state.get(key), "selection", None), "box", None)
    if not boxes:
        return  # a cleared selection keeps the window
    ((qa, qb), (ka, kb)), cut = bw.box_window(red, boxes[0]["x"], boxes[0]["y"])
    hold(WINDOW_GROUP, {K + "q0": qa, K + "qn": qb - qa, K + "k0": ka, K + "kn": kb - ka})
    st.session_state[K + "cut"] = cut


def _window_view(cap: bw.QKCapture, layer: int, head: int, sqrt: bool, polling: bool) -> None:
    n = cap.n_tokens
    side = min(WINDOW, n)
    if st.session_state.get(K + "window_of") != (cap.model_id, n):  # a new input: the window in its middle
        first = max(0, n // 2 - side // 2)
        hold(WINDOW_GROUP, {K + "q0": first, K + "qn": side, K + "k0": first, K + "kn": side})
        st.session_state[K + "window_of"] = (cap.model_id, n)
    keep_held(WINDOW_GROUP, polling)
    st.markdown(_("**Zoom window** at full resolution"))
    c1, c2, c3, c4 = st.columns(4)
    q0 = whole_number(c1, _("queries from"), 0, n - 1, 0, K + "q0")
    qn = whole_number(c2, _("how many queries"), 1, min(bw.MAX_WINDOW, n), side, K + "qn")
    k0 = whole_number(c3, _("keys from"), 0, n - 1, 0, K + "k0")
    kn = whole_number(c4, _("how many keys"), 1, min(bw.MAX_WINDOW, n), side, K + "kn")
    queries, keys = bw.fit_window(n, q0, q0 + qn), bw.fit_window(n, k0, k0 + kn)
    if (queries[1] - queries[0], keys[1] - keys[0]) != (qn, kn):
        st.caption(
            _(
                "The window stops at the last token: queries {q0}–{q1}, keys {k0}–{k1}.",
                q0=queries[0],
                q1=queries[1] - 1,
                k0=keys[0],
                k1=keys[1] - 1,
            )
        )
    if st.session_state.pop(K + "cut", False):
        st.caption(
            _(
                "The box was larger than {most} tokens a side: its top-left corner is shown.",
                most=bw.MAX_WINDOW,
            )
        )
    weights = bw.window(cap, layer, head, queries, keys)
    fig = lf.window_figure(
        weights, cap.tokens, queries[0], keys[0], lf.window_title(layer, head, queries, keys)
    )
    if sqrt:
        lf.sqrt_colours(fig)
    st.plotly_chart(for_screen(fig), key=K + "window", config=PLOTLY_CONFIG, width="stretch")
    if cap.causal and keys[0] > queries[1] - 1:
        st.caption(_("Every key here comes after every query: a causal model gives them no weight."))


# -- head statistics -----------------------------------------------------------------------------------


def stats(long: lc.LongInput, polling: bool, model_id: str) -> None:
    """The Transformer page's head statistics (a fragment, ``polled``), from the summaries so far."""
    table = _so_far(long)[1]
    if table.empty:
        st.info(_("The first layer's statistics are on their way."))
        return
    heads_n = ngettext("{n:,} head", "{n:,} heads", len(table)).format(n=len(table))
    fields = dict(heads=heads_n, n=long.cap.n_tokens)
    st.caption(
        _(
            "{heads}, each over all {n:,} query rows (computed block-wise, with the definitions of the "
            "Transformer page's table).",
            **fields,
        )
        if long.summaries.complete
        else _(
            "{heads} so far, each over all {n:,} query rows (computed block-wise, with the definitions of the "
            "Transformer page's table).",
            **fields,
        )
    )
    head_stats_block(table, K + "stats", f"{model_id}_{long.cap.n_tokens}_tokens_head_stats")


# -- queries and keys ------------------------------------------------------------------------------------


def queries_keys(model_id: str, text: str, cap: bw.QKCapture, polling: bool) -> None:
    n, L, H = cap.n_tokens, cap.n_layers, cap.n_heads
    st.subheader(_("Queries and keys"))
    st.caption(
        _(
            "One head's queries and keys projected together onto their first two principal axes (PCA): "
            "a query lands near the keys it scores highly when the plane holds most of the variance. "
            "Queries are blue circles, keys orange diamonds, darker later in the text. **Click a query** "
            "to join it to its top keys."
        )
    )
    # first opened at the head the Heads tab (or the link) opened, as By sentence is
    keep_in_range(K + "qk_layer", L, st.session_state.get(K + "layer", min(L - 1, L // 2)))
    keep_in_range(K + "qk_head", H, st.session_state.get(K + "head", "0"), str)
    keep_in_range(K + "query", n, n - 1)
    c1, c2, c3, c4 = st.columns([2, 1, 1, 2])
    layer = c1.slider(_("layer"), 0, L - 1, key=K + "qk_layer")
    head = int(c2.selectbox(_("head"), [str(h) for h in range(H)], key=K + "qk_head"))
    keep_held(K + "qk", polling)  # the page's fragments rerun on a timer while ``polling``
    query = whole_number(c3, _("query"), 0, n - 1, n - 1, K + "query")
    normalise = c4.toggle(
        _("normalise (AttentionViz)"),
        value=True,
        key=K + "normalise",
        help=_("Keys moved to the queries' mean and both scaled to the same mean length: no weight changes."),
    )
    qxy, kxy, share = lc.projection(model_id, text, layer, head, normalise, cap)
    top = bw.top_keys(bw.query_row(cap, layer, head, query), TOP)
    title = _("layer {layer}, head {head}: {n:,} queries and {n:,} keys", layer=layer, head=head, n=n)
    fig = lf.qk_figure(qxy, kxy, cap.tokens, share, query, top, title)
    key = K + "qk"
    st.plotly_chart(
        for_screen(fig),
        key=key,
        config=PLOTLY_CONFIG,
        on_select=functools.partial(_clicked_query, key, n),
        selection_mode="points",
        width="stretch",
    )
    token = cap.tokens[query]
    st.markdown(
        _(
            "**Query {query}** ({token}): its {top} largest weights",
            query=query,
            token=plain(repr(token)),
            top=len(top),
        )
    )
    if cap.variant(layer).sinks is not None:
        sink = float(bw.sink_mass(cap, layer, head, query, query + 1)[0])
        st.markdown(
            _(
                "This head's learned **sink** takes {sink:.1%} of the query's attention: its weights over the "
                "keys sum to {rest:.1%}.",
                sink=sink,
                rest=1 - sink,
            )
        )
    frame = pd.DataFrame(
        [{"key": k, "token": cap.tokens[k], "weight": w, "distance": query - k} for k, w in top]
    )
    names = {"key": _("key"), "token": _("token"), "weight": _("weight"), "distance": _("distance")}
    st.dataframe(frame, hide_index=True, key=K + "top_keys", column_config=names)


def _clicked_query(key: str, n: int) -> None:
    """A click on a query point → the query number input (a key or a cleared selection: no change)."""
    points = getattr(getattr(st.session_state.get(key), "selection", None), "points", None) or []
    for point in points:
        index = point.get("point_index", point.get("point_number"))
        if point.get("curve_number") == 0 and index is not None and 0 <= int(index) < n:
            hold(K + "qk", {K + "query": int(index)})
            return


# -- documents read by sentence ------------------------------------------------------------------------


def by_sentence(model_id: str, text: str, cap: bw.QKCapture, heads_tab: str) -> None:
    """Sentences (or paragraphs) on both axes, for one head or a layer's average; a box drawn over cells
    opens those sentences at token level in the zoom window of ``heads_tab``."""
    L, H = cap.n_layers, cap.n_heads
    c1, c2, c3, c4 = st.columns([2, 2, 1, 2])
    unit = c1.radio(_("read by"), sn.UNITS, format_func=_, horizontal=True, key=K + "unit")
    keep_in_range(K + "span_layer", L, st.session_state.get(K + "layer", L // 2))
    layer = c2.slider(_("layer"), 0, L - 1, key=K + "span_layer")
    options = [str(h) for h in range(H)] + [AVERAGE]
    if st.session_state.get(K + "span_head") not in options:
        st.session_state[K + "span_head"] = st.session_state.get(K + "head", "0")
    head = c3.selectbox(_("head"), options, format_func=_, key=K + "span_head")
    sqrt = c4.toggle(_("√ colours"), value=True, key=K + "span_sqrt", help=_("As in the head view."))
    parts = lc.spans(model_id, text, unit, cap)
    words = UNIT_WORDS[unit]
    if len(parts) < 2:
        st.info(_(words["one"]))
        return
    with st.spinner(_(words["summing"], layer=layer)):
        weights = lc.by_span(model_id, text, layer, None if head == AVERAGE else int(head), unit, cap)
    who = _("heads averaged") if head == AVERAGE else _("head {h}", h=head)
    spans = span_count(unit, len(parts))
    title = _(
        "layer {layer}, {who}: {spans} of {n:,} tokens", layer=layer, who=who, spans=spans, n=cap.n_tokens
    )
    fig = lf.span_figure(weights, parts.labels(), unit, title)
    key = K + "spans"
    _box_chart(fig, key, sqrt, functools.partial(_span_boxed, key, parts, (layer, head), heads_tab))
    labels = parts.labels()
    csv_button(lambda: token_matrix_frame(weights, labels, labels), key, f"{model_id}_layer{layer}_{head}_{unit}s")
    st.caption(_(words["caption"], most=bw.MAX_WINDOW))


def span_count(unit: str, n: int) -> str:
    """``'12 sentences'`` or ``'3 paragraphs'`` in the visitor's language."""
    if unit == "paragraph":
        return ngettext("{n:,} paragraph", "{n:,} paragraphs", n).format(n=n)
    return ngettext("{n:,} sentence", "{n:,} sentences", n).format(n=n)


def _span_boxed(key: str, parts, where: tuple[int, str], heads_tab: str) -> None:
    """A box over the sentence view → the zoom window over those sentences, on the Heads tab."""
    boxes = getattr(getattr(st.session_state.get(key), "selection", None), "box", None)
    if not boxes:
        return
    e, n = parts.edges, int(parts.edges[-1])
    (qa, qb), (ka, kb) = bw.cell_span(e, *boxes[0]["y"]), bw.cell_span(e, *boxes[0]["x"])
    (q0, q1), (k0, k1) = bw.fit_window(n, qa, qb), bw.fit_window(n, ka, kb)
    hold(WINDOW_GROUP, {K + "q0": q0, K + "qn": q1 - q0, K + "k0": k0, K + "kn": k1 - k0})
    st.session_state[K + "cut"] = ((q0, q1), (k0, k1)) != ((qa, qb), (ka, kb))
    layer, head = where
    hold(K + "heads", {K + "layer": layer} | ({} if head == AVERAGE else {K + "head": head}))
    st.session_state[K + "tab"] = heads_tab
