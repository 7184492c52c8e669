"""Streamlit pieces every page shares: the device line in the sidebar, a chart with its CSV download.

Kept apart from ``viz_core`` (no streamlit there) and ``models`` (no streamlit there).
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from viz_core.export import to_csv

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


def csv_button(frame: pd.DataFrame, key: str, filename: str, label: str | None = None) -> None:
    """A download of ``frame`` as ``filename``.csv (the numbers behind a chart), named ``label``."""
    st.download_button(
        f"⬇ CSV: {label or filename}",
        to_csv(frame),
        file_name=f"{filename}.csv",
        mime="text/csv",
        key=f"{key}_csv",
        on_click="ignore",
    )
