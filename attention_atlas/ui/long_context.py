"""The Transformer page's long-input mode: inputs up to the model's own context (SmolLM2: 8,192
tokens), every view computed from captured queries and keys (``models.adapters.capture``,
``viz_core.blockwise``), never from a full tensor of every head's weights.

- Input: a text box without the short page's 10,000-character cap (up to the capture's
  ``MAX_CHARS``), or an uploaded UTF-8 ``.txt``; the token count against the model's context; a
  text over the context or over the memory estimate is refused with both numbers, never cut.
- The capture, once per (model, text), shared by every session (``long_input``).
- Every head's thumbnail and statistics (``Summaries``): at once for a small input, else on a
  background thread, first layers first; the model view and the statistics poll it and grow
  layer by layer, so the page never waits minutes (SmolLM2 at 8,192 tokens: ~4 min for all).
- Head view: the overview max-pooled to ≤ 512² cells (about a pixel each; 256² or 1024² on
  request), a box drawn on it picks a window shown at full resolution (≤ 512² tokens) with the
  tokens on its axes. Model view and head view are one fragment: a click reruns only them.
- Queries and keys of one head in 2-D (PCA), a clicked query joined to its top keys.

Widget keys start with ``tfl_``.
"""

from __future__ import annotations

import functools
import threading
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st

from attention_atlas.paths import DATA
from attention_atlas.serve.jobs import FAILED, Job
from attention_atlas.ui import cached
from attention_atlas.ui.live_heads import keep_pick, model_view_chart, pick_drawn
from attention_atlas.ui.views import show_notices
from attention_atlas.ui.widgets import PLOTLY_CONFIG, csv_button, plain, plural, whole_number
from attention_atlas.viz_core import blockwise as bw
from attention_atlas.viz_core import long_figures as lf
from attention_atlas.viz_core.figures import scatter_groups

HELP = (
    "Up to the model's own context (SmolLM2: 8,192 tokens): views computed block-wise from queries and keys."
)
K = "tfl_"
SAMPLE = DATA / "long_context" / "tatoeba_en.txt"  # see its SOURCE.md
DEFAULT_TOKENS = 2048  # the first text's length at most (the model's context if shorter)
MAX_CHARS = 400_000  # models.adapters.capture.MAX_CHARS (not imported here: it pulls in torch)
THUMB = 32  # cells a side of a model-view thumbnail (viz_core.model_view.TILE)
CELLS = (256, 512, 1024)  # the head overview's cells a side at most: a choice, 512 first (a pixel each)
SYNC_CELLS = 25_000_000  # layers × heads × tokens² summarised while the page waits (about a second)
POLL = 2.0  # s between two looks at the background work
IDLE = 30.0  # s: background work nobody has looked at for this long stops (and resumes when looked at)
TOP = 10  # keys listed for a chosen query
WINDOW = 128  # tokens a side of the first zoom window


def offered(model_id: str) -> bool:
    """Whether ``model_id`` has a long-input mode (its adapter's attention can be captured)."""
    return model_id in ("smollm2", "minilm")


# -- every head's thumbnail and statistics, in the background ----------------------------------------


