"""The neuron view's figure and table: q (1 × d), K and q∘K (keys × d) as heatmaps, scores and
weights as bars, one row per key with its token (the numbers: ``viz_core.neuron``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from attention_atlas.i18n import _
from attention_atlas.viz_core.figures import DIVERGING_SCALE, _axis_ticks, _base_layout, display_precision
from attention_atlas.viz_core.layout import PLOT_WIDTH, fit_axes
from attention_atlas.viz_core.neuron import Neuron
from attention_atlas.viz_core.tokens import as_plotly_text, clean_token, hover_labels


def neuron_frame(n: Neuron, key_tokens: list[str]) -> pd.DataFrame:
    """The numbers behind the figure: one row per key and dimension (q, k, q∘k), with the key's
    score and weight."""
    keys, d = n.keys.shape
    return pd.DataFrame(
        {
            "key_pos": np.repeat(np.arange(keys), d),
            "key_token": np.repeat(key_tokens, d),
            "dim": np.tile(np.arange(d), keys),
            "q": np.tile(n.query, keys),
            "k": n.keys.ravel(),
            "q_times_k": n.products.ravel(),
            "score": np.repeat(n.scores, d),
            "weight": np.repeat(n.weights, d),
        }
    )


ROW_PX = 28  # px per key row: a label each, up to a projector's 20 px labels (1.3 em a line)
TOP = 110  # px: the q strip, its title and the panel titles


def _heat(values: np.ndarray, rows: list[str], label: str) -> go.Heatmap:
    top = float(np.abs(values).max()) or 1.0
    return go.Heatmap(
        z=display_precision(values),
        x=list(range(values.shape[1])),
        y=rows,
        zmin=-top,
        zmax=top,
        zmid=0,
        colorscale=DIVERGING_SCALE,
        showscale=False,
        hovertemplate=_("%{{y}}<br>dimension %{{x}}<br>{label} %{{z:.3g}}<extra></extra>", label=label),
    )


def _bars(values: np.ndarray, rows: list[str], color: str, label: str) -> go.Bar:
    shown = np.nan_to_num(values, nan=0.0)
    hidden = _("hidden")
    text = [(hidden if np.isnan(v) else f"{v:.2f}") for v in values]
    return go.Bar(
        x=shown,
        y=rows,
        orientation="h",
        marker_color=color,
        text=text,
        textposition="auto",
        cliponaxis=False,  # a short negative bar's label sits left of the axis: keep its minus sign
        hovertemplate=_("%{{y}}<br>{label} %{{text}}<extra></extra>", label=label),
    )


def neuron_figure(n: Neuron, key_tokens: list[str], query_label: str, width: int = PLOT_WIDTH) -> go.Figure:
    """q above K, then q∘K, the scores and the weights, one row per key (its token on the left)."""
    rows = as_plotly_text(hover_labels(key_tokens))
    fig = make_subplots(
        rows=2,
        cols=4,
        column_widths=[0.3, 0.3, 0.2, 0.2],
        row_heights=[1, len(rows)],
        shared_yaxes=False,
        horizontal_spacing=0.04,
        vertical_spacing=min(0.5, 70 / (ROW_PX * len(rows) + 70)),
        specs=[[{}, {}, None, None], [{}, {}, {}, {}]],
        subplot_titles=(
            as_plotly_text([_("query q: {token}", token=clean_token(query_label))])[0],
            "",
            _("keys K"),
            "q ∘ K",
            _("score"),
            _("weight"),
        ),
    )
    d = n.query.shape[0]
    fig.add_trace(_heat(n.query[None, :], as_plotly_text([clean_token(query_label)]), "q"), row=1, col=1)
    fig.add_trace(_heat(n.keys, rows, "k"), row=2, col=1)
    fig.add_trace(_heat(n.products, rows, "q∘k"), row=2, col=2)
    fig.add_trace(_bars(n.scores, rows, "#888888", _("score")), row=2, col=3)
    fig.add_trace(_bars(n.weights, rows, "#2166ac", _("weight")), row=2, col=4)
    fig.update_xaxes(row=1, col=1, showticklabels=False, range=[-0.5, d - 0.5])
    fig.update_yaxes(row=1, col=1, showticklabels=False)
    fig.update_xaxes(row=2, col=1, title=_("dimension"), range=[-0.5, d - 0.5])
    fig.update_xaxes(row=2, col=2, title=_("dimension"), range=[-0.5, d - 0.5])
    fig.update_xaxes(row=2, col=4, range=[0, 1.05])
    for col in range(1, 5):
        fig.update_yaxes(
            row=2, col=col, autorange="reversed", showticklabels=col == 1, **_axis_ticks(key_tokens)
        )
    fig.update_layout(showlegend=False, bargap=0.15)
    _base_layout(fig, "", height=int(TOP + ROW_PX * max(len(rows), 6) + 60))
    return fit_axes(fig, width=width)
