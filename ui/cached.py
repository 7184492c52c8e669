"""The pages' cached calls into ``models``: one shared adapter per model, results cached as data.

Models are cached as resources (their weights are never mutated, so every session shares
one), results as data keyed by their inputs, so moving a slider never re-runs a model.
"""

from __future__ import annotations

import streamlit as st


@st.cache_resource(show_spinner="Loading the model (once per server)…", max_entries=4)
def adapter(model_id: str):
    """One shared adapter per model; its weights are never mutated, so sessions can share it."""
    from models.registry import load

    return load(model_id)


@st.cache_data(show_spinner="Running the model…", max_entries=64)
def run_model(model_id: str, text: str, target: str | None = None, beam: int = 1):
    """Records for one input, cached: switching layer or head never re-runs the model."""
    options = {"beam": beam} if beam != 1 else {}  # only seq2seq adapters search
    return adapter(model_id).run(text, target=target, **options)


def model_choices(families: tuple[str, ...]) -> list[str]:
    from models.registry import available

    return [m.id for m in available() if m.family in families]


@st.cache_data(show_spinner="Probing for induction heads…", max_entries=8)
def induction(model_id: str, period: int = 20, seed: int = 0):
    """``[layers, heads]`` induction scores of a causal model on a repeated random sequence."""
    from viz_core.stats import induction_scores

    record, offset = adapter(model_id).run_repeated(period, seed)
    return induction_scores(record.weights, period, offset)


@st.cache_data(show_spinner=False, max_entries=32)
def transformer_view(model_id: str, text: str, kind: str, merge: bool, hide: bool) -> dict:
    """Everything the Transformer page derives from one record, computed once per input and option.

    Switching layer or head then only builds one heatmap.
    """
    from viz_core.derive import hide_special, merge_words, special_share
    from viz_core.model_view import model_view
    from viz_core.stats import head_table, offset_profile, rollout
    from viz_core.wire import all_heads, record_id

    record = run_model(model_id, text).records[kind]
    record = merge_words(record) if merge else record
    share = special_share(record)
    record = hide_special(record) if hide else record
    offsets, profile = offset_profile(record.weights)
    rid = record_id(model_id, text, kind, merge, hide)
    return {
        "record": record,
        "record_id": rid,
        "heads": all_heads(record, rid),
        "special_share": share,
        "model_view": model_view(record),
        "table": head_table(record.weights, record.meta.get("key_special")),
        "rollout": None if record.kind == "cross" else rollout(record.weights),  # one token stream only
        "offsets": offsets,
        "profile": profile,
    }


@st.cache_data(show_spinner="Reading the learned position embeddings…")
def learned_positions(model_id: str):
    """``[position, dim]`` learned position embeddings of a model, or None."""
    return adapter(model_id).position_embeddings()


@st.cache_data(show_spinner="Reading queries and keys…", max_entries=32)
def model_queries_keys(model_id: str, text: str, layer: int, head: int):
    """``(queries [n, d], keys [n, d], tokens)`` of one head, as numpy arrays."""
    q, k, tokens = adapter(model_id).queries_keys(text, layer, head)
    return q.numpy(), k.numpy(), tokens