class Summaries:
    """Every head's max-pooled thumbnail and ``head_table`` row for one capture, a layer at a time,
    first layers first. ``run()`` does it all now; ``ask()`` keeps a background ``serve.jobs.Job``
    at it, which stops when nobody has asked for ``idle`` seconds (a page left open asks every
    ``POLL``) and goes on at the next ``ask()``, from the layer it had reached. Readers take
    ``snapshot()``s; the job only writes whole layers, under the lock."""

    def __init__(self, cap: bw.QKCapture, thumb: int = THUMB, idle: float = IDLE):
        self.cap, self.thumb = cap, thumb
        side = min(cap.n_tokens, thumb)
        self._thumbs = np.zeros((cap.n_layers, cap.n_heads, side, side), dtype=np.float32)
        self._rows: list[dict] = []
        self.done = 0  # layers finished
        self.seconds = 0.0  # spent on them
        self._lock = threading.Lock()
        self.job = Job(self._next, name="atlas-long-summaries", idle=idle)

    @property
    def complete(self) -> bool:
        return self.done == self.cap.n_layers

    @property
    def error(self) -> str | None:
        return self.job.message if self.job.state == FAILED else None

    def _layer(self, layer: int) -> None:
        start = time.perf_counter()
        heads = [bw.head_summary(self.cap, layer, h, self.thumb) for h in range(self.cap.n_heads)]
        with self._lock:
            for h, (thumb, row) in enumerate(heads):
                self._thumbs[layer, h] = thumb
                self._rows.append(row)
            self.done = layer + 1
            self.seconds += time.perf_counter() - start

    def _next(self) -> str | None:
        if not self.complete:
            self._layer(self.done)
        return "every layer summarised" if self.complete else None

    def run(self) -> Summaries:
        """Every remaining layer, now, in this thread."""
        for layer in range(self.done, self.cap.n_layers):
            self._layer(layer)
        return self

    def ask(self) -> None:
        """Someone is looking: keep (or start) the background job at the remaining layers."""
        if not self.complete:
            self.job.start()

    def snapshot(self) -> tuple[np.ndarray, pd.DataFrame, int]:
        """(thumbnails so far ``[layers, heads, t, t]``, the statistics table so far, layers done)."""
        with self._lock:
            return self._thumbs.copy(), pd.DataFrame(self._rows), self.done


@dataclass
class LongInput:
    cap: bw.QKCapture
    summaries: Summaries
    seconds: float  # the capture's


# A capture holds every layer's float32 queries and keys: 0.4-0.75 GB at 8,192 tokens (SmolLM2). So it
# is a resource (shared by every session, never pickled or copied as st.cache_data would), and only
# the last two inputs are kept; the summaries live with their capture and go with it. The janitor
# drops them too once the server is quiet.
@st.cache_resource(show_spinner=False, max_entries=2)
def long_input(model_id: str, text: str) -> LongInput:
    from attention_atlas.models.adapters.capture import capture

    cached.janitor().on_quiet(long_input.clear)
    start = time.perf_counter()
    cap = capture(cached.adapter(model_id), text)
    seconds = time.perf_counter() - start
    summaries = Summaries(cap)
    if cap.n_layers * cap.n_heads * cap.n_tokens**2 <= SYNC_CELLS:
        summaries.run()  # small: about a second, no thread
    return LongInput(cap, summaries, seconds)


@st.cache_data(show_spinner=False, max_entries=16)
def token_count(model_id: str, text: str) -> int:
    """Tokens of ``text`` as the capture encodes it (special tokens included, nothing cut)."""
    return len(cached.adapter(model_id).tokenizer(text)["input_ids"])


@st.cache_data(show_spinner=False)
def limits(model_id: str) -> int:
    """The model's own context in tokens."""
    from attention_atlas.models.adapters.capture import context_limit

    return context_limit(cached.adapter(model_id))


@st.cache_data(show_spinner=False)
def default_text(model_id: str) -> str:
    """The bundled sample's longest run of whole paragraphs within ``DEFAULT_TOKENS`` and the
    model's context (SmolLM2: all of it, 2,042 tokens; minilm: about 500)."""
    paragraphs = SAMPLE.read_text(encoding="utf-8").strip().split("\n\n")
    budget = min(DEFAULT_TOKENS, limits(model_id))
    lo, hi = 1, len(paragraphs)  # the most paragraphs that fit, by bisection
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if token_count(model_id, "\n\n".join(paragraphs[:mid])) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return "\n\n".join(paragraphs[:lo])


@st.cache_data(show_spinner=False, max_entries=16)
def overview(model_id: str, text: str, layer: int, head: int, cells: int) -> bw.Reduced:
    return bw.reduce_head(long_input(model_id, text).cap, layer, head, cells)


