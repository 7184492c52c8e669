"""Figures and tables of the logit lens (``models.analysis.lens``'s top-K grid, as labels and numbers).

- ``lens_grid``: blocks × positions, each cell the top token after that block (its text in the cell
  where it fits), coloured by its probability; the hover lists the top tokens with their
  probabilities. The input tokens stand on the x axis as every token axis does (``tokens.tick_label``,
  ``layout.fit_axes``), named by their position in the whole input, so a window keeps its numbers.
- ``follow_figure``: one token's probability and rank after every block, at one position.
- ``changes_table``: what each block promoted and suppressed at one position.
- ``grid_frame``: the grid as a tidy table for the CSV.

Token labels arrive decoded (the page decodes the ids with the model's tokenizer); nothing here
knows a model.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from attention_atlas.i18n import _
from attention_atlas.viz_core.figures import ATTENTION_SCALE, FONT, display_precision, legend_on_top
from attention_atlas.viz_core.layout import COLORBAR, NUMBERS, PLOT_WIDTH, SEPARATOR, TICK_FONT, fit_axes
from attention_atlas.viz_core.tokens import as_plotly_text, clean_tokens, shown, tick_label

CELL_FONT = 11  # px: a cell's top token
HOVER_TOP = 10  # tokens listed in a cell's hover
ROW_PX = 24  # px per block in the grid (a projector's 20 px cell text still fits)
MIN_ROWS = 8  # the grid is at least this many rows tall: fewer leave the colour bar too short to read


def position_names(tokens: list[str], positions) -> list[str]:
    """``'37 · cat'`` for each position of a window: its place in the whole input, then its token."""
    return [f"{int(p)}{SEPARATOR}{t}" for p, t in zip(positions, clean_tokens(tokens), strict=True)]


def _token_axis(tokens: list[str], positions) -> dict:
    names = as_plotly_text(position_names(tokens, positions))
    return dict(
        type="category",
        categoryorder="array",
        categoryarray=names,
        tickmode="array",
        tickvals=names,
        ticktext=as_plotly_text([tick_label(t) for t in clean_tokens(tokens)]),
        automargin=True,
    )


def _fits(label: str, chars: int) -> str:
    label = shown(label)
    return label if len(label) <= chars else (label[: chars - 1] + "…" if chars > 1 else "")


def _hover(labels: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """``[blocks, positions]`` strings: the top tokens and their probabilities, one a line."""
    k = min(HOVER_TOP, labels.shape[-1])
    out = np.empty(labels.shape[:2], dtype=object)
    for index in np.ndindex(*labels.shape[:2]):
        rows = (
            f"{as_plotly_text([repr(shown(t))])[0]} {p:.3f}"
            for t, p in zip(labels[index][:k], probs[index][:k], strict=True)
        )
        out[index] = "<br>".join(rows)
    return out


def _cell_points(names: list[str], blocks: int, hover: np.ndarray) -> go.Scatter:
    """An invisible point at the centre of every cell, row by row from block 0 (point ``i`` is block
    ``i // n``, position ``i % n``), which carries the cells' hover and makes a cell clickable: a
    heatmap reports no clicked cell to a page (Plotly gives heatmaps no selection)."""
    n = len(names)
    return go.Scatter(
        x=names * blocks,
        y=np.repeat(np.arange(blocks), n).tolist(),
        mode="markers",
        marker=dict(size=14, opacity=0),
        selected=dict(marker=dict(opacity=0)),
        unselected=dict(marker=dict(opacity=0)),
        customdata=[[name, top] for name, top in zip(names * blocks, hover.ravel().tolist(), strict=True)],
        # the name from customdata: %{x} of a point gives the axis's tick text, not the position
        hovertemplate=_("after block %{y}, position %{customdata[0]}<br>%{customdata[1]}<extra></extra>"),
        hoverlabel=dict(align="left", bgcolor="white", bordercolor="#444", font=dict(color="#111")),
        showlegend=False,
        name="cells",
    )


def clicked_cell(point_index: int, blocks: int, n: int) -> tuple[int, int] | None:
    """(block, position in the grid) of ``lens_grid``'s cell point ``point_index``, or None."""
    if not 0 <= point_index < blocks * n:
        return None
    return divmod(point_index, n)


def _title(text: str) -> dict:
    return dict(text=text, x=0.01, xanchor="left", yref="container", y=1, yanchor="top", pad_t=8)


def lens_grid(
    labels: np.ndarray,
    probs: np.ndarray,
    tokens: list[str],
    positions,
    title: str = "",
    width: int = PLOT_WIDTH,
) -> go.Figure:
    """``labels`` and ``probs`` ``[blocks, positions, K]`` (most probable first) over the input
    ``tokens`` at ``positions``: block 0 at the bottom, the model's output (the last block) at the top."""
    blocks, n = probs.shape[:2]
    plot_w = width - COLORBAR - NUMBERS - 20
    chars = int(plot_w / max(n, 1) / (0.62 * CELL_FONT))
    text = [[_fits(str(t), chars) for t in row] for row in labels[:, :, 0]]
    names = as_plotly_text(position_names(tokens, positions))
    fig = go.Figure(
        go.Heatmap(
            z=display_precision(probs[:, :, 0]),
            x=names,
            y=list(range(blocks)),
            text=[as_plotly_text(row) for row in text],
            texttemplate="%{text}" if chars >= 1 else None,
            textfont=dict(size=CELL_FONT),
            hoverinfo="skip",  # the cells' hover is the clickable layer's, above
            colorscale=ATTENTION_SCALE,
            zmin=0,
            zmax=1,
            xgap=1 if n <= 64 else 0,
            ygap=1,
            colorbar=dict(title=dict(text=_("top-1 prob."))),
        )
    )
    fig.add_trace(_cell_points(names, blocks, _hover(labels, probs)))
    fig.update_xaxes(
        title=_("input position (predicting the token after it)"),
        side="top",
        **_token_axis(tokens, positions),
    )
    fig.update_yaxes(title=_("after block"), dtick=1 if blocks <= 16 else 2, range=[-0.5, blocks - 0.5])
    height = 150 + ROW_PX * max(blocks, MIN_ROWS)
    fig.update_layout(
        height=height,
        font=dict(family=FONT, size=TICK_FONT),
        margin=dict(l=10, r=10, t=50, b=10),
        title=_title(title),
        title_automargin=True,
    )
    return fit_axes(fig, width=width)


def rank_ticks(highest: int) -> list[int]:
    """The whole ranks that label a log rank axis reaching ``highest``: each one up to 5; else 1, 2, 5,
    10, 20, 50 up to 100 and powers of ten beyond, up to the first at or above it. Left to itself,
    Plotly labels the log axis of ranks 1–2 at 1, 1.2, 1.4 … 2: ranks no token has."""
    if highest <= 5:
        return list(range(1, max(highest, 1) + 1))
    steps = (1, 2, 5) if highest <= 100 else (1,)
    ticks = [1]
    power = 1
    while ticks[-1] < highest:
        ticks += [s * power for s in steps if s * power > ticks[-1]]
        power *= 10
    return ticks[: next(i for i, t in enumerate(ticks) if t >= highest) + 1]


def follow_figure(probs: np.ndarray, ranks: np.ndarray, token: str, where: str) -> go.Figure:
    """One token's probability (top) and rank (bottom, log scale, 1 = the top token) after every
    block at one position."""
    blocks = np.arange(len(probs))
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08)
    name = as_plotly_text([repr(shown(token))])[0]
    fig.add_trace(
        go.Scatter(
            x=blocks,
            y=display_precision(probs),
            mode="lines+markers",
            name=_("probability"),
            hovertemplate=_("after block %{{x}}<br>{name}: probability %{{y:.3g}}<extra></extra>", name=name),
        ),
        row=1,
        col=1,
    )
    fig.add_trace(
        go.Scatter(
            x=blocks,
            y=np.asarray(ranks) + 1,
            mode="lines+markers",
            name=_("rank"),
            hovertemplate=_("after block %{{x}}<br>{name}: rank %{{y:,}}<extra></extra>", name=name),
        ),
        row=2,
        col=1,
    )
    fig.update_yaxes(title=_("probability"), range=[0, 1.02], row=1, col=1)
    ticks = rank_ticks(int(np.max(ranks, initial=0)) + 1)
    fig.update_yaxes(
        title=_("rank (1 = top)"),
        type="log",
        autorange="reversed",
        tickvals=ticks,
        ticktext=[f"{t:,}" for t in ticks],
        row=2,
        col=1,
    )
    fig.update_xaxes(title=_("after block"), row=2, col=1)
    fig.update_layout(
        height=460,
        font=dict(family=FONT, size=TICK_FONT),
        margin=dict(l=10, r=10, t=90, b=10),
        title=_title(_("{token} at {where}", token=name, where=as_plotly_text([where])[0])),
    )
    return legend_on_top(fig)


