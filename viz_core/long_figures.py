"""Plotly figures of a long input, drawn from ``viz_core.blockwise``'s reductions (no n × n data).

- ``overview_figure``: one head pooled to ≤ 1024 × 1024 cells; each axis label is a cell's token
  range ("120–127 · cat…mat") and the title says when the view is reduced and how (max).
- ``window_figure``: a zoom window at full resolution, the tokens on the axes.
- ``thumbnail_view``: every head's max-pooled thumbnail as one uint8 image, encoded like
  ``viz_core.model_view`` (its ``tiles``: one heatmap trace, an invisible marker per head for the
  hover and the click), so the payload stays small at 8,192 tokens.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from viz_core.blockwise import Reduced
from viz_core.model_view import tiles

FONT = "Noto Sans CJK SC, Source Han Sans SC, PingFang SC, Microsoft YaHei, Arial, sans-serif"
SCALE = [[0, "#ffffff"], [1, "#08306b"]]


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


def overview_figure(red: Reduced, tokens: list[str], title: str = "") -> go.Figure:
    """A head's overview: cells over token ranges, the range in the hover, 'reduced' said on the axes."""
    rows, cols = range_labels(red.row_edges, tokens), range_labels(red.col_edges, tokens)
    note = ""
    if red.reduced:
        per = (red.row_edges[-1] - red.row_edges[0]) / max(len(rows), 1)
        note = f" (reduced: {red.how} over ≈{per:.1f} tokens a cell)"
    heat = go.Heatmap(
        z=red.values,
        x=cols,
        y=rows,
        colorscale=SCALE,
        zmin=0,
        hovertemplate=f"query %{{y}}<br>key %{{x}}<br>{red.how} weight %{{z:.3f}}<extra></extra>",
    )
    fig = go.Figure(heat)
    fig.update_xaxes(title="key" + note, side="top", showticklabels=len(cols) <= 64, type="category")
    fig.update_yaxes(
        title="query" + note, autorange="reversed", showticklabels=len(rows) <= 64, type="category"
    )
    fig.update_layout(title=dict(text=title, x=0.01) if title else None, font=dict(family=FONT, size=13))
    return fig


def window_figure(weights: np.ndarray, tokens: list[str], first_query: int, first_key: int) -> go.Figure:
    """A zoom window at full resolution; ``weights`` is ``[query, key]`` from ``blockwise.window``."""
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
            hovertemplate="query %{y}<br>key %{x}<br>weight %{z:.3f}<extra></extra>",
        )
    )
    fig.update_xaxes(title="key (full resolution)", side="top", type="category")
    fig.update_yaxes(title="query (full resolution)", autorange="reversed", type="category")
    fig.update_layout(font=dict(family=FONT, size=13))
    return fig


def thumbnail_view(thumbs: np.ndarray, title: str = "") -> go.Figure:
    """Every head's thumbnail ``[layers, heads, t, t]`` as one clickable image (model_view's encoding)."""
    layers, heads = thumbs.shape[:2]
    image = tiles(thumbs, size=thumbs.shape[-1])  # each tile scaled to its own maximum, one byte a cell
    side = thumbs.shape[-1]
    centres_x = np.arange(heads) * (side + 1) + (side - 1) / 2
    centres_y = np.arange(layers) * (side + 1) + (side - 1) / 2
    grid_layer, grid_head = np.meshgrid(np.arange(layers), np.arange(heads), indexing="ij")
    heat = go.Heatmap(
        z=image,
        colorscale=[[0, "#ffffff"], [254 / 255, "#08306b"], [254.5 / 255, "#e5e5e5"], [1, "#e5e5e5"]],
        zmin=0,
        zmax=255,
        showscale=False,
        hoverinfo="skip",
    )
    picks = go.Scatter(
        x=centres_x[grid_head.ravel()],
        y=centres_y[grid_layer.ravel()],
        mode="markers",
        marker=dict(symbol="square", size=max(8, min(40, 900 // max(heads, layers))), opacity=0),
        customdata=np.stack([grid_layer.ravel(), grid_head.ravel()], axis=-1),
        hovertemplate="layer %{customdata[0]}, head %{customdata[1]}<br>max-pooled<extra></extra>",
        showlegend=False,
    )
    fig = go.Figure([heat, picks])
    fig.update_xaxes(
        tickmode="array", tickvals=centres_x, ticktext=[str(h) for h in range(heads)], side="top"
    )
    fig.update_yaxes(
        tickmode="array",
        tickvals=centres_y,
        ticktext=[str(layer) for layer in range(layers)],
        autorange="reversed",
        scaleanchor="x",
    )
    fig.update_layout(
        title=dict(text=title, x=0.01) if title else None,
        font=dict(family=FONT, size=14),
        clickmode="event",
    )
    return fig
