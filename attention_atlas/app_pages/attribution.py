"""Does attention explain? For one output of any model that writes one (a couplet's character, a
French word, a causal LM's next token), the attention it used beside gradient and occlusion
attributions, and how faithful each is (``ui.attribution_views``)."""

import streamlit as st

from attention_atlas.i18n import _
from attention_atlas.ui import attribution_views as views
from attention_atlas.ui import cached
from attention_atlas.ui.url_state import Link
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
position, steps = views.output_settings(link, K, c1)
layer, head = views.head_choice(link, K, model_id, info, c1)

if not text.strip():
    st.info(_("Type an input, e.g. {example}.", example=info.example))
    st.stop()
result = views.attribution(
    cached.Source.of_model(model_id), text, target if target.strip() else None, position, steps, layer, head
)
if result is None:
    st.stop()
views.explained(result, link, K)

link.done()