def changes_table(
    promoted: np.ndarray,
    promoted_by: np.ndarray,
    suppressed: np.ndarray,
    suppressed_by: np.ndarray,
    top: int = 5,
) -> pd.DataFrame:
    """One row per block: the ``top`` tokens whose logit it raised most and lowered most (``[blocks,
    K]`` labels and logit changes), e.g. ``' Paris' +3.1``."""

    def listed(labels, by) -> list[str]:
        return [
            ", ".join(f"{shown(str(t))!r} {b:+.2f}" for t, b in zip(ls[:top], bs[:top], strict=True))
            for ls, bs in zip(labels, by, strict=True)
        ]

    return pd.DataFrame(
        {
            _("block"): np.arange(len(promoted)),
            _("promoted (logit change)"): listed(promoted, promoted_by),
            _("suppressed (logit change)"): listed(suppressed, suppressed_by),
        }
    )


def grid_frame(labels: np.ndarray, probs: np.ndarray, tokens: list[str], positions) -> pd.DataFrame:
    """The grid as rows: block, position, input token, rank (0 = top), predicted token, probability."""
    blocks, n, k = probs.shape
    b, p, r = np.meshgrid(np.arange(blocks), np.arange(n), np.arange(k), indexing="ij")
    return pd.DataFrame(
        {
            "block": b.ravel(),
            "position": np.asarray(positions)[p.ravel()],
            "input_token": np.asarray(tokens, dtype=object)[p.ravel()],
            "rank": r.ravel(),
            "token": labels.ravel(),
            "probability": probs.ravel(),
        }
    )


def follow_frame(probs: np.ndarray, ranks: np.ndarray) -> pd.DataFrame:
    """The followed token after every block: probability and rank (0 = the top token)."""
    return pd.DataFrame({"block": np.arange(len(probs)), "probability": probs, "rank": ranks})
