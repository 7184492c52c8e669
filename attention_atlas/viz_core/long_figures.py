"""Plotly figures of a long input, drawn from ``viz_core.blockwise``'s reductions (no n × n data).

- ``overview_figure``: one head pooled to ≤ 1024 × 1024 cells; each axis label is a cell's token
  range ("120–127 · cat…mat") and the title says when the view is reduced and how (max).
- ``window_figure``: a zoom window at full resolution, the tokens on the axes.
- ``long_model_view``: every head's max-pooled thumbnail in ``viz_core.model_view``'s grid (one
  uint8 image, an invisible marker per head for the hover and the click, so the payload stays
  small at 8,192 tokens), layers still being computed in grey: the long-input page's model view
  and ``atlas figure``'s for a long text.
- ``qk_figure``: one head's queries and keys in 2-D (``blockwise.project_qk``), WebGL markers, with
  a chosen query's top keys joined to it.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from attention_atlas.i18n import N_, _
from attention_atlas.viz_core.blockwise import Reduced
from attention_atlas.viz_core.layout import PLOT_WIDTH, fit_axes
from attention_atlas.viz_core.model_view import grid_view

FONT = "Noto Sans CJK SC, Source Han Sans SC, PingFang SC, Microsoft YaHei, Arial, sans-serif"
SCALE = [[0, "#ffffff"], [1, "#08306b"]]
POOLING = (N_("max"), N_("mean"))  # ``Reduced.how``, as a title and a hover name it


def _short(token: str, width: int = 12) -> str:
    token = token.replace("\n", "↵")
    return token if len(token) <= width else token[: width - 1] + "…"


def range_labels(edges: np.ndarray, tokens: list[str]) -> list[str]:
    """Per cell: ``"i · token"`` for one token, ``"a–b · first…last"`` for a range."""
    labels = []
    for a, b in zip(edges[:-1].tolist(), (edges[1:] - 1).tolist(), strict=True):
        if a == b:
            labels.append(f"{a} · {_short(tokens[a])}")
        else:
            labels.append(f"{a}–{b} · {_short(tokens[a], 6)}…{_short(tokens[b], 6)}")
    return labels


def overview_figure(red: Reduced, tokens: list[str], title: str = "", ticks: int = 0) -> go.Figure:
    """A head's overview: cells over token ranges, the range in the hover, 'reduced' said on the axes.
    ``ticks`` > 0: over 64 cells, about that many ticks on each axis naming a cell's first token
    position (else none)."""
    rows, cols = range_labels(red.row_edges, tokens), range_labels(red.col_edges, tokens)
    how = _(red.how)
    key_title, query_title = _("key"), _("query")
    if red.reduced:
        per = (red.row_edges[-1] - red.row_edges[0]) / max(len(rows), 1)
        key_title = _("key (reduced: {how} over ≈{per:.1f} tokens a cell)", how=how, per=per)
        query_title = _("query (reduced: {how} over ≈{per:.1f} tokens a cell)", how=how, per=per)
    heat = go.Heatmap(
        z=red.values,
        x=cols,
        y=rows,
        colorscale=SCALE,
        zmin=0,
        hovertemplate=_("query %{{y}}<br>key %{{x}}<br>{how} weight %{{z:.3f}}<extra></extra>", how=how),
    )
    fig = go.Figure(heat)
    fig.update_xaxes(title=key_title, side="top", showticklabels=len(cols) <= 64, type="category")
    fig.update_yaxes(title=query_title, autorange="reversed", showticklabels=len(rows) <= 64, type="category")
    fig.update_layout(title=_title(title), font=dict(family=FONT, size=13))
    if ticks and len(cols) > 64:
        for axis, labels, edges in (
            (fig.layout.xaxis, cols, red.col_edges),
            (fig.layout.yaxis, rows, red.row_edges),
        ):
            every = max(1, len(labels) // ticks)
            axis.update(
                showticklabels=True,
                tickmode="array",
                tickvals=labels[::every],
                ticktext=[f"{int(e):,}" for e in edges[:-1:every]],
            )
    return fig


def window_title(layer: int, head: int, queries: tuple[int, int], keys: tuple[int, int]) -> str:
    """A zoom window's title: its head and its token ranges (``[first, stop)`` each)."""
    return _(
        "layer {layer}, head {head}: queries {q0:,}–{q1:,} × keys {k0:,}–{k1:,}, every token",
        layer=layer,
        head=head,
        q0=queries[0],
        q1=queries[1] - 1,
        k0=keys[0],
        k1=keys[1] - 1,
    )


