"""The Transformer page's own tabs: the heads (model view, head view, line view, a fragment),
every head's statistics with a causal model's induction scores, rollout and exact flow, and the
attention by relative offset. Each draws from the page's ``cached.TransformerView``."""

from __future__ import annotations

import numpy as np
import streamlit as st

from attention_atlas.i18n import N_, _
from attention_atlas.ui import cached
from attention_atlas.ui.line_view import line_view_block
from attention_atlas.ui.live_heads import HINT, layers_heads, model_view_chart
from attention_atlas.ui.views import head_stats_block, head_view_block
from attention_atlas.ui.widgets import chart
from attention_atlas.viz_core import wire
from attention_atlas.viz_core.derive import ViewOptions
from attention_atlas.viz_core.export import matrix_frame, record_frame, series_frame, token_matrix_frame
from attention_atlas.viz_core.figures import heatmap, lines, matrix_heatmap
from attention_atlas.viz_core.model_view import in_language

K = "tf_"
FLOW_BUDGET = 6 * 32 * 32  # layers × tokens² that exact flow handles in about a second here
WEIGHTED_HELP = N_(
    "Kobayashi et al. (2020), 'Attention is not only a weight': αᵢⱼ times the norm of key j's value "
    "vector through the head's output projection, ‖αᵢⱼ f(xⱼ)‖, each row rescaled to sum to 1. A large "
    "weight on a token whose value vector is tiny (often [SEP] or the first token) moves little."
)


@st.fragment
def heads_tab(
    view: cached.TransformerView, model_id: str, link, keys: tuple[str, str], head_options: list[str]
) -> None:
    """A fragment: a click or a new layer/head reruns only this, never the model. ``keys`` are the
    layer's and the head's widget keys, declared in the page's link."""
    record, share = view.record, view.special_share
    L, H = record.n_layers, record.n_heads
    layer_key, head_key = keys
    st.subheader(_("Model view: {grid}", grid=layers_heads(L, H)))
    st.caption(_(HINT))
    # the view is cached for every visitor, whatever their language: its words are this run's
    figure = in_language(view.model_view)
    heads = wire.in_language(view.heads)  # every head's title, in this run's language too
    csv = (lambda: record_frame(record), f"{model_id}_every_head", _("every head"))
    model_view_chart(figure, K + "heads", (L, H), (layer_key, head_key), heads=heads, csv=csv)

    st.subheader(_("Head view"))
    c1, c2, c3 = st.columns(3)
    layer = c1.slider(_("layer"), 0, L - 1, key=layer_key)
    head = c2.selectbox(_("head"), head_options, format_func=_, key=head_key)
    link.sync("layer", "head")  # a fragment's rerun: the link follows the head opened
    c3.metric(
        _("attention on special tokens"), f"{share[layer].mean():.0%}", help=_("this layer, heads averaged")
    )
    csv = (K + "head", f"{model_id}_layer{layer}_{head.replace(' ', '_')}")
    head_view_block(record, K + "heads", view.record_id, layer, head, csv)

    st.subheader(_("Line view"))
    line_view_block(record, layer, head, K + "line")


def stats_tab(view: cached.TransformerView, model_id: str) -> None:
    """Every head's statistics and, for a causal model, its induction scores."""
    head_stats_block(view.table, K + "stats", f"{model_id}_head_stats")
    if cached.capabilities(model_id).causal:
        st.markdown(
            _(
                "**Induction heads**: a random token sequence is repeated; a head that, in the "
                "second copy, attends to the token *after* the earlier copy of the current one "
                "can continue the pattern."
            )
        )
        scores = cached.induction(model_id)
        top = np.unravel_index(np.argmax(scores), scores.shape)
        st.caption(
            _(
                "Strongest: layer {layer}, head {head} (score {score:.2f}; 1 = all attention there).",
                layer=top[0],
                head=top[1],
                score=scores[top],
            )
        )
        fig = matrix_heatmap(
            scores, _("head"), _("layer"), colorscale="Blues", zmid=None, label=_("induction")
        )
        frame = matrix_frame(scores, "layer", "head", "induction_score")
        chart(fig, frame, K + "induction", f"{model_id}_induction")


def flow_tab(view: cached.TransformerView, model_id: str, text: str, options: ViewOptions) -> None:
    """Rollout through the layers, and exact attention flow where the input is short enough."""
    record = view.record
    L = record.n_layers
    tokens = (record.query_tokens, record.key_tokens)
    limit = int((FLOW_BUDGET / L) ** 0.5)
    n = len(record.key_tokens)
    if view.rollout is None:
        st.info(_("Rollout and flow follow one stream of tokens through the layers: pick a self-attention."))
    else:
        fig = heatmap(view.rollout, *tokens, title=_("rollout through all layers"), label=_("share"))
        frame = token_matrix_frame(view.rollout, *tokens, "rollout")
        chart(fig, frame, K + "rollout", f"{model_id}_rollout")
        st.caption(
            _(
                "Rollout: heads averaged, the residual connection added (½ identity), multiplied layer by layer. "
                "Exact flow solves {n}² max-flow problems: it is offered up to {limit} tokens for this "
                "{layers}-layer model.",
                n=n,
                limit=limit,
                layers=L,
            )
        )
        if n > limit:
            st.info(
                _(
                    "Exact attention flow is switched off: this input has {n} tokens (limit {limit}).",
                    n=n,
                    limit=limit,
                )
            )
        elif st.toggle(_("compute exact attention flow"), key=K + "flow"):
            flow = cached.exact_flow(model_id, text, options)
            title = _("attention flow (max-flow), each row normalised")
            fig = heatmap(flow, *tokens, title=title, label=_("share"))
            chart(fig, token_matrix_frame(flow, *tokens, "flow"), K + "flowchart", f"{model_id}_flow")


def positions_tab(view: cached.TransformerView, model_id: str) -> None:
    """Each head's mean attention by relative offset, beside the sinusoids' similarity."""
    L, H = view.record.n_layers, view.record.n_heads
    layer = st.slider(_("layer"), 0, L - 1, min(L - 1, L // 2), key=K + "pos_layer")
    offsets, profile = view.offsets, view.profile
    series = {f"head {h}": profile[layer, h] for h in range(H)}  # the CSV's columns, in any language
    series["sinusoidal P·Pᵀ (scaled)"] = view.sinusoid * profile[layer].max()
    names = [_("head {h}", h=h) for h in range(H)] + [_("sinusoidal P·Pᵀ (scaled)")]
    title = _("layer {layer}: attention by relative offset", layer=layer)
    shown = dict(zip(names, series.values(), strict=True))
    fig = lines(offsets, shown, _("offset (key − query)"), _("mean attention"), title)
    chart(fig, series_frame(offsets, series, "offset"), K + "offsets", f"{model_id}_offsets")
    st.caption(
        _(
            "A head that peaks at −1 looks at the previous token; the P·Pᵀ curve is how similar two "
            "sinusoidal positions are at each offset (d = 64), the signal a head can use to find offsets."
        )
    )
