"""The neuron view: one head's query vector, each key vector, their elementwise product, the
scores and the weights, for one query token (BertViz's third view, for every model that hands over
its queries and keys: ``models.analysis.neuron``; numbers and figure: ``viz_core.neuron``). A tab of the
Transformer page for bundled models, a folded panel of the Checkpoint inspector for uploads.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from attention_atlas.i18n import _
from attention_atlas.ui import cached
from attention_atlas.ui.compare import piece_words, pill_labels
from attention_atlas.ui.widgets import chart, plain
from attention_atlas.viz_core.neuron import HeadVectors, neuron
from attention_atlas.viz_core.neuron_figure import neuron_figure, neuron_frame
from attention_atlas.viz_core.tokens import clean_token


# A resource, not data: every layer's float32 queries and keys (SmolLM2 at 500 tokens: ~40 MB) are
# shared and never pickled on each rerun; a click on another query or head only slices them.
# ``key`` names the model: a bundled model's id, or an upload's key (its SHA-256 and answers).
@st.cache_resource(show_spinner=False, max_entries=4)
def vectors(key: str, _adapter, text: str, kind: str) -> HeadVectors:
    from attention_atlas.models.analysis.neuron import head_vectors

    cached.janitor().on_quiet(vectors.clear)
    with cached.lane_for(key, text).turn():
        return head_vectors(_adapter, text, kind)


def query_choices(hv: HeadVectors) -> list[int]:
    """The query positions offered: every token that is not a special token."""
    special = hv.key_special if hv.query_tokens == hv.key_tokens else [False] * len(hv.query_tokens)
    return [p for p, s in enumerate(special) if not s]


def neuron_tab(model_id: str, text: str, kind: str) -> None:
    """The Transformer page's tab: the neuron view of a bundled model."""
    if not cached.capabilities(model_id).queries_keys:
        able = ", ".join(cached.model_choices(queries_keys=True))
        st.info(
            _(
                "The neuron view needs a model's queries and keys; {model} does not hand them over ({able} do).",
                model=model_id,
                able=able,
            )
        )
        return
    record = cached.run_model(model_id, text).records[kind]
    neuron_view(cached.Source.of_model(model_id, "tf_neuron_"), text, kind, record)


def upload_neuron(key: str, name: str, adapter, text: str, kind: str, record) -> None:
    """The Checkpoint inspector's neuron view of an upload (``key``: its cache key, ``name``: its
    model id), folded until opened (it runs the model again); nothing for an upload that has no
    queries and keys to show (an RNN)."""
    from attention_atlas.models.analysis.neuron import supports

    if supports(adapter):
        return
    panel = st.expander(
        _("Neuron view: how q and k make one head's weights"), key="ckpt_neuron", on_change="rerun"
    )
    if panel.open:
        with panel:
            neuron_view(cached.Source.of_upload(key, name, adapter, "ckpt_neuron_"), text, kind, record)


def neuron_view(source: cached.Source, text: str, kind: str, record) -> None:
    """Pick a layer, a head and a query token; see how q and each k make the head's weights
    (``record``: the model's attention record of this kind, to say how close the view comes)."""
    try:
        with st.spinner(_("Capturing every layer's queries and keys…")):
            hv = vectors(source.key, source.adapter, text, kind)
    except ValueError as err:
        st.warning(_("The neuron view cannot read this input: {error}", error=plain(err)))
        return
    positions = query_choices(hv)
    if not positions:
        st.info(_("Every token of this input is a special token: type some words to pick a query from."))
        return
    c1, c2 = st.columns(2)
    n = source.prefix
    layer = c1.slider(_("layer"), 0, hv.n_layers - 1, 0, key=n + "layer")
    head = c2.selectbox(_("head"), list(range(hv.n_heads)), key=n + "head")
    ids = record.meta.get("query_word_ids") if record.query_tokens == hv.query_tokens else None
    words = piece_words(hv.query_tokens, ids)  # a piece is labelled with its word (issue 40 item 16)
    labels = pill_labels(hv.query_tokens, positions, words)
    query = st.pills(_("query token (click one)"), positions, format_func=labels.get, key=n + f"query_{kind}")
    if query is None:
        st.info(_("Click a query token above to see how its weights are made."))
        return
    _draw(source, kind, hv, record, (layer, head, query))


def _draw(source: cached.Source, kind: str, hv: HeadVectors, record, where: tuple[int, int, int]) -> None:
    layer, head, query = where
    n = neuron(hv, layer, head, query)
    label = hv.query_tokens[query]
    st.subheader(
        _(
            "Layer {layer}, head {head}: query {query} · {token}",
            layer=layer,
            head=head,
            query=query,
            token=plain(clean_token(label)),
        )
    )
    fig = neuron_figure(n, hv.key_tokens, label)
    name = f"{source.name}_neuron_{kind}_layer{layer}_head{head}_query{query}"
    chart(fig, neuron_frame(n, hv.key_tokens), source.prefix + "chart", name)
    gap = float(np.abs(n.weights - record.weights[layer, head, query]).max())
    q_heads, k_heads = hv.queries[layer].shape[0], hv.keys[layer].shape[0]
    shared = (
        _(
            " {q_heads} query heads share {k_heads} key heads: head {head} reads key head {k_head}.",
            q_heads=q_heads,
            k_heads=k_heads,
            head=head,
            k_head=head // (q_heads // k_heads),
        )
        if k_heads < q_heads
        else ""
    )
    hidden = "" if n.seen.all() else _(" Keys after the query are masked (causal): no score, weight 0.")
    st.caption(
        _(
            "Each row of q ∘ K sums to q·k; the score is q·k × {scaling:.4g} (1/√{d}), the weight "
            "the softmax of the scores over the keys the query sees.{hidden}{shared} Red: positive, blue: negative "
            "(each panel its own range; hover for values). These weights differ from the head's record by at most "
            "{gap:.1e}. Tokens as the model reads them (word pieces not merged, special tokens kept).",
            scaling=n.scaling,
            d=n.query.shape[0],
            hidden=hidden,
            shared=shared,
            gap=gap,
        )
    )
