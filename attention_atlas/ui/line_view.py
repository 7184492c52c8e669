"""BertViz's line view on a page: ``viz_core.line_view`` builds the links, ``line_view.js`` draws them."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from attention_atlas.i18n import _
from attention_atlas.ui.widgets import csv_button, plain, presenting
from attention_atlas.viz_core.export import record_frame
from attention_atlas.viz_core.layout import PROJECTOR_FONT
from attention_atlas.viz_core.line_view import COLOURS, THRESHOLD, line_data
from attention_atlas.viz_core.record import AttentionRecord

HERE = Path(__file__).resolve().parent
_component = st.components.v2.component(
    "atlas_line_view", js=(HERE / "line_view.js").read_text(encoding="utf-8"), isolate_styles=False
)


def line_view_block(record: AttentionRecord, layer: int, open_head: str, key: str) -> None:
    """The line view of ``layer``: the open head (a number; "average" and the like open none) and any
    heads picked to overlay it, each in its own colour; hover a token to see only its lines."""
    opened = [int(open_head)] if open_head.isdigit() else []
    extra = st.multiselect(
        _("overlay heads"),
        list(range(record.n_heads)),
        key=key + "_heads",
        max_selections=len(COLOURS) - 1,  # fixed: a changing limit would make a new, empty widget
        help=_("Each head in its own colour, on top of the open head."),
    )
    heads = list(dict.fromkeys(opened + extra))[: len(COLOURS)]
    if not heads:
        st.caption(_("Pick a head above, or heads to overlay, to see their lines."))
        return
    try:
        data = line_data(record, layer, heads)
    except ValueError as err:
        st.info(plain(err))
        return
    st.caption(
        _(
            "Layer {layer}, one colour per head. Left: queries (the token attending); right: keys. A line's "
            "opacity is its weight (below {threshold} not drawn). Hover a token to see only its lines.",
            layer=layer,
            threshold=THRESHOLD,
        )
    )
    if presenting():  # the back of a classroom reads the tokens at the figures' projector size
        data = {**data, "font": PROJECTOR_FONT}
    _component(data=data, key=key + "_lines")
    drawn = "_".join(map(str, heads))
    csv_button(
        lambda: record_frame(record).query(f"layer == {layer} and head in {heads}"),
        key + "_lines",
        f"{record.model_id}_layer{layer}_heads_{drawn}",
    )