@st.cache_data(show_spinner=False, max_entries=16)
def projection(model_id: str, text: str, layer: int, head: int, normalise: bool):
    return bw.project_qk(*long_input(model_id, text).cap.head_qk(layer, head), normalise=normalise)


# -- the input -----------------------------------------------------------------------------------------


def read_upload(name: str, data: bytes) -> tuple[str | None, str | None]:
    """``(text, None)`` from an uploaded file's bytes, or ``(None, why not)`` in one line."""
    if len(data) > 4 * MAX_CHARS:
        return None, f"{name} is {len(data):,} bytes; a text file is read up to {4 * MAX_CHARS:,}: shorten it"
    if b"\x00" in data:
        return None, f"{name} holds binary data (NUL bytes), not text: upload a UTF-8 .txt file"
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        return None, (
            f"{name} is not UTF-8 text (byte 0x{data[err.start]:02x} at offset {err.start:,}): "
            "save it as UTF-8 and upload it again"
        )
    return text, None


def _text_input(model_id: str, where) -> str:
    """The text box (the model's sample until the user types) or an uploaded file's text."""
    key, example = K + "text", default_text(model_id)
    if st.session_state.get(key) in (None, st.session_state.get(K + "example")):
        st.session_state[key] = example  # another model's sample is replaced, never typed text
    st.session_state[K + "example"] = example
    text = where.text_area(
        "long text", key=key, height=160, help=f"Up to {MAX_CHARS:,} characters; nothing is cut."
    )
    upload = where.file_uploader("or a .txt file (UTF-8)", type=["txt"], key=K + "file")
    if upload is None:
        return text
    text, problem = read_upload(upload.name, upload.getvalue())
    if problem:
        st.warning(plain(problem))
        st.stop()
    where.caption(
        f"Reading {plain(upload.name)} ({plural(len(text), 'character')}); remove it to use the box."
    )
    return text


def _checked(model_id: str, text: str, where) -> int:
    """The token count, after every refusal that applies (each stops the page with one message)."""
    if not text.strip():
        st.info("Type or paste a text, or upload a .txt file.")
        st.stop()
    if len(text) > MAX_CHARS:
        st.warning(
            f"The text has {len(text):,} characters; at most {MAX_CHARS:,} are read. Shorten it: nothing is cut."
        )
        st.stop()
    n, limit = token_count(model_id, text), limits(model_id)
    where.caption(f"**{plural(n, 'token')}** of the {limit:,} {model_id} reads at most.")
    if n > limit:
        st.warning(
            f"The text is {n:,} tokens; {model_id} reads at most {limit:,}. Shorten it (nothing is cut), "
            "or pick a model with a longer context."
        )
        st.stop()
    from attention_atlas.models.adapters.capture import CaptureError, check_fits

    try:
        check_fits(cached.adapter(model_id), n)
    except CaptureError as err:
        st.error(plain(err))
        st.stop()
    return n


def _captured(model_id: str, text: str, n: int) -> LongInput:
    slow = " (tens of seconds at thousands of tokens on a CPU)" if n > 1024 else ""
    try:
        with st.spinner(f"Capturing every layer's queries and keys for {plural(n, 'token')}{slow}…"):
            return long_input(model_id, text)
    except ValueError as err:  # CaptureError, InputError: refused with one line
        st.warning(plain(err))
    except (OSError, RuntimeError) as err:
        st.error(f"{model_id} cannot capture here: {plain(err)}")
    st.stop()


# -- the page ------------------------------------------------------------------------------------------


