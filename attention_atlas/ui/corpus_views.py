"""The Corpus page's pieces: cached reads of a corpus and its store, the run with its progress bar
and Cancel button, the figures (head overview, distributions, queries-and-keys map), the links
that open a search hit's head on the Transformer page, and the page's blocks: the sample or file
picked, the guard of a store not yet complete, and the body of each of its four tabs."""

from __future__ import annotations

import importlib.util
import os
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from attention_atlas.i18n import N_, _, ngettext
from attention_atlas.models.corpus import inputs, queries
from attention_atlas.models.corpus.extract import Options
from attention_atlas.models.corpus.run import Cancelled, Progress, finished, path_for, run_corpus
from attention_atlas.models.corpus.store import (
    Dropped,
    Store,
    StoreError,
    cached_stores,
    remove_store,
    store_folder,
)
from attention_atlas.serve.jobs import FAILED, Job
from attention_atlas.ui import cached
from attention_atlas.ui.url_state import rerun_page
from attention_atlas.ui.watch_learn import SessionWatch, session_id
from attention_atlas.ui.widgets import PLOTLY_CONFIG, chart, csv_button, for_screen, plain
from attention_atlas.viz_core.head_stats import label_of  # a statistic's or a pattern's name for people

AUTO = 500  # texts a visit runs without asking (a few seconds with minilm)
SIZES = [100, 1_000, 2_000, 10_000]

# -- reading ---------------------------------------------------------------------------------------


@st.cache_data(show_spinner=False, max_entries=16)
def sample_corpus(sample_id: str, n: int) -> inputs.Corpus:
    return inputs.sample(sample_id, n)


@st.cache_data(show_spinner=False, max_entries=8)
def file_corpus(name: str, data: bytes, column: str | None) -> inputs.Corpus:
    return inputs.read_bytes(name, data, column)


@st.cache_data(show_spinner=False, max_entries=8)
def file_columns(name: str, data: bytes) -> list[str]:
    return inputs.columns(name, data)


def is_finished(model_id: str, corpus: inputs.Corpus, options: Options) -> bool:
    return finished(model_id, corpus, options)


def open_store(model_id: str, corpus: inputs.Corpus, options: Options) -> Store:
    return Store.open(path_for(model_id, corpus, options))


def versioned(path: str) -> str:
    """The readers' key for the store at ``path``: its path and, after a '#', the texts it holds now.
    A store shown before it is complete (after a Cancel) is read again once a run has added to it,
    not served from the cache of its first look."""
    with Store.open(path) as store:
        return f"{path}#{store.counts()['done']}"


def _stored(key: str) -> Store:
    """The store a reader's key (``versioned``) names."""
    return Store.open(key.rpartition("#")[0] or key)


@st.cache_data(show_spinner=False, max_entries=32)
def overview(path: str) -> pd.DataFrame:
    with _stored(path) as store:
        return queries.head_overview(store)


@st.cache_data(show_spinner=False, max_entries=64)
def head_values(path: str, layer: int, head: int, statistic: str) -> pd.DataFrame:
    with _stored(path) as store:
        return queries.head_values(store, layer, head, statistic)


@st.cache_data(show_spinner=False, max_entries=16)
def layer_values(path: str, layer: int, statistic: str) -> pd.DataFrame:
    with _stored(path) as store:
        return store.frame(f"SELECT head, {statistic} FROM stats WHERE layer = ?", [layer])


@st.cache_data(show_spinner=False, max_entries=64)
def search(path: str, layer: int, head: int, pattern: str, to: str) -> pd.DataFrame:
    with _stored(path) as store:
        return queries.search(store, layer, head, pattern, to)


@st.cache_data(show_spinner=False, max_entries=16)  # the spinner is the caller's, in the visitor's language
def head_embedding(model_id: str, path: str, layer: int, head: int, n: int):
    from attention_atlas.models.corpus.embedding import capture_head, embed

    with _stored(path) as store:
        sample = queries.texts_sample(store, n)
    return embed(capture_head(cached.adapter(model_id), sample, layer, head)), dict(sample)


# -- the run ---------------------------------------------------------------------------------------


