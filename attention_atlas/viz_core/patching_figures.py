"""Activation patching's figures (``models.analysis.patching``): layer × position heatmaps with both
prompts' tokens on the axis (the positions where they differ marked), the layer × head heatmap, the
heads ranked by effect, and the tidy table behind them for CSV. Numpy and Plotly only.

Effects are normalised: 0 the patch changed nothing, 1 it moved the answer all the way (from the
corrupted run to the clean one when denoising; the other way when noising). The colour scale is
diverging around 0, so a patch that pushes the wrong way shows in the other colour."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from attention_atlas.i18n import _
from attention_atlas.viz_core.figures import FONT
from attention_atlas.viz_core.layout import SEPARATOR, TICK_FONT, fit_axes
from attention_atlas.viz_core.tokens import as_plotly_text, clean_tokens, tick_label

SCALE = "RdBu"  # red negative, blue positive: reads with colour-blindness
ROW_PX = 18
MIN_ROWS = 8
POSITION_KINDS = ("resid", "attn_out", "mlp_out")
HEAD_KINDS = ("heads", "pattern")


def differ(tokens_clean: list[str], tokens_corrupt: list[str]) -> list[int]:
    """The positions where the two prompts' tokens differ."""
    return [i for i, (a, b) in enumerate(zip(tokens_clean, tokens_corrupt, strict=True)) if a != b]


def position_names(tokens_clean: list[str], tokens_corrupt: list[str]) -> list[str]:
    """``'3 · Paris'``, and ``'3 · Paris▸Rome'`` where the prompts differ (the tick shows what follows
    the separator: both tokens, marked by the arrow)."""
    a, b = clean_tokens(tokens_clean), clean_tokens(tokens_corrupt)
    return [f"{i}{SEPARATOR}{x}" if x == y else f"{i}{SEPARATOR}{x}▸{y}" for i, (x, y) in enumerate(zip(a, b, strict=True))]


def _limit(z: np.ndarray) -> float:
    """The colour scale's half-width: at least 1 (the clean run), more where an effect overshoots."""
    finite = np.abs(z[np.isfinite(z)])
    return max(1.0, float(finite.max()) if finite.size else 1.0)


def _layout(fig: go.Figure, rows: int, title: str) -> go.Figure:
    fig.update_layout(
        height=150 + ROW_PX * max(rows, MIN_ROWS),
        font=dict(family=FONT, size=TICK_FONT),
        margin=dict(l=10, r=10, t=60, b=10),
        # above the top axis's ticks and title, which automargin grows (rotated tokens overlapped it)
        title=dict(text=title, x=0.01, xanchor="left", yref="container", y=1, yanchor="top", automargin=True, pad=dict(t=8)),
    )
    return fig


def position_map(
    effect: np.ndarray, tokens_clean: list[str], tokens_corrupt: list[str], title: str = "", rows: str = "layer"
) -> go.Figure:
    """``effect [layers, positions]`` as a heatmap: block 0 at the bottom, the positions along x named
    by the clean prompt's tokens, ``clean▸corrupted`` where they differ; ``rows="head"``: one layer's
    heads ``[heads, positions]``."""
    layers, n = effect.shape
    names = as_plotly_text(position_names(tokens_clean, tokens_corrupt))
    limit = _limit(effect)
    fig = go.Figure(
        go.Heatmap(
            z=np.round(effect.astype(np.float64), 4),
            x=names,
            y=list(range(layers)),
            colorscale=SCALE,
            zmid=0,
            zmin=-limit,
            zmax=limit,
            xgap=1 if n <= 64 else 0,
            ygap=1,
            colorbar=dict(title=dict(text=_("effect"))),
            hovertemplate=_("layer %{y}, position %{x}<br>effect %{z:.3f}<extra></extra>")
            if rows == "layer"
            else _("head %{y}, position %{x}<br>effect %{z:.3f}<extra></extra>"),
        )
    )
    fig.update_xaxes(
        type="category",
        categoryorder="array",
        categoryarray=names,
        tickmode="array",
        tickvals=names,
        ticktext=as_plotly_text([tick_label(x.split(SEPARATOR, 1)[1]) for x in position_names(tokens_clean, tokens_corrupt)]),
        title=_("position (clean ▸ corrupted where they differ)"),
        side="top",
        automargin=True,
    )
    fig.update_yaxes(
        title=_("layer") if rows == "layer" else _("head"), dtick=1 if layers <= 16 else 2, range=[-0.5, layers - 0.5]
    )
    return fit_axes(_layout(fig, layers, title))


def head_map(effect: np.ndarray, title: str = "") -> go.Figure:
    """``effect [layers, heads]`` as a heatmap: block 0 at the bottom."""
    layers, heads = effect.shape
    limit = _limit(effect)
    fig = go.Figure(
        go.Heatmap(
            z=np.round(effect.astype(np.float64), 4),
            x=list(range(heads)),
            y=list(range(layers)),
            colorscale=SCALE,
            zmid=0,
            zmin=-limit,
            zmax=limit,
            xgap=1,
            ygap=1,
            colorbar=dict(title=dict(text=_("effect"))),
            hovertemplate=_("layer %{y}, head %{x}<br>effect %{z:.3f}<extra></extra>"),
        )
    )
    fig.update_xaxes(title=_("head"), dtick=1, side="top")
    fig.update_yaxes(title=_("layer"), dtick=1 if layers <= 16 else 2, range=[-0.5, layers - 0.5])
    return _layout(fig, layers, title)


def ranked_heads(effect: np.ndarray, top: int = 10) -> list[tuple[int, int, float]]:
    """The ``top`` heads by the size of their effect: ``(layer, head, effect)``, largest first."""
    flat = np.argsort(-np.abs(effect).ravel(), kind="stable")[:top]
    return [(int(i // effect.shape[1]), int(i % effect.shape[1]), float(effect.ravel()[i])) for i in flat]


def frame(arrays: dict, tokens_clean: list[str], tokens_corrupt: list[str]) -> pd.DataFrame:
    """The tidy table of every effect: ``kind, layer, position, token_clean, token_corrupt, head, effect``
    (position and tokens empty for the heads' kinds, head empty for the positions')."""
    rows = []
    for kind, effect in arrays.items():
        if effect is None:
            continue
        for layer, i in np.ndindex(*effect.shape):
            at_position = kind in POSITION_KINDS
            rows.append(
                {
                    "kind": kind,
                    "layer": layer,
                    "position": i if at_position else None,
                    "token_clean": tokens_clean[i] if at_position else None,
                    "token_corrupt": tokens_corrupt[i] if at_position else None,
                    "head": None if at_position else i,
                    "effect": float(effect[layer, i]),
                }
            )
    return pd.DataFrame(rows)


def head_positions_frame(effect: np.ndarray, layer: int, tokens_clean: list[str], tokens_corrupt: list[str]) -> pd.DataFrame:
    """The table of one layer's heads patched one position at a time (``effect [heads, positions]``)."""
    return pd.DataFrame(
        [
            {
                "kind": "heads",
                "layer": layer,
                "position": p,
                "token_clean": tokens_clean[p],
                "token_corrupt": tokens_corrupt[p],
                "head": h,
                "effect": float(effect[h, p]),
            }
            for h, p in np.ndindex(*effect.shape)
        ]
    )
