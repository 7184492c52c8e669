"""Figures of the self-attention / convolution / recurrent comparison (``models.attention.complexity``).

- ``scaling_chart``: time or memory against n on log-log axes, one line per layer (named with its
  fitted slope beside the tutorial's exponent), and dashed verticals at the crossovers (the
  tutorial's n = d, the measured one).
- ``path_graphs``: for each layer, which positions one layer connects (every layer alike, stacked
  as deep as the path needs), with the shortest path from token 0 to token n−1 drawn over them.
- ``points_frame`` and ``edges_frame``: the numbers behind them, for the CSV downloads.

Plain numbers and duck-typed objects in (a graph has ``nodes``, ``edges``, ``path``, ``rows``),
``go.Figure`` out; nothing here imports torch or streamlit.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable, Sequence

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from attention_atlas.i18n import _
from attention_atlas.viz_core.figures import _base_layout
from attention_atlas.viz_core.layout import OKABE_ITO

PATH_COLOUR = OKABE_ITO[3]  # vermillion: readable beside grey with every common colour-vision deficiency
EDGE_COLOUR = "rgba(120,120,120,0.35)"
NODE_COLOUR = "#444444"


@dataclasses.dataclass(frozen=True)
class Mark:
    """A dashed vertical at ``n`` named ``label`` in the legend (a crossover)."""

    n: float
    label: str
    dash: str = "dash"


def size_ticks(sizes: Iterable[int], most: int = 6) -> list[int]:
    """The sizes to label on the n axis: every one, or every k-th (the largest kept) so that at most
    ``most`` are (their labels must fit a projector's width)."""
    ordered = sorted(set(sizes))
    step = -(-len(ordered) // most) if ordered else 1
    return ordered[::-1][::step][::-1]


def scaling_chart(
    series: dict[str, tuple[Sequence[float], Sequence[float]]],
    y_title: str,
    unit: str,
    marks: Iterable[Mark] = (),
    title: str = "",
) -> go.Figure:
    """One line with markers per ``series`` name: (sizes, values in ``unit``), on log-log axes (the
    n axis labelled at the sizes, the other at each power of ten, SI prefixes: 10ms, 1MB); ``marks``
    as verticals spanning the values."""
    fig = go.Figure()
    values = [v for __, ys in series.values() for v in ys]
    for name, (ns, ys) in series.items():
        fig.add_trace(
            go.Scatter(
                x=list(ns),  # a few numbers: plain lists, readable in the figure's JSON
                y=list(ys),
                mode="lines+markers",
                name=name,
                hovertemplate=f"{name}<br>n %{{x:,}}<br>{y_title} %{{y:.3s}}{unit}<extra></extra>",
            )
        )
    low, high = (min(values) / 1.5, max(values) * 1.5) if values else (1e-6, 1.0)
    for mark in marks:
        fig.add_trace(
            go.Scatter(
                x=[mark.n, mark.n],
                y=[low, high],
                mode="lines",
                name=mark.label,
                line=dict(dash=mark.dash, width=2, color="#555555" if mark.dash == "dash" else PATH_COLOUR),
                hovertemplate=f"{mark.label}<extra></extra>",
            )
        )
    ticks = size_ticks(n for ns, __ in series.values() for n in ns)
    fig.update_xaxes(
        title=_("sequence length n"), type="log", tickvals=ticks, ticktext=[f"{n:,}" for n in ticks]
    )
    fig.update_yaxes(title=y_title, type="log", dtick=1, exponentformat="SI", ticksuffix=unit)
    fig.update_layout(legend=dict(orientation="h", yanchor="top", y=-0.2, x=0))
    _base_layout(fig, title, height=560)
    return fig.update_layout(margin_b=10)


def _segments(graph, pairs: Iterable[tuple[int, int]]) -> tuple[list, list]:
    """x and y of ``pairs`` of node indices as one line trace's points, None between segments."""
    xs, ys = [], []
    for a, b in pairs:
        (xa, ya), (xb, yb) = graph.nodes[a], graph.nodes[b]
        xs += [xa, xb, None]
        ys += [ya, yb, None]
    return xs, ys


def row_label(row: str) -> str:
    """A graph's row as the figure names it, in the language in force: ``input``, ``layer 2``, or
    the recurrent layer's ``x`` and ``h`` as they are."""
    if row == "input":
        return _("input")
    number = row.removeprefix("layer ")
    return _("layer {i}", i=number) if number != row and number.isdigit() else row


def _graph_traces(graph) -> list[go.Scatter]:
    edge_x, edge_y = _segments(graph, graph.edges)
    path = graph.path
    path_x, path_y = _segments(graph, itertools.pairwise(path))
    node_x, node_y = zip(*graph.nodes, strict=True)
    ends = [graph.nodes[path[0]], graph.nodes[path[-1]]]
    return [
        go.Scatter(x=edge_x, y=edge_y, mode="lines", line=dict(color=EDGE_COLOUR, width=1), hoverinfo="skip"),
        go.Scatter(x=path_x, y=path_y, mode="lines", line=dict(color=PATH_COLOUR, width=4), hoverinfo="skip"),
        go.Scatter(
            x=node_x,
            y=node_y,
            mode="markers",
            marker=dict(color=NODE_COLOUR, size=9),
            text=[row_label(graph.rows[row]) for __, row in graph.nodes],  # hover: the token and its row
            hovertemplate=_("token %{x}<br>%{text}<extra></extra>"),
        ),
        go.Scatter(
            x=[p[0] for p in ends],
            y=[p[1] for p in ends],
            mode="markers",
            marker=dict(color=PATH_COLOUR, size=15, line=dict(color="white", width=2)),
            hoverinfo="skip",
        ),
    ]


def path_graphs(graphs: dict[str, object], n: int) -> go.Figure:
    """One panel per graph, side by side: tokens 0 … n−1 across, the rows (input, layers; or x and
    h) upwards, every connection in grey, the shortest path from token 0 to token n−1 in colour.
    Each panel names its lowest and highest rows and its first and last tokens, no more, so the
    labels fit between the panels on a projector."""
    fig = make_subplots(rows=1, cols=len(graphs), subplot_titles=list(graphs), horizontal_spacing=0.15)
    depth = max(len(g.rows) for g in graphs.values())
    for col, graph in enumerate(graphs.values(), start=1):
        for trace in _graph_traces(graph):
            fig.add_trace(trace, row=1, col=col)
        top = len(graph.rows) - 1
        fig.update_yaxes(
            row=1,
            col=col,
            tickvals=[0, top],
            ticktext=[row_label(graph.rows[0]), row_label(graph.rows[top])],
            range=[-0.5, top + 0.5],
        )
    ends = [0, n - 1] if n > 1 else [0]
    fig.update_xaxes(title=_("token"), tickvals=ends, range=[-0.6, n - 0.4])
    fig.update_xaxes(showgrid=False, zeroline=False)
    fig.update_yaxes(showgrid=False, zeroline=False)
    fig.update_layout(showlegend=False)
    _base_layout(fig, "", height=min(640, 200 + 38 * depth))
    return fig.update_layout(margin_t=60)


def points_frame(points: Iterable) -> pd.DataFrame:
    """One row per measured point (a dataclass: layer, n, seconds, …)."""
    return pd.DataFrame([dataclasses.asdict(p) for p in points])


def edges_frame(graphs: dict[str, object]) -> pd.DataFrame:
    """One row per connection of every graph: from and to (position, row), and whether it is on
    the shortest path."""
    rows = []
    for name, g in graphs.items():
        on_path = set(itertools.pairwise(g.path))
        for a, b in g.edges:
            (pa, ra), (pb, rb) = g.nodes[a], g.nodes[b]
            rows.append(
                {
                    "layer": name,
                    "from_token": pa,
                    "from_row": g.rows[ra],
                    "to_token": pb,
                    "to_row": g.rows[rb],
                    "on_shortest_path": (a, b) in on_path,
                }
            )
    return pd.DataFrame(rows)


def comparison_table(columns: dict[str, dict], n: int) -> pd.DataFrame:
    """The tutorial's table beside what was measured and counted, one column per layer. Each
    ``columns`` entry: ``tutorial`` (``cost``, ``n_exponent``, ``sequential``, ``path``), ``slope``
    (measured, or None), ``steps`` and ``path`` (counted on the graphs at ``n`` tokens)."""
    rows = {
        _("cost (tutorial)"): lambda c: c["tutorial"].cost,
        _("exponent of n (tutorial)"): lambda c: str(c["tutorial"].n_exponent),
        _("fitted slope (measured)"): lambda c: "—" if c["slope"] is None else f"{c['slope']:.2f}",
        _("sequential operations (tutorial)"): lambda c: c["tutorial"].sequential,
        _("sequential steps at n = {n} (counted)", n=n): lambda c: f"{c['steps']:,}",
        _("maximum path length (tutorial)"): lambda c: c["tutorial"].path,
        _("path length at n = {n} (counted)", n=n): lambda c: f"{c['path']:,}",
    }
    return pd.DataFrame({name: {row: cell(c) for row, cell in rows.items()} for name, c in columns.items()})
