"""The Transformer page's neuron view: one head's query vector, each key vector, their elementwise
product, the scores and the weights, for one query token (BertViz's third view, for every model
that hands over its queries and keys: ``models.neuron``; numbers and figure: ``viz_core.neuron``).
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from attention_atlas.ui import cached
from attention_atlas.ui.compare import pill_labels
from attention_atlas.ui.widgets import chart, plain
from attention_atlas.viz_core.neuron import HeadVectors, neuron
from attention_atlas.viz_core.neuron_figure import neuron_figure, neuron_frame
from attention_atlas.viz_core.tokens import clean_token

N = "tf_neuron_"  # widget keys (the page's prefix is tf_)


# A resource, not data: every layer's float32 queries and keys (SmolLM2 at 500 tokens: ~40 MB) are
# shared and never pickled on each rerun; a click on another query or head only slices them.
@st.cache_resource(show_spinner=False, max_entries=4)
def vectors(model_id: str, text: str, kind: str) -> HeadVectors:
    from attention_atlas.models.neuron import head_vectors

    cached.janitor().on_quiet(vectors.clear)
    with cached.lane_for(model_id, text).turn():
        return head_vectors(cached.adapter(model_id), text, kind)


def query_choices(hv: HeadVectors) -> list[int]:
    """The query positions offered: every token that is not a special token."""
    special = hv.key_special if hv.query_tokens == hv.key_tokens else [False] * len(hv.query_tokens)
    return [p for p, s in enumerate(special) if not s]


def neuron_tab(model_id: str, text: str, kind: str) -> None:
    """Pick a layer, a head and a query token; see how q and each k make the head's weights."""
    if not cached.capabilities(model_id).queries_keys:
        able = ", ".join(cached.model_choices(queries_keys=True))
        st.info(
            f"The neuron view needs a model's queries and keys; {model_id} does not hand them over ({able} do)."
        )
        return
    try:
        with st.spinner("Capturing every layer's queries and keys…"):
            hv = vectors(model_id, text, kind)
    except ValueError as err:
        st.warning(f"The neuron view cannot read this input: {plain(err)}")
        return
    positions = query_choices(hv)
    if not positions:
        st.info("Every token of this input is a special token: type some words to pick a query from.")
        return
    c1, c2 = st.columns(2)
    layer = c1.slider("layer", 0, hv.n_layers - 1, 0, key=N + "layer")
    head = c2.selectbox("head", list(range(hv.n_heads)), key=N + "head")
    labels = pill_labels(hv.query_tokens, positions)
    query = st.pills("query token (click one)", positions, format_func=labels.get, key=N + f"query_{kind}")
    if query is None:
        st.info("Click a query token above to see how its weights are made.")
        return
    _draw(model_id, text, kind, hv, (layer, head, query))


def _draw(model_id: str, text: str, kind: str, hv: HeadVectors, where: tuple[int, int, int]) -> None:
    layer, head, query = where
    n = neuron(hv, layer, head, query)
    label = hv.query_tokens[query]
    st.subheader(f"Layer {layer}, head {head}: query {query} · {plain(clean_token(label))}")
    fig = neuron_figure(n, hv.key_tokens, label)
    name = f"{model_id}_neuron_{kind}_layer{layer}_head{head}_query{query}"
    chart(fig, neuron_frame(n, hv.key_tokens), N + "chart", name)
    record = cached.run_model(model_id, text).records[kind]
    gap = float(np.abs(n.weights - record.weights[layer, head, query]).max())
    q_heads, k_heads = hv.queries[layer].shape[0], hv.keys[layer].shape[0]
    shared = (
        f" {q_heads} query heads share {k_heads} key heads: head {head} reads key head {head // (q_heads // k_heads)}."
        if k_heads < q_heads
        else ""
    )
    hidden = "" if n.seen.all() else " Keys after the query are masked (causal): no score, weight 0."
    st.caption(
        f"Each row of q ∘ K sums to q·k; the score is q·k × {n.scaling:.4g} (1/√{n.query.shape[0]}), the weight "
        f"the softmax of the scores over the keys the query sees.{hidden}{shared} Red: positive, blue: negative "
        f"(each panel its own range; hover for values). These weights differ from the head's record by at most "
        f"{gap:.1e}. Tokens as the model reads them (word pieces not merged, special tokens kept)."
    )
