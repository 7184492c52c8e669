"""Long inputs: a text up to the model's own context (thousands of tokens), every layer and head
computed from its captured queries and keys a block of rows at a time (``ui.long_views``)."""

import streamlit as st

from attention_atlas.i18n import N_, _
from attention_atlas.ui import cached
from attention_atlas.ui import long_views as lv
from attention_atlas.ui.live_heads import layers_heads
from attention_atlas.ui.long_cached import THUMB
from attention_atlas.ui.url_state import Link
from attention_atlas.ui.views import show_notices, show_terms
from attention_atlas.ui.widgets import intro

K = lv.K
TABS = [N_("Heads"), N_("By sentence"), N_("Head statistics"), N_("Queries and keys")]

st.title(_("📜 Long inputs"))
intro(
    _(
        "A whole text, up to the model's own context: every head at once (click a tile), one head's "
        "overview and any window of it at full resolution, head statistics, and one head's queries and "
        "keys. Nothing here holds every head's weights; each is computed when a view needs it."
    )
)

link = Link("long-input")
models = cached.model_choices(long_input=True)
if not models:
    st.info(_("No installed model hands over its queries and keys: `make run` installs the pretrained ones."))
    st.stop()
c1, c2 = st.columns([1, 3])
first = models[cached.first_index(models)]
model_id = c1.selectbox(_("model"), models, key=link.choice("model", K + "model", models, first))
show_terms(cached.capabilities(model_id), c1)
text = lv.text_input(link, model_id, c2)  # the model's bundled sample until typed, or a .txt file

n = lv.checked(model_id, text, c2)  # empty, too long, over the context or the memory: one line, stop
# One place for the capture's spinner, then what it captured and the summaries' progress: a new text's
# spinner takes the place of the last text's progress at once, which stayed for the whole capture.
slot = st.empty()
with slot.container():
    long = lv.captured(model_id, text, n)
cap = long.cap
with slot.container():
    show_notices(cap.notices)
    size = lv.size_text(cap.nbytes)  # "3 MB", "48 KB": a short text's queries and keys are not "0 MB"
    if cap.mapped:
        size = _("{size}, in files of the cache folder mapped into memory", size=size)
    st.caption(
        _(
            "Captured {grid} of queries and keys ({size}) in {seconds:.1f} s; every weight below is computed "
            "from them, a block of rows at a time.",
            grid=layers_heads(cap.n_layers, cap.n_heads),
            size=size,
            seconds=long.seconds,
        )
    )
    lv.polled(lv.progress, long)  # the one progress bar while every head is summarised

L, H = cap.n_layers, cap.n_heads
link.number("layer", K + "layer", 0, L - 1, min(L - 1, L // 2))
link.choice("head", K + "head", [str(h) for h in range(H)], "0")
labels, tab_key = link.tabs("tab", K + "tab", TABS)
tab_heads, tab_sentences, tab_stats, tab_qk = st.tabs(labels, key=tab_key, on_change="rerun")
with tab_heads:
    st.subheader(_("Model view: {grid}", grid=layers_heads(L, H)))
    st.caption(
        _(
            "Each tile is one head over all {n:,} tokens, **max-pooled** to at most "
            "{thumb} × {thumb} cells (a cell shows its strongest weight, so a sharp diagonal or "
            "one strong key stays visible), scaled to its own maximum. Click a tile to open it below.",
            n=cap.n_tokens,
            thumb=THUMB,
        )
    )
    lv.polled(lv.heads, long, model_id, text, link)
if tab_sentences.open:  # sums every row of a head (a layer: of every head): only when opened
    with tab_sentences:
        lv.by_sentence(model_id, text, cap, labels[0])
with tab_stats:
    lv.polled(lv.stats, long, model_id)
with tab_qk:
    lv.queries_keys(model_id, text, cap, polling=not long.summaries.complete)

link.done()