def ray_address() -> str | None:
    """Where the page's runs go: the Ray cluster at ``ATLAS_RAY_ADDRESS`` (as for ``atlas corpus``;
    ``auto`` joins a Ray running on this machine or starts one), else this process."""
    return os.environ.get("ATLAS_RAY_ADDRESS", "").strip() or None


def on_ray() -> str:
    """What a progress line adds when the runs go to Ray."""
    address = ray_address()
    return _(" on Ray ({address})", address=address) if address else ""


def starting() -> str:
    """A run's progress text before its first batch."""
    address = ray_address()
    return (
        _("starting the workers on Ray ({address})…", address=address) if address else _("loading the model…")
    )


def fill(model_id: str, corpus: inputs.Corpus, options: Options, **how) -> None:
    """``run_corpus`` here or on Ray (``ray_address``), its store closed; a missing Ray, a cluster
    that does not answer (checked before the model loads: a few seconds, not a hang) or a Ray failure
    (a lost worker) is one line (``RuntimeError``, ``ConnectionError``)."""
    address = ray_address()
    if address and importlib.util.find_spec("ray") is None:
        raise RuntimeError(
            _("ATLAS_RAY_ADDRESS is set, but Ray is not installed: pip install 'ray[data]==2.60.0'")
        )
    if address:
        from attention_atlas.models.corpus.ray_run import check

        check(address)
    adapter = cached.adapter(model_id)
    try:
        run_corpus(model_id, corpus, options, adapter=adapter, ray_address=address, **how).close()
    except Exception as err:
        if address and type(err).__module__.startswith("ray"):
            raise RuntimeError(
                _(
                    "the run on Ray ({address}) failed: {error}",
                    address=address,
                    error=str(err).splitlines()[0][:300],
                )
            ) from err
        raise


def run(model_id: str, corpus: inputs.Corpus, options: Options, key: str) -> bool:
    """Run (or continue) a small corpus now, in the page's own run, with a progress bar; True once
    complete. A click on Cancel reruns the page, which stops this run between two batches; the store
    keeps what is done. Larger runs go to the background (``start``)."""
    bar = st.progress(0.0, text=starting())
    cancel = st.empty()
    cancel.button(_("Cancel"), key=key + "cancel", help=_("stop now; Continue picks up where it stopped"))

    def report(p: Progress) -> None:
        bar.progress(p.done / max(p.total, 1), text=p.line() + on_ray())

    try:
        fill(model_id, corpus, options, progress=report, dropped=said_dropped)
    except Cancelled:
        return False
    bar.empty()
    cancel.empty()
    return True


def said_dropped(gone: list[Dropped]) -> None:
    """One line for the stores the disk limit deleted (``store.trim_stores``), in this page run."""
    from attention_atlas.ui.uploads import size_text

    for reader in READERS:  # nothing read from a deleted store is served again
        reader.clear()
    names = ", ".join(f"{d.name} ({size_text(d.bytes)})" for d in gone)
    limit = size_text(gone[0].limit)
    st.info(
        ngettext(
            "The corpus stores passed {limit} (ATLAS_CORPUS_STORES_MAX_MB), so the least recently used "
            "one was deleted: {names}.",
            "The corpus stores passed {limit} (ATLAS_CORPUS_STORES_MAX_MB), so the {n} least recently "
            "used were deleted: {names}.",
            len(gone),
            n=len(gone),
            limit=limit,
            names=plain(names),
        )
    )


def dropped_notice() -> None:
    """The line of ``said_dropped`` for what this session's background run deleted, once."""
    run = st.session_state.get(RUN_KEY)
    gone = []
    while run is not None and run.dropped:
        gone.append(run.dropped.popleft())  # the run's thread appends: a deque is safe for both
    if gone:
        said_dropped(gone)


@dataclass
class CorpusRun:
    """One visitor's corpus run in a background ``serve.jobs.Job``: the page polls ``progress``
    (a fragment redraws it every ``POLL`` seconds) instead of holding a script run for minutes."""

    store: str  # the store this run fills: one run per store and session
    watch: SessionWatch  # the visitor is still there (the page beats at each poll)
    job: Job | None = None
    progress: Progress | None = None
    dropped: deque = field(default_factory=deque)  # stores the disk limit deleted, not yet said

    @property
    def error(self) -> str | None:
        """Why the run failed, in one line, or None."""
        return self.job.message if self.job.state == FAILED else None