def window_figure(
    weights: np.ndarray,
    tokens: list[str],
    first_query: int,
    first_key: int,
    title: str = "",
    height: int = 700,
    width: int = PLOT_WIDTH,
    fit: bool = True,
) -> go.Figure:
    """A zoom window at full resolution; ``weights`` is ``[query, key]`` from ``blockwise.window``.
    The tokens stand on the axes (thinned and sized by ``viz_core.layout.fit_axes`` when ``fit``),
    ``"position · token"`` in the hover."""
    q, k = weights.shape
    ys = [f"{i} · {_short(tokens[i])}" for i in range(first_query, first_query + q)]
    xs = [f"{j} · {_short(tokens[j])}" for j in range(first_key, first_key + k)]
    fig = go.Figure(
        go.Heatmap(
            z=weights,
            x=xs,
            y=ys,
            colorscale=SCALE,
            zmin=0,
            hovertemplate=_("query %{y}<br>key %{x}<br>weight %{z:.3f}<extra></extra>"),
        )
    )
    axis = dict(type="category", categoryorder="array", tickmode="array")
    fig.update_xaxes(
        title=_("key (full resolution)"),
        side="top",
        categoryarray=xs,
        tickvals=xs,
        ticktext=_texts(xs),
        **axis,
    )
    fig.update_yaxes(
        title=_("query (full resolution)"),
        autorange="reversed",
        categoryarray=ys,
        tickvals=ys,
        ticktext=_texts(ys),
        **axis,
    )
    fig.update_layout(title=_title(title), font=dict(family=FONT, size=13), height=height)
    return fit_axes(fig, width=width) if fit else fig


def _title(text: str) -> dict | None:
    """A title above everything, the key axis's labels and title included (they stand on top)."""
    if not text:
        return None
    return dict(
        text=text, x=0.01, xanchor="left", yref="container", y=1, yanchor="top", pad_t=8, automargin=True
    )


def head_overview(red: Reduced, tokens: list[str], layer: int, head: int, sqrt: bool = True) -> go.Figure:
    """One head's overview as the Long inputs page and ``atlas figure --text-file`` both draw it: its
    title (layer, head, tokens, how far pooled), 720 px tall, token ticks at 8 px, √ colours unless
    ``sqrt`` is false (the page's toggle)."""
    cells = red.values.shape[0]
    how = _("max-pooled to {cells:,} × {cells:,} cells", cells=cells) if red.reduced else _("every token")
    title = _("layer {layer}, head {head}: {n:,} tokens, {how}", layer=layer, head=head, n=len(tokens), how=how)
    fig = overview_figure(red, tokens, title, ticks=8)
    fig.update_layout(height=720, margin=dict(l=10, r=10, b=10))
    return sqrt_colours(fig) if sqrt else fig


def sqrt_colours(fig: go.Figure, steps: int = 11) -> go.Figure:
    """Every heatmap of ``fig`` coloured by √(weight / its maximum): the same white → dark blue,
    faint weights (next to a sink that takes almost everything) visible; the colour bar keeps
    the weights themselves and says so."""
    lo, hi = np.array([255, 255, 255]), np.array([8, 48, 107])  # SCALE's ends
    stops = []
    for t in np.linspace(0, 1, steps):
        r, g, b = np.round(lo + (hi - lo) * t).astype(int)
        stops.append([float(t**2), f"rgb({r},{g},{b})"])
    for trace in fig.data:
        if trace.type == "heatmap":
            trace.colorscale = stops
            trace.colorbar = dict(title=dict(text=_("weight<br>(√ colour)"), side="top"))
    return fig


def _texts(labels: list[str]) -> list[str]:
    """Tick texts of ``"i · token"`` labels: the token alone (the hover keeps the position)."""
    return [label.split(" · ", 1)[-1] for label in labels]


def long_model_view(
    thumbs: np.ndarray, done: int | None = None, title: str = "", width: int = PLOT_WIDTH
) -> go.Figure:
    """The model view of a long input: every head's max-pooled thumbnail ``[layers, heads, t, t]``
    (t ≤ the model view's 32-cell tiles, so drawn as they are) in ``viz_core.model_view``'s grid,
    its layout, hover and click markers; layers from ``done`` on are not computed yet: a grey band.
    The long-input page and ``atlas figure --view model --text-file`` both draw this."""
    fig = grid_view(
        np.asarray(thumbs, dtype=np.float32), title=title, width=width, hover=_("max-pooled · click to open")
    )
    layers = thumbs.shape[0]
    if done is not None and done < layers:  # one grey rectangle over them (grey bytes would be 255:
        rows = len(fig.data[0].z)  # "////" in base64, each "/" escaped to 6 characters in the JSON)
        fig.add_shape(
            type="rect",
            x0=-0.5,
            x1=len(fig.data[0].z[0]) - 0.5,
            y0=done * rows / layers - 0.5,
            y1=rows - 0.5,
            fillcolor="#e5e5e5",
            line_width=0,
            layer="above",
        )
    return fig


QUERY_SCALE, KEY_SCALE = "Blues", "Oranges"


