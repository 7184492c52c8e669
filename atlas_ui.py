"""Streamlit glue shared by the pages: cached calls, the device line, chart + download.

Kept apart from ``viz_core`` (no streamlit there) and ``models`` (no streamlit there).
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from viz_core import to_csv

PLOTLY_CONFIG = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 2}}


@st.cache_resource(show_spinner=False)
def _device_line() -> tuple[str, str | None]:
    from models.device import DeviceError, describe, pick_device

    try:
        return describe(pick_device()), None
    except DeviceError as err:
        return "CPU (fallback)", str(err)


def sidebar_device() -> None:
    label, problem = _device_line()
    st.sidebar.markdown(f"**Device:** {label}")
    if problem:
        st.sidebar.warning(problem)


def chart(fig: go.Figure, frame: pd.DataFrame, key: str, filename: str) -> None:
    """A Plotly chart with a CSV download of the numbers behind it underneath."""
    st.plotly_chart(fig, width="stretch", config=PLOTLY_CONFIG, key=f"{key}_chart")
    csv_button(frame, key, filename)


def csv_button(frame: pd.DataFrame, key: str, filename: str) -> None:
    """A download of ``frame`` as ``filename``.csv (the numbers behind a chart)."""
    st.download_button(
        f"⬇ CSV: {filename}",
        to_csv(frame),
        file_name=f"{filename}.csv",
        mime="text/csv",
        key=f"{key}_csv",
        on_click="ignore",
    )


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
    from live_heads import all_heads, record_id
    from viz_core.derive import hide_special, merge_words, special_share
    from viz_core.model_view import model_view
    from viz_core.stats import head_table, offset_profile, rollout

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