POLL = 1.0  # seconds between two looks at a background run
RUN_KEY = "corpus_run_job"  # session state: this visitor's background run


def start(model_id: str, corpus: inputs.Corpus, options: Options) -> CorpusRun:
    """Start (or continue) the run of ``model_id`` over ``corpus`` in the background, as this
    session's run; it stops between two batches when Cancel is pressed or the visitor leaves."""
    run = CorpusRun(str(path_for(model_id, corpus, options)), SessionWatch(session_id()))

    def step() -> str | None:
        def keep(p: Progress) -> None:
            run.progress = p

        try:
            stop, said = run.job.cancelled, run.dropped.extend
            fill(model_id, corpus, options, progress=keep, should_stop=stop, dropped=said)
        except Cancelled:
            return None  # the job sees its stop and ends STOPPED; the store keeps every finished batch
        return "complete"

    run.job = Job(step, name="atlas-corpus-run", alive=run.watch)
    st.session_state[RUN_KEY] = run
    run.job.start()
    return run


def current_run(model_id: str, corpus: inputs.Corpus, options: Options) -> CorpusRun | None:
    """This session's background run of this store, if it has one."""
    run = st.session_state.get(RUN_KEY)
    return run if run is not None and run.store == str(path_for(model_id, corpus, options)) else None


@st.fragment(run_every=POLL)
def follow(run: CorpusRun, key: str) -> None:
    """The background run's progress bar and Cancel button, redrawn every ``POLL`` seconds; the
    whole page reruns once the run has ended (its results, or Continue after a Cancel)."""
    run.watch.beat()
    if not run.job.live:
        rerun_page()
    p = run.progress
    text = starting() if p is None else p.line() + on_ray()
    st.progress(0.0 if p is None else p.done / max(p.total, 1), text=text)
    if st.button(_("Cancel"), key=key + "cancel", help=_("stop now; Continue picks up where it stopped")):
        run.job.stop()
        rerun_page()


def done_count(model_id: str, corpus: inputs.Corpus, options: Options) -> int:
    path = path_for(model_id, corpus, options)
    if not path.is_file():
        return 0
    try:
        with Store.open(path) as store:
            return store.counts()["done"]
    except ValueError:
        return 0


# -- figures ---------------------------------------------------------------------------------------


def overview_figure(frame: pd.DataFrame, x: str, y: str) -> go.Figure:
    """Every head, placed by two statistics' means over the corpus, coloured by layer."""
    labels = [
        _("layer {layer}, head {head} · {pattern}", layer=r.layer, head=r.head, pattern=label_of(r.pattern))
        for r in frame.itertuples()
    ]
    fig = go.Figure(
        go.Scatter(
            x=frame[x],
            y=frame[y],
            mode="markers",
            text=labels,
            customdata=frame[["layer", "head"]].to_numpy(),
            hovertemplate="%{text}<br>"
            + f"{label_of(x)} %{{x:.3f}}<br>{label_of(y)} %{{y:.3f}}<extra></extra>",
            marker=dict(
                size=11,
                color=frame["layer"],
                colorscale="Viridis",
                colorbar=dict(title=_("layer")),
                line=dict(width=0.5, color="white"),
            ),
        )
    )
    fig.update_layout(
        xaxis_title=_("{statistic} (mean over texts)", statistic=label_of(x)),
        yaxis_title=_("{statistic} (mean over texts)", statistic=label_of(y)),
        height=460,
        margin=dict(l=10, r=10, t=30, b=10),
        clickmode="event+select",
    )
    return fig


def distribution_figure(values: pd.Series, statistic: str, title: str) -> go.Figure:
    fig = go.Figure(go.Histogram(x=values, nbinsx=40, marker_color="#4c78a8"))
    fig.update_layout(
        title=title, xaxis_title=label_of(statistic), yaxis_title=_("texts"), height=340, bargap=0.05,
        margin=dict(l=10, r=10, t=40, b=10),
    )  # fmt: skip
    return fig


