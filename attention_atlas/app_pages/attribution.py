"""Does attention explain? For one output of any model that writes one (a couplet's character, a
French word, a causal LM's next token), the attention it used beside gradient and occlusion
attributions, and how faithful each is (``ui.attribution_views``)."""

import streamlit as st

from attention_atlas.i18n import _
from attention_atlas.models.analysis.attribution import METHODS, SIGNED
from attention_atlas.ui import attribution_views as views
from attention_atlas.ui import cached
from attention_atlas.ui.url_state import Link, section
from attention_atlas.ui.widgets import intro, text_box

K = "attribution_"
TEXT_LIMIT = 2_000
EXAMPLES = {
    "两个黄鹂鸣翠柳": "一行白鹭上青天",
    "I'm home.": "Je suis chez moi.",
}  # example in → output forced

st.title("🔍 " + _("Does attention explain?"))
intro(
    _(
        "Attention shows where a model looked while writing an output; is that **why** it wrote it? "
        "Here one output is scored over the input tokens by the attention the model used, by attention "
        "rollout, by gradients (saliency, input × gradient, integrated gradients) and by occlusion (each token "
        "replaced in turn). Then each method is put to the test: replace its top tokens and see how much "
        "the output's log-probability drops (comprehensiveness), or keep only them (sufficiency). A couplet "
        "is the place to start: its lines align position by position, so the right answer is known."
    )
)

link = Link("attribution")
ids = views.models()
if not ids:
    st.info(_("No model that writes an output is installed."))
    st.stop()
c1, c2 = st.columns([1, 3])
model_id = c1.selectbox(
    _("model"), ids, key=link.choice("model", K + "model", ids, ids[cached.first_index(ids)])
)
info = cached.capabilities(model_id)
text_key = link.text("text", K + "text", TEXT_LIMIT, info.example)
text = text_box(
    c2, _("input (a causal LM: the text before the token to explain)"), text_key, TEXT_LIMIT, info.example
)
forced = EXAMPLES.get(info.example, "")
target_key = link.text("target", K + "target", TEXT_LIMIT, forced)
label = _(
    "output to explain (seq2seq: the whole output, forced; causal LM: the next token; empty: the model's own)"
)
target = text_box(c2, label, target_key, TEXT_LIMIT, forced)  # a causal LM: " Paris" keeps its space
position = c1.number_input(
    _("output position (−1: the last)"),
    min_value=-1,
    max_value=255,
    step=1,
    key=link.number("position", K + "position", -1, 255, -1),
)
steps = c1.slider(_("integrated gradients' steps"), 4, 128, key=link.number("steps", K + "steps", 4, 128, 32))
layer, head = views.head_choice(link, K, model_id, info, c1)

if not text.strip():
    st.info(_("Type an input, e.g. {example}.", example=info.example))
    st.stop()
result = views.attribution(
    model_id,
    text,
    target if target.strip() else None,
    None if position < 0 else int(position),
    steps,
    layer,
    head,
)
if result is None:
    st.stop()
views.headline(result)
views.heatmap_block(result, SIGNED, K + "heat")
shown = [m for m in METHODS if m in result.methods]
method = (
    st.segmented_control(
        _("colour the input by"),
        shown,
        format_func=views.named,
        key=link.choice("method", K + "method", shown, shown[-1]),
    )
    or shown[-1]
)
views.coloured_text(result, method, SIGNED, K + "text_chart")
section(_("Faithfulness: does removing what a method points at change the output?"), "faithfulness")
views.faithfulness_block(result, K + "faith")
st.subheader(_("Do the methods agree?"))
rank = (
    st.segmented_control(
        _("rank agreement"),
        views.RANKS,
        format_func=lambda r: _(views.RANK_NAMES[r]),
        key=link.choice("rank", K + "rank", views.RANKS, views.RANKS[0]),
    )
    or views.RANKS[0]
)
views.agreement_block(result, rank, K + "agree")

link.done()
