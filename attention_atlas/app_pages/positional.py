"""Sinusoidal positional encoding: curves, the matrix, its similarity, and the binary analogy."""

import numpy as np
import streamlit as st

from attention_atlas.ui.cached import first_index, learned_positions, model_choices, positional_tables
from attention_atlas.ui.url_state import Link, section
from attention_atlas.ui.widgets import chart, intro, plain
from attention_atlas.viz_core.export import matrix_frame, panels_frame, series_frame
from attention_atlas.viz_core.figures import heatmap_row, matrix_heatmap, positional_curves
from attention_atlas.viz_core.stats import cosine_similarity

K = "pe_"
st.title("🌊 Positional encoding")
intro(
    "Self-attention sees a set, not a sequence. The Transformer adds a fixed matrix **P** to the "
    "inputs: row *i* is position *i*, and column 2j holds sin(i / 10000^(2j/d)), column 2j+1 the cosine."
)
link = Link("positional")
DIMS = list(range(4, 513, 4))

c1, c2 = st.columns(2)
length = c1.slider("positions (rows)", 8, 512, key=link.number("len", K + "len", 8, 512, 60))
dim = c2.select_slider(
    "encoding size d (columns)", DIMS, key=link.choice("d", K + "dim", DIMS, 32, "is not on offer")
)
default_cols = [c for c in (6, 7, 8, 9) if c < dim]
columns = st.multiselect(
    "columns to plot", list(range(dim)), key=link.choices("cols", K + "cols", range(dim), default_cols)
)

tables = positional_tables(length, dim)
P = tables["P"]

section("Columns of P against position", "columns-of-p")
if not columns:
    st.info("Pick at least one column to plot.")
else:
    chart(
        positional_curves(P, columns),
        series_frame(np.arange(length), {f"col {c}": P[:, c] for c in columns}, "position"),
        K + "curves",
        "positional_columns",
    )
    st.caption("Low columns oscillate fast, high columns slowly: each column is a clock of its own period.")

st.subheader("The whole matrix P")
chart(
    matrix_heatmap(P, "column (encoding dimension)", "position", label="P"),
    matrix_frame(P, "position", "column", "P"),
    K + "matrix",
    "positional_matrix",
)

left, right = st.columns(2)
with left:
    st.subheader("Similarity P·Pᵀ")
    chart(
        matrix_heatmap(
            tables["similarity"], "position", "position", colorscale="Viridis", zmid=None, label="P·Pᵀ"
        ),
        matrix_frame(tables["similarity"], "position_a", "position_b", "dot"),
        K + "similarity",
        "positional_similarity",
    )
    st.caption(
        "Each diagonal band has one colour: the dot product of two positions depends only on "
        "their offset, so attention can learn *relative* position from P."
    )
with right:
    st.subheader("The binary-counter analogy")
    bits = tables["binary"]
    chart(
        matrix_heatmap(bits, "bit (0 = lowest)", "number", colorscale="Greys", zmid=None, label="bit"),
        matrix_frame(bits, "number", "bit", "value"),
        K + "binary",
        "binary_counter",
    )
    st.caption(
        "Counting in binary, the lowest bit flips every step, the next every 2 steps, then every 4: "
        "higher bits alternate more slowly, just as higher columns of P do — but P is continuous."
    )

learners = model_choices(learned_positions=True)
if not learners:
    link.done()
    st.stop()
model_id = learners[first_index(learners)]
st.subheader(f"Learned positions: {model_id} beside the sinusoids")
learned_on = st.toggle(
    f"compare with {model_id}'s learned position embeddings", key=link.flag("learned", K + "learned")
)
link.done()
if learned_on:
    try:
        learned = learned_positions(model_id)
    except (OSError, KeyError) as err:
        st.warning(f"{model_id} is not available here: {plain(err)}")
    else:
        n = min(length, learned.shape[0])
        panels = {
            "sinusoidal (cosine similarity)": cosine_similarity(P[:n]),
            f"{model_id}, learned ({learned.shape[1]} dims)": cosine_similarity(learned[:n]),
        }
        pos = [str(i) for i in range(n)]
        chart(
            heatmap_row(panels, pos, pos, zmin=-1, zmax=1, colorscale="RdBu_r", label="cosine"),
            panels_frame(panels, "position_a", "position_b"),  # every cell of both matrices
            K + "learned_sim",
            "position_similarity",
        )
        st.caption(
            "Both put near positions close together; the learned table was never told to, it found it. "
            "Its band is uneven and fades at positions rarely seen in training."
        )