def layer_box_figure(frame: pd.DataFrame, statistic: str, layer: int, head: int) -> go.Figure:
    """One box per head of ``layer`` (the chosen head highlighted): how the heads differ."""
    fig = go.Figure()
    for h, part in frame.groupby("head", sort=True):
        fig.add_trace(
            go.Box(
                y=part[statistic], name=str(h), boxpoints=False,
                marker_color="#e45756" if h == head else "#4c78a8",
            )
        )  # fmt: skip
    fig.update_layout(
        title=_("layer {layer}: every head over the corpus", layer=layer), xaxis_title=_("head"),
        yaxis_title=label_of(statistic),
        showlegend=False, height=340, margin=dict(l=10, r=10, t=40, b=10),
    )  # fmt: skip
    return fig


def embedding_figure(points, texts: dict[int, str]) -> go.Figure:
    """Queries and keys of one head in one PCA plane (WebGL: thousands of points)."""
    fig = go.Figure()
    for role, colour in (("query", "#e45756"), ("key", "#4c78a8")):
        m = points.role == role
        shown_role = _("query") if role == "query" else _("key")
        hover = [
            _(
                "{role} {token!r} (text {text}, token {pos})<br>{snippet}",
                role=shown_role,
                token=t,
                text=i,
                pos=p,
                snippet=_short(texts.get(int(i), "")),
            )
            for t, i, p in zip(points.token[m], points.text_id[m], points.pos[m], strict=True)
        ]
        name = _("queries") if role == "query" else _("keys")
        fig.add_trace(
            go.Scattergl(
                x=points.xy[m, 0], y=points.xy[m, 1], mode="markers", name=name,
                text=hover, hoverinfo="text", marker=dict(size=5, color=colour, opacity=0.6),
            )
        )  # fmt: skip
    ex = points.explained
    fig.update_layout(
        xaxis_title=_("PC 1 ({share:.0%} of the variance)", share=ex[0]),
        yaxis_title=_("PC 2 ({share:.0%})", share=ex[1]),
        height=520, margin=dict(l=10, r=10, t=30, b=10),
    )  # fmt: skip
    return fig


def embedding_frame(points) -> pd.DataFrame:
    return pd.DataFrame(
        {"role": points.role, "token": points.token, "text_id": points.text_id, "pos": points.pos,
         "x": points.xy[:, 0], "y": points.xy[:, 1]}
    )  # fmt: skip


def _short(text: str, n: int = 80) -> str:
    text = str(text).replace("<", "‹").replace(">", "›")  # hover labels are HTML: show markup as text
    return text if len(text) <= n else text[: n - 1] + "…"


# -- links to the Transformer page -------------------------------------------------------------------


def transformer_link(model_id: str, kind: str, text: str, layer: int, head: int) -> str:
    """The Transformer page with this text, model, layer and head: the names its ``ui.url_state.Link``
    reads (a value equal to the page's default may be left out; here every one is given)."""
    query = {"model": model_id, "text": text, "layer": layer, "head": head}
    if kind != "self":
        query["kind"] = kind
    return "transformer?" + urlencode(query)


def opening_model(sample_id: str | None, models: list[str]) -> str:
    """The model a bundled sample opens with (the one registered with it in ``samples``), else the
    model registered to be shown first."""
    from attention_atlas.models.registry import info

    declared = [m for m in models if sample_id in info(m).samples]
    return declared[0] if declared else models[cached.first_index(models)]


def links_column(model_id: str, kind: str, hits: pd.DataFrame, layer: int, head: int) -> list[str] | None:
    """Each hit's link, or None for a model the Transformer page does not show."""
    from attention_atlas.models.registry import info

    if not info(model_id).transformer:
        return None
    return [transformer_link(model_id, kind, t, layer, head) for t in hits["text"]]


@st.cache_data(show_spinner=False, max_entries=16)
def common_tokens(path: str) -> list[str]:
    with _stored(path) as store:
        return queries.common_tokens(store)


@st.cache_data(show_spinner=False, max_entries=16)
def meta(path: str) -> dict:
    with _stored(path) as store:
        return {**store.meta, **store.counts()}


