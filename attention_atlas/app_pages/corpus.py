"""Corpus: one model over thousands of texts, every head summarised, searched and mapped."""

import time

import streamlit as st

from attention_atlas.models.corpus.extract import Options
from attention_atlas.models.corpus.inputs import SAMPLES, CorpusError
from attention_atlas.models.corpus.queries import STATISTICS
from attention_atlas.models.corpus.store import used_now
from attention_atlas.ui import cached
from attention_atlas.ui import corpus_views as cv
from attention_atlas.ui.url_state import Link
from attention_atlas.ui.views import show_terms
from attention_atlas.ui.widgets import chart, csv_button, intro, plain, plural

K = "corpus_"
SOURCES = ["a bundled sample", "your file"]
AUTO = 500  # texts a visit runs without asking (a few seconds with minilm)
SIZES = [100, 1_000, 2_000, 10_000]

st.title("📚 Corpus")
intro(
    "What a head *does* shows across many texts. Run one model over a corpus, then place every "
    "head by two statistics, see how one head varies from text to text, search where a head "
    "attends most strongly from a token, and map one head's queries and keys."
)

link = Link("corpus")  # a file cannot travel in a link: a link names a bundled sample
c1, c2, c3, c4 = st.columns([1.1, 1.4, 1.3, 1])
source = c1.radio("texts", SOURCES, key=link.choice("source", K + "source", SOURCES, SOURCES[0]))
if source == SOURCES[0]:
    samples = list(SAMPLES)
    sample_id = c2.selectbox(
        "sample",
        samples,
        format_func=lambda s: SAMPLES[s].label,
        key=link.choice("sample", K + "sample", samples, samples[0]),
    )
    n = c3.radio(
        "how many",
        SIZES,
        format_func="{:,}".format,
        horizontal=True,
        key=link.choice("n", K + "n", SIZES, SIZES[0]),
    )
    corpus = cv.sample_corpus(sample_id, n)
else:
    up = c2.file_uploader(
        "a .txt (one text a line), .csv or .jsonl, in UTF-8", ["txt", "csv", "jsonl"], key=K + "file"
    )
    if up is None:
        st.info("Upload a file, or pick a bundled sample.")
        st.stop()
    try:
        found = cv.file_columns(up.name, up.getvalue())
        at = found.index("text") if "text" in found else 0
        column = c3.selectbox("text column", found, index=at, key=K + "column") if found else None
        corpus = cv.file_corpus(up.name, up.getvalue(), column)
    except CorpusError as err:
        st.error(plain(err))
        st.stop()
models = cached.model_choices()
default_model = cv.opening_model(sample_id if source == SOURCES[0] else None, models)
model_id = c4.selectbox("model", models, key=link.choice("model", K + "model", models, default_model))
show_terms(cached.capabilities(model_id), c4)
kinds = list(cached.capabilities(model_id).kinds)
first = "cross" if "cross" in kinds else kinds[0]
kind = (
    c4.radio("attention", kinds, horizontal=True, key=link.choice("kind", K + "kind", kinds, first))
    if len(kinds) > 1
    else first
)
options = Options(kind=kind)
c3.caption(plain(corpus.summary()))
cv.stores_box(K)
if not corpus.texts:
    st.info("This file holds no text: every line or cell is empty.")
    st.stop()

if not cv.is_finished(model_id, corpus, options):
    running = cv.current_run(model_id, corpus, options)
    if running is not None and running.job.live:
        cv.follow(running, K)  # the progress bar and Cancel, polled; the page reruns when it ends
        st.stop()
    if running is not None and running.error:
        st.error(f"{model_id} cannot run this corpus: {plain(running.error)}")
    done, total = cv.done_count(model_id, corpus, options), len(corpus.texts)
    auto = total <= AUTO and not done and not st.session_state.get(K + "cancel")
    if auto:  # a few seconds: run now, in this page run
        try:
            if not cv.run(model_id, corpus, options, K):
                st.stop()
        except (ValueError, OSError, RuntimeError) as err:
            st.error(f"{model_id} cannot run this corpus: {plain(err)}")
            st.stop()
    else:
        label = (
            f"Continue ({done:,} of {total:,} done)"
            if done
            else f"Run {model_id} over {plural(total, 'text')}"
        )
        if st.button(label, key=K + "run", type="primary"):
            cv.start(model_id, corpus, options)
            st.rerun()  # the page draws the background run's progress, without this button
        where = (
            f" Runs on Ray ({plain(cv.ray_address())}, from ATLAS_RAY_ADDRESS)." if cv.ray_address() else ""
        )
        st.info(
            "Each text's weights become statistics as its batch finishes; a second look is instant." + where
        )
        st.stop()

path = str(cv.path_for(model_id, corpus, options))
used_now(path)  # the stores list shows the last used first
meta = cv.meta(path)
st.caption(
    f"{plural(meta['done'], 'text')} × {meta['layers']} layers × {meta['heads']} heads "
    f"({meta['kind']} attention) from the DuckDB store `{plain(cv.path_for(model_id, corpus, options).name)}`"
    + (f"; {plural(meta['failed'], 'text')} the model could not read" if meta["failed"] else "")
)
heads = cv.overview(path)


