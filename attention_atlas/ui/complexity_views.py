"""The comparison page's sections drawn from a measurement (``complexity_run.measured``): memory
as n grows, the paths one layer of each kind opens between tokens, and the tutorial's table
beside the slopes measured here."""

from __future__ import annotations

import streamlit as st

from attention_atlas.models.attention import complexity as cx
from attention_atlas.ui.widgets import chart, fact, plural
from attention_atlas.viz_core.complexity_figures import (
    comparison_table,
    edges_frame,
    path_graphs,
    points_frame,
    scaling_chart,
)

K = "cx_"


def memory_section(result, names: dict[str, str]) -> None:
    """Each layer's memory as n grows, and the sizes skipped to keep a measurement bounded."""
    st.subheader("Memory as n grows")
    chart(
        scaling_chart({names[layer]: result.series(layer, "bytes") for layer in cx.LAYERS}, "memory", "B"),
        points_frame(result.points),
        K + "memory",
        "forward_memory",
    )
    fact(f"Memory {result.memory}.")
    if result.skipped:
        st.info(
            "Skipped to keep each measurement bounded: "
            + "; ".join(f"{names[s.layer]} at n = {s.n:,} ({s.reason})" for s in result.skipped)
        )


def paths_chart(names: dict[str, str], n_graph: int, k: int, rnn: str) -> None:
    """The graphs of which tokens one layer of each kind connects, over ``n_graph`` tokens."""
    unit = {cx.ATTENTION: "layer", cx.CONVOLUTION: "layer", cx.RECURRENT: "step"}
    graphs = {
        f"{names[layer]}: {plural(cx.path_length(layer, n_graph, k), unit[layer])}": cx.graph(
            layer, n_graph, k
        )
        for layer in cx.LAYERS
    }
    chart(path_graphs(graphs, n_graph), edges_frame(graphs), K + "paths", "paths")
    fact(
        f"Token 0 reaches token {n_graph - 1} in one attention layer (every token reads every token), in "
        f"{plural(cx.path_length(cx.CONVOLUTION, n_graph, k), 'convolution layer')} (each output reads "
        f"{plural(cx.reach(k), 'position')} to each side, so a path moves at most that far a layer), and "
        f"through {plural(n_graph, 'step')} of the {rnn}, one after another (x: its inputs, h: its states)."
    )


def table_section(names: dict[str, str], slopes: dict, n_graph: int, k: int) -> None:
    """The tutorial's table of costs, sequential steps and path lengths beside the measured slopes."""
    st.subheader("The tutorial's table beside the measurements")
    st.table(
        comparison_table(
            {
                names[layer]: {
                    "tutorial": cx.TUTORIAL[layer],
                    "slope": slopes[layer],
                    "steps": cx.sequential_steps(layer, n_graph, k),
                    "path": cx.path_length(layer, n_graph, k),
                }
                for layer in cx.LAYERS
            },
            n_graph,
        )
    )