# -- the cached stores -------------------------------------------------------------------------------


READERS = (overview, head_values, layer_values, search, head_embedding, common_tokens, meta)


def stores_box(key: str) -> None:
    """The expander that lists the corpus stores in the cache folder and deletes one, after a
    confirmation; a store a run is filling is refused in one line."""
    from attention_atlas.ui.uploads import size_text

    with st.expander(_("Cached corpus stores")):
        said = st.session_state.pop(key + "store_said", None)
        if said:
            (st.error if said[0] == "error" else st.success)(said[1])
        stores = cached_stores()
        if not stores:
            st.info(
                _("No corpus store is cached: each run keeps one in {folder}.", folder=plain(store_folder()))
            )
            return
        rows = [_row(s, size_text(s.bytes)) for s in stores]
        frame = pd.DataFrame(rows)
        frame = frame if frame["note"].any() else frame.drop(columns="note")
        names = {c: _(c) for c in STORE_COLUMNS}  # the headers in the visitor's language, the data's kept
        st.dataframe(frame, hide_index=True, width="stretch", key=key + "stores", column_config=names)
        labels = {
            r["store"]: _(
                "{model} · {sample} · {done} texts · {size}",
                model=r["model"],
                sample=r["sample"],
                done=r["texts done"],
                size=r["size"],
            )
            for r in rows
        }
        chosen = st.selectbox(_("store"), list(labels), format_func=labels.get, key=key + "store_pick")
        sure = st.checkbox(
            _("Yes, delete it (its run starts again from the first text)"), key=key + "store_sure"
        )
        st.button(
            _("Delete this store"), key=key + "store_delete", disabled=not sure,
            on_click=_delete, args=(key, str(store_folder() / chosen)),
        )  # fmt: skip


def _delete(key: str, path: str) -> None:
    """Delete ``path`` (the button's callback): the message shows at the next run."""
    from attention_atlas.ui.uploads import size_text

    st.session_state[key + "store_sure"] = False
    try:
        freed = remove_store(Path(path))
    except (StoreError, OSError) as err:
        st.session_state[key + "store_said"] = ("error", plain(err))
        return
    for reader in READERS:
        reader.clear()
    said = _("Deleted {name} ({size} freed).", name=Path(path).name, size=size_text(freed))
    st.session_state[key + "store_said"] = ("ok", said)


# The search hits' columns (``queries.search``) and the stores table's (``_row``), as the page shows them.
HIT_COLUMNS = (
    N_("text_id"),
    N_("pos"),
    N_("token"),
    N_("key_pos"),
    N_("key_token"),
    N_("weight"),
    N_("text"),
)
STORE_COLUMNS = (
    N_("model"),
    N_("sample"),
    N_("texts done"),
    N_("size"),
    N_("last used"),
    N_("store"),
    N_("note"),
)


def _row(s, size: str) -> dict:
    """One store as the list shows it (a store that cannot be read says why in its ``note``)."""
    done = _("{done:,} of {total:,}", done=s.done, total=s.texts) if not s.note else "?"
    return {"model": s.model, "sample": s.corpus, "texts done": done, "size": size, "last used": _when(s.used),
            "store": s.path.name, "note": s.note}  # fmt: skip


def _when(stamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(stamp))


# -- the page's blocks ---------------------------------------------------------------------------------


def sample_inputs(link, key: str, sample_col, size_col) -> tuple[str, inputs.Corpus]:
    """A bundled sample and how many of its texts, both in the page's link: (sample id, corpus)."""
    samples = list(inputs.SAMPLES)
    sample_id = sample_col.selectbox(
        _("sample"),
        samples,
        format_func=lambda s: _(inputs.SAMPLES[s].label),
        key=link.choice("sample", key + "sample", samples, samples[0]),
        help=_("English sentences: the English side of the translation corpus. Couplet upper lines: Tang poems."),
    )
    n = size_col.radio(
        _("how many"),
        SIZES,
        format_func="{:,}".format,
        horizontal=True,
        key=link.choice("n", key + "n", SIZES, SIZES[0]),
    )
    return sample_id, sample_corpus(sample_id, n)


