"""The comparison page's sections drawn from a measurement (``complexity_run.measured``): memory
as n grows, the paths one layer of each kind opens between tokens, and the tutorial's table
beside the slopes measured here."""

from __future__ import annotations

import streamlit as st

from attention_atlas.i18n import N_, _, ngettext
from attention_atlas.models.attention import complexity as cx
from attention_atlas.ui.widgets import chart, fact
from attention_atlas.viz_core.complexity_figures import (
    comparison_table,
    edges_frame,
    path_graphs,
    points_frame,
    scaling_chart,
)

K = "cx_"
# How ``complexity.memory_method`` words the way the bytes were obtained, as the catalog knows it.
MEMORY_METHODS = (
    N_(
        "measured: the CUDA allocator's peak over one forward (max_memory_allocated), less what was "
        "allocated before"
    ),
    N_(
        "counted from shapes: the bytes of the tensors each layer's computation writes (float32), not measured"
    ),
)


def memory_section(result, names: dict[str, str]) -> None:
    """Each layer's memory as n grows, and the sizes skipped to keep a measurement bounded."""
    st.subheader(_("Memory as n grows"))
    chart(
        scaling_chart({names[layer]: result.series(layer, "bytes") for layer in cx.LAYERS}, _("memory"), "B"),
        points_frame(result.points),
        K + "memory",
        "forward_memory",
    )
    fact(_("Memory {method}.", method=_(result.memory)))
    if result.skipped:
        skipped = [
            _("{layer} at n = {n:,} ({reason})", layer=names[s.layer], n=s.n, reason=s.reason)
            for s in result.skipped
        ]
        st.info(_("Skipped to keep each measurement bounded: {skipped}", skipped=_("; ").join(skipped)))


def paths_chart(names: dict[str, str], n_graph: int, k: int, rnn: str) -> None:
    """The graphs of which tokens one layer of each kind connects, over ``n_graph`` tokens."""

    def length(layer: str) -> str:
        n = cx.path_length(layer, n_graph, k)
        if layer == cx.RECURRENT:
            return ngettext("{n:,} step", "{n:,} steps", n, n=n)
        return ngettext("{n:,} layer", "{n:,} layers", n, n=n)

    graphs = {
        _("{layer}: {length}", layer=names[layer], length=length(layer)): cx.graph(layer, n_graph, k)
        for layer in cx.LAYERS
    }
    chart(path_graphs(graphs, n_graph), edges_frame(graphs), K + "paths", "paths")
    convolutions = cx.path_length(cx.CONVOLUTION, n_graph, k)
    fact(
        _(
            "Token 0 reaches token {last} in one attention layer (every token reads every token), in "
            "{convolutions} (each output reads {positions} to each side, so a path moves at most that far "
            "a layer), and through {steps} of the {rnn}, one after another (x: its inputs, h: its states).",
            last=n_graph - 1,
            convolutions=ngettext(
                "{n:,} convolution layer", "{n:,} convolution layers", convolutions, n=convolutions
            ),
            positions=ngettext("{n:,} position", "{n:,} positions", cx.reach(k), n=cx.reach(k)),
            steps=ngettext("{n:,} step", "{n:,} steps", n_graph, n=n_graph),
            rnn=rnn,
        )
    )


def table_section(names: dict[str, str], slopes: dict, n_graph: int, k: int) -> None:
    """The tutorial's table of costs, sequential steps and path lengths beside the measured slopes."""
    st.subheader(_("The tutorial's table beside the measurements"))
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
