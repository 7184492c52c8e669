"""Corpus: one model over thousands of texts, every head summarised, searched and mapped."""

import streamlit as st

from attention_atlas.i18n import N_, _, ngettext
from attention_atlas.models.corpus.extract import Options
from attention_atlas.models.corpus.store import used_now
from attention_atlas.ui import cached
from attention_atlas.ui import corpus_views as cv
from attention_atlas.ui.url_state import Link
from attention_atlas.ui.views import show_terms
from attention_atlas.ui.widgets import intro, plain
from attention_atlas.viz_core.head_stats import label_of
from attention_atlas.viz_core.record import kind_name

K = "corpus_"
SOURCES = [N_("a bundled sample"), N_("your file")]
TABS = [N_("Head overview"), N_("Distributions"), N_("Search"), N_("Queries & keys")]

st.title(_("📚 Corpus"))
intro(
    _(
        "What a head *does* shows across many texts. Run one model over a corpus, then place every "
        "head by two statistics, see how one head varies from text to text, search where a head "
        "attends most strongly from a token, and map one head's queries and keys."
    )
)

link = Link("corpus")  # a file cannot travel in a link: a link names a bundled sample
c1, c2, c3, c4 = st.columns([1.1, 1.4, 1.3, 1])
source = c1.radio(
    _("texts"), SOURCES, format_func=_, key=link.choice("source", K + "source", SOURCES, SOURCES[0])
)
if source == SOURCES[0]:
    sample_id, corpus = cv.sample_inputs(link, K, c2, c3)
else:
    sample_id, corpus = None, cv.file_inputs(K, c2, c3)
models = cached.model_choices()
default_model = cv.opening_model(sample_id, models)
model_id = c4.selectbox(_("model"), models, key=link.choice("model", K + "model", models, default_model))
show_terms(cached.capabilities(model_id), c4)
kinds = list(cached.capabilities(model_id).kinds)
first = "cross" if "cross" in kinds else kinds[0]
kind = (
    c4.radio(
        _("attention"),
        kinds,
        format_func=kind_name,
        horizontal=True,
        key=link.choice("kind", K + "kind", kinds, first),
    )
    if len(kinds) > 1
    else first
)
options = Options(kind=kind)
c3.caption(plain(corpus.summary()))
cv.stores_box(K)
cv.dropped_notice()  # what the disk limit deleted for this session's background run
if not corpus.texts:
    st.info(_("This file holds no text: every line or cell is empty."))
    st.stop()

if not cv.is_finished(model_id, corpus, options):
    cv.run_guard(model_id, corpus, options, K)  # returns once the store is complete

path = str(cv.path_for(model_id, corpus, options))
used_now(path)  # the stores list shows the last used first
path = cv.versioned(path)  # the readers' key: a store still being filled is read afresh as it grows
meta = cv.meta(path)
fields = dict(
    texts=ngettext("{n:,} text", "{n:,} texts", meta["done"]).format(n=meta["done"]),
    layers=meta["layers"],
    heads=meta["heads"],
    kind=kind_name(meta["kind"]),
    store=plain(cv.path_for(model_id, corpus, options).name),
)
st.caption(
    _(
        "{texts} × {layers} layers × {heads} heads ({kind}) from the DuckDB store `{store}`; "
        "{failed} the model could not read",
        failed=ngettext("{n:,} text", "{n:,} texts", meta["failed"]).format(n=meta["failed"]),
        **fields,
    )
    if meta["failed"]
    else _(
        "{texts} × {layers} layers × {heads} heads ({kind}) from the DuckDB store `{store}`",
        **fields,
    )
)
heads = cv.overview(path)

c1, c2, c3 = st.columns([1, 1, 2])
layers, head_ids = list(range(meta["layers"])), list(range(meta["heads"]))
layer = c1.selectbox(_("layer"), layers, key=link.choice("layer", K + "layer", layers, 0))
head = c2.selectbox(_("head"), head_ids, key=link.choice("head", K + "head", head_ids, 0))
row = heads[(heads["layer"] == layer) & (heads["head"] == head)].iloc[0]
c3.markdown(
    _(
        "**Layer {layer}, head {head}**: mostly *{pattern}*; entropy {entropy:.2f} bits on average.",
        layer=layer,
        head=head,
        pattern=label_of(row.pattern),
        entropy=row.entropy,
    )
)
labels, tab_key = link.tabs("tab", K + "tab", TABS)
tab_map, tab_dist, tab_search, tab_qk = st.tabs(labels, key=tab_key, on_change="rerun")

with tab_map:
    cv.overview_tab(heads, link, K, model_id)
if tab_dist.open:
    with tab_dist:
        cv.distributions_tab(path, layer, head, K, model_id)
if tab_search.open:
    with tab_search:
        cv.search_tab(path, layer, head, K, model_id, meta["kind"])
if tab_qk.open:
    with tab_qk:
        cv.queries_keys_tab(path, layer, head, K, model_id)

link.done()