def page(model_id: str, where) -> None:
    """Draw the long-input mode of the Transformer page for ``model_id``; ``where`` holds the input box."""
    text = _text_input(model_id, where)
    n = _checked(model_id, text, where)
    long = _captured(model_id, text, n)
    cap = long.cap
    show_notices(cap.notices)
    st.caption(
        f"Captured {plural(cap.n_layers, 'layer')} × {plural(cap.n_heads, 'head')} of queries and keys "
        f"({cap.nbytes / 2**20:,.0f} MB) in {long.seconds:.1f} s; every weight below is computed from them, "
        "a block of rows at a time."
    )
    tab_heads, tab_stats, tab_qk = st.tabs(["Heads", "Head statistics", "Queries and keys"])
    with tab_heads:
        _heads_tab(model_id, text, long)
    with tab_stats:
        _polled(_stats_view, long, model_id)
    with tab_qk:
        _qk_tab(model_id, text, cap)


def _polled(view, long: LongInput, *args) -> None:
    """``view(long, polling, *args)`` as a fragment that reruns every ``POLL`` s while the summaries
    are still being computed (and not once they are done)."""
    polling = not long.summaries.complete and long.summaries.error is None
    st.fragment(view, run_every=POLL if polling else None)(long, polling, *args)


def _progress(long: LongInput, polling: bool) -> tuple[np.ndarray, pd.DataFrame, int]:
    """Ask for the summaries and say how far they are; a poll that finds them done reruns the page
    once, so that the fragments stop polling."""
    s = long.summaries
    s.ask()
    thumbs, table, done = s.snapshot()
    layers = s.cap.n_layers
    if s.error:
        st.error(f"Computing the heads' thumbnails and statistics failed: {plain(s.error)}")
    elif done < layers:
        rate = f", {s.seconds / done:.1f} s a layer" if done else ""
        st.progress(done / layers, text=f"Every head, block-wise: {done} of {layers} layers done{rate}…")
    elif polling:
        st.rerun()
    return thumbs, table, done


