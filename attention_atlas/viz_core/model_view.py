"""All layers × heads at once, small enough to send for a 30 × 9-head model at 512 tokens.

Every head becomes one tile of a single image (one heatmap trace, not hundreds of
subplots): long inputs are pooled to ``TILE`` × ``TILE`` (rows averaged, keys summed, so
each row still sums to 1), each tile is scaled to its own maximum and sent as one byte per
cell. An invisible marker over each tile carries the hover and the click that opens the
head in the head view. The heads share the chart's width and the tiles' height follows from
the grid (``viz_core.layout.tile_size``): SmolLM2's 30 × 9 heads get wide tiles across the
page, not a strip of small squares in its middle.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from attention_atlas.i18n import _
from attention_atlas.viz_core.figures import FONT
from attention_atlas.viz_core.layout import PLOT_WIDTH, VIEW_CHROME, tile_size
from attention_atlas.viz_core.record import AttentionRecord

TILE = 32  # cells per tile side at most: the pattern stays readable, the payload small
GAP = 255  # byte value of the gutter between tiles (light grey)


def pool(matrix: np.ndarray, size: int) -> np.ndarray:
    """``[..., query, key]`` pooled to at most ``size`` × ``size``: rows averaged, keys summed."""
    q, k = matrix.shape[-2:]
    if q > size:
        matrix = _sum_runs(matrix, q, size, -2)
        matrix /= np.diff(np.append(_starts(q, size), q)).astype(matrix.dtype)[:, None]
    if k > size:
        matrix = _sum_runs(matrix, k, size, -1)
    return matrix


def _starts(n: int, size: int) -> np.ndarray:
    return np.linspace(0, n, size + 1).astype(int)[:-1]


def _sum_runs(matrix: np.ndarray, n: int, size: int, axis: int) -> np.ndarray:
    """Sums of ``size`` runs of consecutive entries along ``axis`` (of length ``n``). Runs of equal
    width (``n`` a multiple of ``size``: 512 tokens in 32 cells) are a reshape and one sum, four
    times faster than ``reduceat`` on 270 heads at 512 tokens."""
    if n % size:
        return np.add.reduceat(matrix, _starts(n, size), axis=axis)
    if axis == -1:
        return matrix.reshape(*matrix.shape[:-1], size, n // size).sum(-1)
    return matrix.reshape(*matrix.shape[:-2], size, n // size, matrix.shape[-1]).sum(-2)


def tiles(weights: np.ndarray, size: int = TILE, gutter: int = 1) -> np.ndarray:
    """uint8 image ``[layers·(t+g), heads·(t+g)]`` of per-head-normalised tiles."""
    pooled = pool(np.asarray(weights, dtype=np.float32), size)  # [layers, heads, tq, tk]
    layers, heads, tq, tk = pooled.shape
    peak = pooled.max(axis=(-2, -1), keepdims=True)
    scaled = np.round(254 * pooled / np.where(peak > 0, peak, 1)).astype(np.uint8)
    image = np.full((layers * (tq + gutter), heads * (tk + gutter)), GAP, dtype=np.uint8)
    for layer in range(layers):
        for head in range(heads):
            r, c = layer * (tq + gutter), head * (tk + gutter)
            image[r : r + tq, c : c + tk] = scaled[layer, head]
    return image


def model_view(
    record: AttentionRecord, size: int = TILE, title: str = "", width: int = PLOT_WIDTH
) -> go.Figure:
    """Small multiples of every head; the scatter trace's points are (layer, head) for clicks."""
    return grid_view(record.weights, size, title, width)


def grid_view(
    weights: np.ndarray,
    size: int = TILE,
    title: str = "",
    width: int = PLOT_WIDTH,
    hover: str | None = None,
) -> go.Figure:
    """The model view of ``[layers, heads, query, key]`` weights (a record's, or a long input's
    max-pooled thumbnails: ``viz_core.long_figures.long_model_view``); ``hover`` follows the
    head's name in each tile's hover ("click to open" unless given). Its words: ``in_language``."""
    layers, heads = weights.shape[:2]
    tile_w, tile_h = tile_size(layers, heads, width)
    image = tiles(weights, size)
    tq = image.shape[0] // layers - 1
    tk = image.shape[1] // heads - 1
    centres_x = np.arange(heads) * (tk + 1) + (tk - 1) / 2
    centres_y = np.arange(layers) * (tq + 1) + (tq - 1) / 2
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
        marker=dict(symbol="square", size=max(8, min(tile_w, tile_h) - 4), opacity=0),
        customdata=np.stack([grid_layer.ravel(), grid_head.ravel()], axis=-1),
        showlegend=False,
    )
    fig = go.Figure([heat, picks])
    fig.update_xaxes(
        tickmode="array",
        tickvals=centres_x,
        ticktext=[str(h) for h in range(heads)],
        side="top",
        range=[-0.5, image.shape[1] - 0.5],  # the tiles edge to edge: the markers add no padding
        showgrid=False,
        zeroline=False,
    )
    fig.update_yaxes(
        tickmode="array",
        tickvals=centres_y,
        ticktext=[str(layer) for layer in range(layers)],
        range=[image.shape[0] - 0.5, -0.5],  # layer 0 at the top
        showgrid=False,
        zeroline=False,
    )
    fig.update_layout(
        title=dict(text=title, x=0.01) if title else None,
        font=dict(family=FONT, size=14),
        margin=dict(l=10, r=10, t=60, b=10),
        height=round(VIEW_CHROME + layers * tile_h),
        clickmode="event",  # a click opens the head; no selection to redraw
        meta={"tile": [tq, tk]},  # the browser frames the open head's tile (ui/live_heads.js)
    )
    return in_language(fig, hover)


def in_language(fig: go.Figure, hover: str | None = None) -> go.Figure:
    """``fig``'s (a ``grid_view``'s) axis titles and tile hover in the language in force, ``hover``
    ("click to open" unless given) after each head's name. A page that caches the figure (it is
    built once per input, for every visitor) calls this again where it shows it."""
    hover = _("click to open") if hover is None else hover
    fig.update_xaxes(title=_("head"))
    fig.update_yaxes(title=_("layer"))
    fig.data[1].hovertemplate = _(
        "layer %{{customdata[0]}}, head %{{customdata[1]}}<br>{hover}<extra></extra>", hover=hover
    )
    return fig