def pick() -> None:
    """A click on the overview picks that head for every tab (the dots are the rows of ``heads``)."""
    event = st.session_state.get(K + "overview")
    points = event.selection.points if event and event.selection else []
    if points and "point_index" in points[0]:
        chosen = heads.iloc[int(points[0]["point_index"])]
        st.session_state[K + "layer"], st.session_state[K + "head"] = (
            int(chosen["layer"]),
            int(chosen["head"]),
        )


c1, c2, c3 = st.columns([1, 1, 2])
layers, head_ids = list(range(meta["layers"])), list(range(meta["heads"]))
layer = c1.selectbox("layer", layers, key=link.choice("layer", K + "layer", layers, 0))
head = c2.selectbox("head", head_ids, key=link.choice("head", K + "head", head_ids, 0))
row = heads[(heads["layer"] == layer) & (heads["head"] == head)].iloc[0]
c3.markdown(
    f"**Layer {layer}, head {head}**: mostly *{row.pattern}*; entropy {row.entropy:.2f} bits on average."
)
names = ["Head overview", "Distributions", "Search", "Queries & keys"]
tab_map, tab_dist, tab_search, tab_qk = st.tabs(
    names, key=link.choice("tab", K + "tab", names, names[0]), on_change="rerun"
)

with tab_map:
    c1, c2 = st.columns(2)
    stats = list(STATISTICS)
    x = c1.selectbox("x", stats, format_func=cv.LABELS.get, key=link.choice("x", K + "x", stats, stats[1]))
    y = c2.selectbox("y", stats, format_func=cv.LABELS.get, key=link.choice("y", K + "y", stats, stats[0]))
    st.caption("Each dot is a head, its statistics averaged over the corpus. Click one to pick it.")
    fig = cv.overview_figure(heads, x, y)
    st.plotly_chart(
        fig, key=K + "overview", on_select=pick, selection_mode="points", config={"displaylogo": False}
    )
    csv_button(heads, K + "heads", f"{model_id}_corpus_heads", label="every head's means")

if tab_dist.open:
    with tab_dist:
        stat = st.selectbox("statistic", STATISTICS, format_func=cv.LABELS.get, key=K + "stat")
        values = cv.head_values(path, layer, head, stat)
        c1, c2 = st.columns(2)
        with c1:
            title = f"layer {layer}, head {head} over {plural(len(values), 'text')}"
            chart(
                cv.distribution_figure(values[stat], stat, title),
                values,
                K + "dist",
                f"{model_id}_L{layer}H{head}_{stat}",
            )
        with c2:
            frame = cv.layer_values(path, layer, stat)
            chart(
                cv.layer_box_figure(frame, stat, layer, head), frame, K + "box", f"{model_id}_L{layer}_{stat}"
            )

if tab_search.open:
    with tab_search:
        common = cv.common_tokens(path)
        c1, c2 = st.columns(2)
        token = c1.text_input(
            "from token (* matches any letters)", common[0] if common else "", key=K + "token"
        )
        to = c2.text_input("attending most to (optional)", "", key=K + "to")
        st.caption("Common tokens here: " + plain(", ".join(common)))
        try:
            began = time.perf_counter()
            hits = cv.search(path, layer, head, token, to)
            ms = (time.perf_counter() - began) * 1000
        except ValueError as err:
            st.info(plain(err))
            st.stop()
        st.caption(
            f"{plural(len(hits), 'hit')} for layer {layer}, head {head}, strongest first ({ms:.0f} ms)."
        )
        links = cv.links_column(model_id, meta["kind"], hits, layer, head)
        shown = hits.assign(link=links) if links else hits
        column = {"link": st.column_config.LinkColumn("head view", display_text="open ↗")}
        st.dataframe(shown, hide_index=True, width="stretch", column_config=column, key=K + "hits")
        csv_button(hits, K + "hits_csv", f"{model_id}_L{layer}H{head}_search")

if tab_qk.open:
    with tab_qk:
        if not cached.capabilities(model_id).long_input:
            able = ", ".join(cached.model_choices(long_input=True))
            st.info(
                f"Queries and keys are captured from the Hugging Face encoders and causal models ({able})."
            )
            st.stop()
        size = st.select_slider("texts in the sample", [25, 50, 100, 200], value=50, key=K + "qk_n")
        points, texts = cv.head_embedding(model_id, path, layer, head, size)
        st.caption(
            "Keys moved onto the queries' centre and both scaled to one mean length (no weight changes), "
            "then one PCA: a query lies near the keys it scores highly."
        )
        chart(
            cv.embedding_figure(points, texts),
            cv.embedding_frame(points),
            K + "qk",
            f"{model_id}_L{layer}H{head}_qk",
        )

link.done()