def _heads_tab(model_id: str, text: str, long: LongInput) -> None:
    cap = long.cap
    L, H = cap.n_layers, cap.n_heads
    st.subheader(f"Model view: {plural(L, 'layer')} × {plural(H, 'head')}")
    st.caption(
        f"Each tile is one head over all {cap.n_tokens:,} tokens, **max-pooled** to at most {THUMB} × {THUMB} "
        "cells (a cell shows its strongest weight, so a sharp diagonal or one strong key stays visible), "
        "scaled to its own maximum. Click a tile to open it below."
    )
    _keep_in_range(K + "layer", L, min(L - 1, L // 2))
    _keep_in_range(K + "head", H, 0, str)
    _polled(_heads, long, model_id, text)


def _heads(long: LongInput, polling: bool, model_id: str, text: str) -> None:
    """Model view and head view, one fragment: a click on a tile, another head or a box drawn
    reruns only this, never the rest of the page."""
    cap = long.cap
    L, H = cap.n_layers, cap.n_heads
    thumbs, _, done = _progress(long, polling)
    model_view_chart(lf.long_model_view(thumbs, done), K + "heads", (L, H), (K + "layer", K + "head"))

    st.subheader("Head view")
    keep_pick(K + "heads", (K + "layer", K + "head"))
    c1, c2, c3, c4 = st.columns([3, 1, 2, 1])
    layer = c1.slider("layer", 0, L - 1, key=K + "layer")
    head = int(c2.selectbox("head", [str(h) for h in range(H)], key=K + "head"))
    cells = c3.select_slider(
        "overview cells a side",
        CELLS,
        value=CELLS[1],
        key=K + "cells",
        help="The overview is max-pooled to at most this many cells a side: 512 is about a pixel each "
        "at full width; 1024 sends four times the data.",
    )
    sqrt = c4.toggle(
        "√ colours",
        value=True,
        key=K + "sqrt",
        help="Colour by the square root of the weight, so that faint weights beside a sink that takes "
        "almost everything still show; the colour bar and the hover keep the weights.",
    )
    red = overview(model_id, text, layer, head, cells)
    _overview_chart(red, cap, layer, head, sqrt)
    _window_view(cap, layer, head, sqrt)
    pick_drawn(K + "heads")


def _keep_in_range(key: str, size: int, default: int, kind=int) -> None:
    """A layer or head widget's value from another model, out of this one's range, goes back to ``default``."""
    value = st.session_state.get(key)
    if value is None or not 0 <= int(value) < size:
        st.session_state[key] = kind(default)


def _overview_chart(red: bw.Reduced, cap: bw.QKCapture, layer: int, head: int, sqrt: bool) -> None:
    n = cap.n_tokens
    cells = red.values.shape[0]
    how = f"max-pooled to {cells:,} × {cells:,} cells" if red.reduced else "every token"
    title = f"layer {layer}, head {head}: {n:,} tokens, {how}"
    fig = lf.overview_figure(red, cap.tokens, title, ticks=8)
    fig.update_layout(height=720, margin=dict(l=10, r=10, b=10))
    if sqrt:
        lf.sqrt_colours(fig)
    key = K + "overview"
    st.plotly_chart(
        fig,
        key=key,
        config=PLOTLY_CONFIG,
        on_select=functools.partial(_boxed, key, red),
        selection_mode="box",
        width="stretch",
    )
    st.caption(
        "Hover: each cell's query and key token ranges and its largest weight. **Draw a box** on the "
        f"overview to see that window at full resolution below (at most {bw.MAX_WINDOW} × {bw.MAX_WINDOW} tokens; "
        "a larger box keeps its top-left corner), or type the window."
    )


def _boxed(key: str, red: bw.Reduced) -> None:
    """The overview's box selection → the window's number inputs."""
    boxes = getattr(getattr(st.session_state.get(key), "selection", None), "box", None)
    if not boxes:
        return  # a cleared selection keeps the window
    ((qa, qb), (ka, kb)), cut = bw.box_window(red, boxes[0]["x"], boxes[0]["y"])
    st.session_state.update({K + "q0": qa, K + "qn": qb - qa, K + "k0": ka, K + "kn": kb - ka})
    st.session_state[K + "cut"] = cut


def _window_view(cap: bw.QKCapture, layer: int, head: int, sqrt: bool) -> None:
    n = cap.n_tokens
    side = min(WINDOW, n)
    if st.session_state.get(K + "window_of") != (cap.model_id, n):  # a new input: the window in its middle
        first = max(0, n // 2 - side // 2)
        st.session_state.update({K + "q0": first, K + "qn": side, K + "k0": first, K + "kn": side})
        st.session_state[K + "window_of"] = (cap.model_id, n)
    st.markdown("**Zoom window** at full resolution")
    c1, c2, c3, c4 = st.columns(4)
    q0 = whole_number(c1, "queries from", 0, n - 1, 0, K + "q0")
    qn = whole_number(c2, "how many queries", 1, min(bw.MAX_WINDOW, n), side, K + "qn")
    k0 = whole_number(c3, "keys from", 0, n - 1, 0, K + "k0")
    kn = whole_number(c4, "how many keys", 1, min(bw.MAX_WINDOW, n), side, K + "kn")
    queries, keys = bw.fit_window(n, q0, q0 + qn), bw.fit_window(n, k0, k0 + kn)
    if (queries[1] - queries[0], keys[1] - keys[0]) != (qn, kn):
        st.caption(
            f"The window stops at the last token: queries {queries[0]}–{queries[1] - 1}, keys {keys[0]}–{keys[1] - 1}."
        )
    if st.session_state.pop(K + "cut", False):
        st.caption(f"The box was larger than {bw.MAX_WINDOW} tokens a side: its top-left corner is shown.")
    weights = bw.window(cap, layer, head, queries, keys)
    title = (
        f"layer {layer}, head {head}: queries {queries[0]:,}–{queries[1] - 1:,} × "
        f"keys {keys[0]:,}–{keys[1] - 1:,}, every token"
    )
    fig = lf.window_figure(weights, cap.tokens, queries[0], keys[0], title)
    if sqrt:
        lf.sqrt_colours(fig)
    st.plotly_chart(fig, key=K + "window", config=PLOTLY_CONFIG, width="stretch")
    if cap.causal and keys[0] > queries[1] - 1:
        st.caption("Every key here comes after every query: a causal model gives them no weight.")


# -- head statistics -----------------------------------------------------------------------------------


def _stats_view(long: LongInput, polling: bool, model_id: str) -> None:
    """The short page's Head statistics tab (a fragment), from the summaries so far."""
    table = _progress(long, polling)[1]
    if table.empty:
        st.info("The first layer's statistics are on their way.")
        return
    so_far = "" if long.summaries.complete else " so far"
    st.caption(
        f"{plural(len(table), 'head')}{so_far}, each over all {long.cap.n_tokens:,} query rows (computed "
        "block-wise, with the definitions of the short page's table)."
    )
    fig = scatter_groups(table, "mean distance", "entropy (bits)", "pattern", ["layer", "head"])
    st.plotly_chart(fig, key=K + "stats_chart", config=PLOTLY_CONFIG)
    st.dataframe(table, hide_index=True, key=K + "stats_table", width="stretch")
    csv_button(
        table, K + "stats", f"{model_id}_{long.cap.n_tokens}_tokens_head_stats", label="head statistics"
    )


# -- queries and keys ------------------------------------------------------------------------------------


def _qk_tab(model_id: str, text: str, cap: bw.QKCapture) -> None:
    n, L, H = cap.n_tokens, cap.n_layers, cap.n_heads
    st.subheader("Queries and keys")
    st.caption(
        "One head's queries and keys projected together onto their first two principal axes (PCA): "
        "a query lands near the keys it scores highly when the plane holds most of the variance. "
        "Queries are blue circles, keys orange diamonds, darker later in the text. **Click a query** "
        "to join it to its top keys."
    )
    _keep_in_range(K + "qk_layer", L, min(L - 1, L // 2))
    _keep_in_range(K + "qk_head", H, 0, str)
    _keep_in_range(K + "query", n, n - 1)
    c1, c2, c3, c4 = st.columns([2, 1, 1, 2])
    layer = c1.slider("layer", 0, L - 1, key=K + "qk_layer")
    head = int(c2.selectbox("head", [str(h) for h in range(H)], key=K + "qk_head"))
    query = whole_number(c3, "query", 0, n - 1, n - 1, K + "query")
    normalise = c4.toggle(
        "normalise (AttentionViz)",
        value=True,
        key=K + "normalise",
        help="Keys moved to the queries' mean and both scaled to the same mean length: no weight changes.",
    )
    qxy, kxy, share = projection(model_id, text, layer, head, normalise)
    top = bw.top_keys(bw.query_row(cap, layer, head, query), TOP)
    title = f"layer {layer}, head {head}: {n:,} queries and {n:,} keys"
    fig = lf.qk_figure(qxy, kxy, cap.tokens, share, query, top, title)
    key = K + "qk"
    st.plotly_chart(
        fig,
        key=key,
        config=PLOTLY_CONFIG,
        on_select=functools.partial(_clicked_query, key, n),
        selection_mode="points",
        width="stretch",
    )
    token = cap.tokens[query]
    st.markdown(f"**Query {query}** ({plain(repr(token))}): its {len(top)} largest weights")
    frame = pd.DataFrame(
        [{"key": k, "token": cap.tokens[k], "weight": w, "distance": query - k} for k, w in top]
    )
    st.dataframe(frame, hide_index=True, key=K + "top_keys")


def _clicked_query(key: str, n: int) -> None:
    """A click on a query point → the query number input (a key or a cleared selection: no change)."""
    points = getattr(getattr(st.session_state.get(key), "selection", None), "points", None) or []
    for point in points:
        index = point.get("point_index", point.get("point_number"))
        if point.get("curve_number") == 0 and index is not None and 0 <= int(index) < n:
            st.session_state[K + "query"] = int(index)
            return