def qk_figure(
    queries: np.ndarray,
    keys: np.ndarray,
    tokens: list[str],
    share: np.ndarray,
    chosen: int | None = None,
    top: list[tuple[int, float]] | None = None,
    title: str = "",
) -> go.Figure:
    """Queries and keys ``[n, 2]`` in one plane (``Scattergl``): queries as circles shaded by
    position (light → dark blue), keys as diamonds (light → dark orange), ``"i · token"`` in the
    hover. ``chosen`` (a query) is ringed and joined to its ``top`` keys ``(key, weight)``."""
    n = len(tokens)
    labels = [f"{i} · {_short(t, 24)}" for i, t in enumerate(tokens)]
    position = np.arange(n)
    # the colour runs from a light shade (never white: the first token and the legend stay visible) to dark
    marker = dict(size=5 if n > 2000 else 7, opacity=0.75, cmin=-0.3 * max(n - 1, 1), cmax=max(n - 1, 1))
    traces = [
        go.Scattergl(
            x=queries[:, 0],
            y=queries[:, 1],
            mode="markers",
            name=_("queries"),
            text=labels,
            marker=dict(color=position, colorscale=QUERY_SCALE, symbol="circle", **marker),
            hovertemplate=_("query %{text}<extra></extra>"),
        ),
        go.Scattergl(
            x=keys[:, 0],
            y=keys[:, 1],
            mode="markers",
            name=_("keys"),
            text=labels,
            marker=dict(color=position, colorscale=KEY_SCALE, symbol="diamond", **marker),
            hovertemplate=_("key %{text}<extra></extra>"),
        ),
    ]
    if chosen is not None and top:
        xs, ys = [], []
        for key, _weight in top:
            xs += [float(queries[chosen, 0]), float(keys[key, 0]), None]
            ys += [float(queries[chosen, 1]), float(keys[key, 1]), None]
        traces.append(
            go.Scattergl(
                x=xs,
                y=ys,
                mode="lines",
                line=dict(color="#d62728", width=1),
                hoverinfo="skip",
                name=_("top keys"),
            )
        )
        traces.append(
            go.Scattergl(
                x=[float(keys[k, 0]) for k, _weight in top],
                y=[float(keys[k, 1]) for k, _weight in top],
                mode="markers",
                showlegend=False,
                text=[_("{label}<br>weight {w:.3f}", label=labels[k], w=w) for k, w in top],
                marker=dict(size=12, symbol="diamond-open", color="#d62728", line=dict(width=2)),
                hovertemplate=_("key %{text}<extra>top key</extra>"),
            )
        )
        traces.append(
            go.Scattergl(
                x=[float(queries[chosen, 0])],
                y=[float(queries[chosen, 1])],
                mode="markers",
                name=_("query {i}", i=chosen),
                text=[labels[chosen]],
                marker=dict(size=16, symbol="circle-open", color="#d62728", line=dict(width=3)),
                hovertemplate=_("query %{text}<extra>chosen</extra>"),
            )
        )
    fig = go.Figure(traces)
    fig.update_xaxes(title=_("PC 1 ({share:.0%} of the variance)", share=share[0]), zeroline=False)
    fig.update_yaxes(title=_("PC 2 ({share:.0%})", share=share[1]), zeroline=False, scaleanchor="x")
    fig.update_layout(
        title=dict(text=title, x=0.01) if title else None,
        font=dict(family=FONT, size=13),
        height=650,
        legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0),
        clickmode="event+select",
        uirevision="qk",
    )
    return fig


SPAN_WORDS = {  # the sentence view's hover and axis titles per unit (``viz_core.sentences.UNITS``)
    "sentence": (
        N_("query sentence %{y}<br>key sentence %{x}<br>share of its attention %{z:.3f}<extra></extra>"),
        N_("key sentence"),
        N_("query sentence"),
    ),
    "paragraph": (
        N_("query paragraph %{y}<br>key paragraph %{x}<br>share of its attention %{z:.3f}<extra></extra>"),
        N_("key paragraph"),
        N_("query paragraph"),
    ),
}


def span_figure(weights: np.ndarray, labels: list[str], unit: str, title: str = "") -> go.Figure:
    """Sentences (or paragraphs) on both axes (``viz_core.sentences``): a cell is how much of a query
    sentence's attention, per token, goes to a key sentence; each span's first words in the hover."""
    hover, key_title, query_title = (_(text) for text in SPAN_WORDS[unit])
    heat = go.Heatmap(
        z=weights,
        x=labels,
        y=labels,
        colorscale=SCALE,
        zmin=0,
        hovertemplate=hover,
    )
    fig = go.Figure(heat)
    numbers = [label.split(" · ", 1)[0] for label in labels]
    every = max(1, len(labels) // 24)  # about 24 numbered ticks an axis
    ticks = dict(type="category", tickmode="array", tickvals=labels[::every], ticktext=numbers[::every])
    fig.update_xaxes(title=key_title, side="top", **ticks)
    fig.update_yaxes(title=query_title, autorange="reversed", **ticks)
    fig.update_layout(title=_title(title), font=dict(family=FONT, size=13), height=720)
    return fig
