"""Drawing blocks several pages share: an alignment heatmap, a head view, each with its CSV; notices."""

from __future__ import annotations

import streamlit as st

from ui.live_heads import head_view_chart
from ui.widgets import chart, csv_button
from viz_core.export import matrix_frame, record_frame
from viz_core.figures import head_matrix, head_view, heatmap, heatmap_row, larger_ticks
from viz_core.record import AttentionRecord


def alignment_figure(rec: AttentionRecord, font: int, axes: dict, title: str = ""):
    """A one-head record (rows: what was written, columns: what was read) with large tick labels."""
    return larger_ticks(heatmap(rec.head(), rec.query_tokens, rec.key_tokens, title=title, **axes), font)


def alignment_chart(rec: AttentionRecord, font: int, axes: dict, key: str, filename: str, title: str = ""):
    """``alignment_figure`` with the CSV download of its weights underneath."""
    chart(alignment_figure(rec, font, axes, title), record_frame(rec), key, filename)


def show_notices(notices, warn: bool = False) -> None:
    """Each distinct notice once: as a warning, or as an ℹ️ caption."""
    for notice in dict.fromkeys(notices):
        if warn:
            st.warning(notice)
        else:
            st.caption(f"ℹ️ {notice}")


def head_view_block(record: AttentionRecord, key: str, rid: str, layer: int, head: str, csv: tuple[str, str]):
    """The head view of ``record`` at ``layer`` (one head, ``"average"``, or ``"all side by side"``),
    drawn by ``ui.live_heads`` in group ``key``, and the download (``csv`` = key, file name) of its weights."""
    if head == "all side by side":
        panels = {f"head {h}": record.head(layer, h) for h in range(record.n_heads)}
        fig = heatmap_row(panels, record.query_tokens, record.key_tokens, zmax=1.0)
        head_view_chart(fig, key, rid, layer, head, single=False)
        frame = record_frame(record).query(f"layer == {layer}")
    else:
        head_view_chart(head_view(record, layer, head), key, rid, layer, head, single=True)
        frame = matrix_frame(head_matrix(record, layer, head), "query_pos", "key_pos", "weight")
    csv_button(frame, *csv)