def file_inputs(key: str, file_col, column_col) -> inputs.Corpus:
    """An uploaded file and, for a table, its text column; stops the page until a file is given
    or when the file cannot be read (one line)."""
    # any file is taken, and one of another type refused in words (the uploader's own type filter
    # showed a red icon and nothing else: issue 40 item 17)
    up = file_col.file_uploader(_("a .txt (one text a line), .csv or .jsonl, in UTF-8"), key=key + "file")
    if up is None:
        st.info(_("Upload a file, or pick a bundled sample."))
        st.stop()
    if Path(up.name).suffix.lower() not in inputs.SUFFIXES:
        st.error(_("{name} is not a .txt, .csv or .jsonl file: upload one of those.", name=plain(up.name)))
        st.stop()
    try:
        found = file_columns(up.name, up.getvalue())
        at = found.index("text") if "text" in found else 0
        column = (
            column_col.selectbox(_("text column"), found, index=at, key=key + "column") if found else None
        )
        return file_corpus(up.name, up.getvalue(), column)
    except inputs.CorpusError as err:
        st.error(plain(err))
        st.stop()


def run_guard(model_id: str, corpus: inputs.Corpus, options: Options, key: str) -> None:
    """The guard of a store not yet complete: this session's background run followed, a small
    corpus run now (up to ``AUTO`` texts, never after a Cancel), else a Run or Continue button.
    Returns once the store is complete in this page run, or holds texts to look at (a cancelled
    run's: the page shows them under the Continue button); otherwise the page stops here."""
    running = current_run(model_id, corpus, options)
    if running is not None and running.job.live:
        follow(running, key)  # the progress bar and Cancel, polled; the page reruns when it ends
        st.stop()
    if running is not None and running.error:
        st.error(_("{model} cannot run this corpus: {error}", model=model_id, error=plain(running.error)))
    done, total = done_count(model_id, corpus, options), len(corpus.texts)
    auto = total <= AUTO and not done and not st.session_state.get(key + "cancel")
    if auto:  # a few seconds: run now, in this page run
        try:
            if not run(model_id, corpus, options, key):
                st.stop()
        except (ValueError, OSError, RuntimeError) as err:
            st.error(_("{model} cannot run this corpus: {error}", model=model_id, error=plain(err)))
            st.stop()
    else:
        label = (
            _("Continue ({done:,} of {total:,} done)", done=done, total=total)
            if done
            else _(
                "Run {model} over {texts}",
                model=model_id,
                texts=ngettext("{n:,} text", "{n:,} texts", total).format(n=total),
            )
        )
        if st.button(label, key=key + "run", type="primary"):
            start(model_id, corpus, options)
            st.rerun()  # the page draws the background run's progress, without this button
        where = (
            _(" Runs on Ray ({address}, from ATLAS_RAY_ADDRESS).", address=plain(ray_address()))
            if ray_address()
            else ""
        )
        if done:  # what a cancelled run finished can be looked at meanwhile (issue 40 item 17)
            st.info(
                _(
                    "Below: the {done:,} of {total:,} texts done so far. Continue runs the rest.{where}",
                    done=done,
                    total=total,
                    where=where,
                )
            )
            return
        st.info(
            _(
                "Each text's weights become statistics as its batch finishes; a second look is instant.{where}",
                where=where,
            )
        )
        st.stop()


def overview_tab(heads: pd.DataFrame, link, key: str, model_id: str) -> None:
    """The Head overview tab: every head placed by two statistics (both in the link); a click on a
    dot picks that head for every tab."""

    def pick() -> None:
        """The chart's selection callback (the dots are the rows of ``heads``)."""
        event = st.session_state.get(key + "overview")
        points = event.selection.points if event and event.selection else []
        if points and "point_index" in points[0]:
            chosen = heads.iloc[int(points[0]["point_index"])]
            st.session_state[key + "layer"], st.session_state[key + "head"] = (
                int(chosen["layer"]),
                int(chosen["head"]),
            )

    c1, c2 = st.columns(2)
    stats = list(queries.STATISTICS)
    x = c1.selectbox("x", stats, format_func=label_of, key=link.choice("x", key + "x", stats, stats[1]))
    y = c2.selectbox("y", stats, format_func=label_of, key=link.choice("y", key + "y", stats, stats[0]))
    st.caption(_("Each dot is a head, its statistics averaged over the corpus. Click one to pick it."))
    fig = overview_figure(heads, x, y)
    st.plotly_chart(
        for_screen(fig), key=key + "overview", on_select=pick, selection_mode="points", config=PLOTLY_CONFIG
    )
    csv_button(heads, key + "heads", f"{model_id}_corpus_heads", label=_("every head's means"))


