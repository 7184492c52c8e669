"""The contribution graph's figures (``models.analysis.contributions`` hands over plain nodes and edges):
the routes from one token's output back to the input, drawn with the input tokens along x and the
residual states up the y axis (each block's input, then the state after its attention), edges as
lines whose width is their renormalised weight; and the heads ranked for one edge. Plain Plotly."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from attention_atlas.i18n import N_, _
from attention_atlas.viz_core.figures import FONT
from attention_atlas.viz_core.layout import TICK_FONT, fit_axes
from attention_atlas.viz_core.tokens import as_plotly_text, clean_tokens, hover_labels

COLOURS = {"attention": "#0072B2", "residual": "#999999", "ffn": "#D55E00"}  # Okabe–Ito
KINDS = {
    "attention": N_("attention"),
    "residual": N_("residual"),
    "ffn": N_("ffn"),
}  # an edge's kind, as shown
NODES = {
    "x": N_("{token}, entering block {layer}"),
    "mid": N_("{token}, after the attention of block {layer}"),
}
WIDTHS = (1.0, 2.5, 4.5, 7.0)  # px: an edge's line width by its renormalised weight's quarter
ROW_PX = 16  # px per level (two levels a block) while the chart fits MAX_HEIGHT
MAX_HEIGHT = 640  # px: the whole graph in a 720-pixel window (a projector), levels closer together
LABEL_PX = 14  # px at least between two block labels on the y axis


def level(node) -> int:
    """A node's height: block l's input at 2l, the state after its attention at 2l + 1."""
    return 2 * node.layer + (1 if node.kind == "mid" else 0)


def routes_figure(routes, tokens: list[str], layers: int, title: str = "") -> go.Figure:
    """Every kept edge as a line from its source to its target (one trace per kind and width band,
    so a graph of thousands of edges is a handful of traces), every reached node as a dot."""
    labels = as_plotly_text(hover_labels(tokens))
    traces = []
    for kind, colour in COLOURS.items():
        named = False  # the kind's first trace names it in the legend, whichever width band it is
        for band, width in enumerate(WIDTHS):
            chosen = [e for e in routes.edges if e.kind == kind and _band(e.weight) == band]
            if chosen:
                traces.append(_edges(chosen, labels, kind, colour, width, not named))
                named = True
    height = min(MAX_HEIGHT, max(320, ROW_PX * (2 * layers + 1) + 140))
    block_px = 2 * (height - 140) / (2 * layers + 1)
    traces.append(_nodes(routes.nodes, labels, size=min(7, max(3, block_px / 3))))  # apart when dense
    every = max(1, int(np.ceil(LABEL_PX / block_px)))  # label every block, or every 2nd, 3rd… when dense
    labelled = sorted({b for b in range(0, layers, every)} | {layers})
    layout = dict(
        title=dict(text=title, x=0.01, xanchor="left") if title else None,
        font=dict(family=FONT, size=TICK_FONT),
        height=height,
        margin=dict(l=10, r=10, t=60 if title else 30, b=10),
        showlegend=True,
        legend=dict(orientation="h", x=1, xanchor="right", y=1, yanchor="bottom"),  # the title is left
        xaxis=dict(
            type="category",
            categoryorder="array",
            categoryarray=labels,
            tickmode="array",
            tickvals=labels,
            ticktext=as_plotly_text(clean_tokens(tokens)),
            title=dict(text=_("input token")),
            range=[-0.5, len(labels) - 0.5],  # every token, however few routes remain above the threshold
            automargin=True,
        ),
        yaxis=dict(
            tickmode="array",
            tickvals=[2 * b for b in labelled],
            ticktext=[_("block {b}", b=b) if b < layers else _("output") for b in labelled],
            title=dict(text=_("residual stream (entering each block)")),
            range=[-1, 2 * layers + 1],
        ),
        hovermode="closest",
    )
    return fit_axes(go.Figure(traces, layout))


def _band(weight: float) -> int:
    return min(int(weight * len(WIDTHS)), len(WIDTHS) - 1)


def _edges(edges, labels: list[str], kind: str, colour: str, width: float, legend: bool) -> go.Scatter:
    x, y, text = [], [], []
    shown = _(KINDS.get(kind, kind))
    for e in edges:
        x += [labels[e.source.position], labels[e.target.position], None]
        y += [level(e.source), level(e.target), None]
        hover = _(
            "{kind}: {weight:.0%} of what was kept ({contribution:.3f} before the threshold)",
            kind=shown,
            weight=e.weight,
            contribution=e.contribution,
        )
        text += [hover, hover, None]
    return go.Scatter(
        x=x,
        y=y,
        mode="lines",
        line=dict(color=colour, width=width),
        name=shown,
        legendgroup=kind,
        showlegend=legend,
        hovertext=text,
        hoverinfo="text",
    )


def _nodes(nodes, labels: list[str], size: float) -> go.Scatter:
    return go.Scatter(
        x=[labels[n.position] for n in nodes],
        y=[level(n) for n in nodes],
        mode="markers",
        marker=dict(size=size, color="#222222"),
        name=_("residual state"),
        hovertext=[_(NODES[n.kind], token=labels[n.position], layer=n.layer) for n in nodes],
        hoverinfo="text",
        showlegend=False,
    )


def heads_figure(ranked: list[tuple[int, float]], title: str) -> go.Figure:
    """The heads of one layer ranked by their contribution to one edge, as bars."""
    heads = [_("head {h}", h=h) for h, __ in ranked]
    values = np.asarray([c for __, c in ranked])
    fig = go.Figure(
        go.Bar(
            x=heads,
            y=values,
            marker_color=COLOURS["attention"],
            hovertemplate="%{x}: %{y:.3f}<extra></extra>",
        )
    )
    return fig.update_layout(
        title=dict(text=title, x=0.01, xanchor="left"),
        font=dict(family=FONT, size=TICK_FONT),
        height=300,
        margin=dict(l=10, r=10, t=50, b=10),
        yaxis_title=_("contribution"),
    )
