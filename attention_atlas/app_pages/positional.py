"""Sinusoidal positional encoding: curves, the matrix, its similarity, and the binary analogy."""

import numpy as np
import streamlit as st

from attention_atlas.i18n import _
from attention_atlas.ui.cached import first_index, model_choices, positional_tables
from attention_atlas.ui.positional_views import learned_beside
from attention_atlas.ui.url_state import Link, section
from attention_atlas.ui.widgets import chart, intro
from attention_atlas.viz_core.export import matrix_frame, series_frame
from attention_atlas.viz_core.figures import matrix_heatmap, positional_curves

K = "pe_"
st.title(_("🌊 Positional encoding"))
intro(
    _(
        "Self-attention sees a set, not a sequence. The Transformer adds a fixed matrix **P** to the "
        "inputs: row *i* is position *i*, and column 2j holds sin(i / 10000^(2j/d)), column 2j+1 the cosine."
    )
)
link = Link("positional")
DIMS = list(range(4, 513, 4))

c1, c2 = st.columns(2)
length = c1.slider(_("positions (rows)"), 8, 512, key=link.number("len", K + "len", 8, 512, 60))
dim = c2.select_slider(
    _("encoding size d (columns)"), DIMS, key=link.choice("d", K + "dim", DIMS, 32, "is not on offer")
)
default_cols = [c for c in (6, 7, 8, 9) if c < dim]
columns = st.multiselect(
    _("columns to plot"), list(range(dim)), key=link.choices("cols", K + "cols", range(dim), default_cols)
)

tables = positional_tables(length, dim)
P = tables["P"]

section(_("Columns of P against position"), "columns-of-p")
if not columns:
    st.info(_("Pick at least one column to plot."))
else:
    chart(
        positional_curves(P, columns),
        series_frame(np.arange(length), {f"col {c}": P[:, c] for c in columns}, "position"),
        K + "curves",
        "positional_columns",
    )
    st.caption(
        _("Low columns oscillate fast, high columns slowly: each column is a clock of its own period.")
    )

st.subheader(_("The whole matrix P"))
chart(
    matrix_heatmap(P, _("column (encoding dimension)"), _("position"), label="P"),
    matrix_frame(P, "position", "column", "P"),
    K + "matrix",
    "positional_matrix",
)

left, right = st.columns(2)
with left:
    st.subheader(_("Similarity P·Pᵀ"))
    chart(
        matrix_heatmap(
            tables["similarity"], _("position"), _("position"), colorscale="Viridis", zmid=None, label="P·Pᵀ"
        ),
        matrix_frame(tables["similarity"], "position_a", "position_b", "dot"),
        K + "similarity",
        "positional_similarity",
    )
    st.caption(
        _(
            "Each diagonal band has one colour: the dot product of two positions depends only on "
            "their offset, so attention can learn *relative* position from P."
        )
    )
with right:
    st.subheader(_("The binary-counter analogy"))
    bits = tables["binary"]
    chart(
        matrix_heatmap(
            bits, _("bit (0 = lowest)"), _("number"), colorscale="Greys", zmid=None, label=_("bit")
        ),
        matrix_frame(bits, "number", "bit", "value"),
        K + "binary",
        "binary_counter",
    )
    st.caption(
        _(
            "Counting in binary, the lowest bit flips every step, the next every 2 steps, then every 4: "
            "higher bits alternate more slowly, just as higher columns of P do — but P is continuous."
        )
    )

learners = model_choices(learned_positions=True)
if not learners:
    link.done()
    st.stop()
model_id = learners[first_index(learners)]
st.subheader(_("Learned positions: {model} beside the sinusoids", model=model_id))
learned_on = st.toggle(
    _("compare with {model}'s learned position embeddings", model=model_id),
    key=link.flag("learned", K + "learned"),
)
link.done()
if learned_on:
    learned_beside(model_id, P, length)