def distributions_tab(path: str, layer: int, head: int, key: str, model_id: str) -> None:
    """The Distributions tab: one statistic of the head over every text, beside its layer's heads."""
    stat = st.selectbox(_("statistic"), queries.STATISTICS, format_func=label_of, key=key + "stat")
    values = head_values(path, layer, head, stat)
    c1, c2 = st.columns(2)
    with c1:
        texts = ngettext("{n:,} text", "{n:,} texts", len(values)).format(n=len(values))
        title = _("layer {layer}, head {head} over {texts}", layer=layer, head=head, texts=texts)
        chart(
            distribution_figure(values[stat], stat, title),
            values,
            key + "dist",
            f"{model_id}_L{layer}H{head}_{stat}",
        )
    with c2:
        frame = layer_values(path, layer, stat)
        chart(layer_box_figure(frame, stat, layer, head), frame, key + "box", f"{model_id}_L{layer}_{stat}")


def search_tab(path: str, layer: int, head: int, key: str, model_id: str, kind: str) -> None:
    """The Search tab: where the head attends most strongly from a token (optionally to another),
    strongest first, each hit with a link to its head view; a bad pattern stops the page (one line)."""
    common = common_tokens(path)
    c1, c2 = st.columns(2)
    token = c1.text_input(
        _("from token (* matches any letters)"), common[0] if common else "", key=key + "token"
    )
    to = c2.text_input(_("attending most to (optional)"), "", key=key + "to")
    st.caption(_("Common tokens here: {tokens}", tokens=plain(", ".join(common))))
    try:
        began = time.perf_counter()
        hits = search(path, layer, head, token, to)
        ms = (time.perf_counter() - began) * 1000
    except ValueError as err:
        st.info(plain(err))
        st.stop()
    st.caption(
        _(
            "{hits} for layer {layer}, head {head}, strongest first ({ms:.0f} ms).",
            hits=ngettext("{n:,} hit", "{n:,} hits", len(hits)).format(n=len(hits)),
            layer=layer,
            head=head,
            ms=ms,
        )
    )
    links = links_column(model_id, kind, hits, layer, head)
    shown = hits.assign(link=links) if links else hits
    column = {c: _(c) for c in HIT_COLUMNS} | {
        "link": st.column_config.LinkColumn(_("head view"), display_text=_("open ↗"))
    }
    st.dataframe(shown, hide_index=True, width="stretch", column_config=column, key=key + "hits")
    csv_button(hits, key + "hits_csv", f"{model_id}_L{layer}H{head}_search")


def queries_keys_tab(path: str, layer: int, head: int, key: str, model_id: str) -> None:
    """The Queries & keys tab: the head's queries and keys over a sample of texts in one PCA plane,
    for the models whose queries and keys can be captured (else one line, and the page stops)."""
    if not cached.capabilities(model_id).long_input:
        able = ", ".join(cached.model_choices(long_input=True))
        st.info(
            _(
                "Queries and keys are captured from the Hugging Face encoders and causal models ({able}).",
                able=able,
            )
        )
        st.stop()
    size = st.select_slider(_("texts in the sample"), [25, 50, 100, 200], value=50, key=key + "qk_n")
    with st.spinner(_("Capturing queries and keys…")):
        points, texts = head_embedding(model_id, path, layer, head, size)
    st.caption(
        _(
            "Keys moved onto the queries' centre and both scaled to one mean length (no weight changes), "
            "then one PCA: a query lies near the keys it scores highly."
        )
    )
    chart(
        embedding_figure(points, texts), embedding_frame(points), key + "qk", f"{model_id}_L{layer}H{head}_qk"
    )
