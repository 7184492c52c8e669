"""Figure builders: data in, ``go.Figure`` out. They never call streamlit or ``.show()``.

Token axes are positions: each column (or bar) is a category named ``"<pos> · <token>"``
(unique even when a token repeats) and its tick shows just the token. The hover
names query and key with position and token, and the weight. Tick font, stride and angle
follow the number of tokens and the space (``viz_core.layout``); a builder takes the
``width`` it is planned for, a full-width chart by default.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from attention_atlas.i18n import _
from attention_atlas.viz_core.layout import (
    COLORBAR,
    MODEBAR,
    PAD,
    PLOT_WIDTH,
    ROW_GAP,
    TICK_FONT,
    _title_room,
    fit_axes,
    fitted,
    panel_grid,
    planned_width,
    text_em,
)
from attention_atlas.viz_core.record import AttentionRecord
from attention_atlas.viz_core.tokens import as_plotly_text, clean_tokens, hover_labels, tick_label

__all__ = ["PLOT_WIDTH"]  # re-exported: pages plan their charts' widths with it

# CJK-capable fonts first, so 黄鹂 reads as well as "cat" on a projector.
FONT = "Noto Sans CJK SC, Source Han Sans SC, PingFang SC, Microsoft YaHei, Arial, sans-serif"
ATTENTION_SCALE = "Blues"
DIVERGING_SCALE = "RdBu_r"
# Plotly's options for every chart the app or a notebook file draws: no logo, PNGs at twice the size.
PLOTLY_CONFIG = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 2}}
TINY = np.float32(2.0**-62)  # smaller magnitudes are sent to the browser as 0


def display_precision(values: np.ndarray) -> np.ndarray:
    """float32 rounded to 10 mantissa bits (≈ 3.3 significant digits) for sending to the browser.

    The hover shows 3 significant digits, so nothing visible changes, but the base64
    payload shrinks (a 512 × 512 heatmap stays under 1.5 MB). Magnitudes below ``TINY``
    (2⁻⁶² ≈ 2e-19) are sent as 0, which lets every attention weight travel in 16 bits
    (``ui.live_heads``). Records keep full precision.
    """
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    rounded = ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)
    return np.where(np.abs(rounded) < TINY, np.float32(0), rounded)


def _base(title: str, height: int | None = None) -> dict:
    """The layout every figure starts from: its title at the top left, the app's font, thin margins."""
    return dict(
        title=dict(text=title, x=0.01, xanchor="left", yref="container", y=1, yanchor="top", pad=dict(t=8))
        if title
        else None,
        font=dict(family=FONT, size=TICK_FONT),
        margin=dict(l=10, r=10, t=50 if title else 20, b=10),
        height=height,
    )


def _base_layout(fig: go.Figure, title: str, height: int | None = None) -> go.Figure:
    return fig.update_layout(_base(title, height))


def _axis_ticks(tokens: list[str]) -> dict:
    """A token axis: one category per position, each tick showing its token (``fit_axes`` then
    sizes and thins the ticks)."""
    labels = as_plotly_text(hover_labels(tokens))
    return dict(
        type="category",
        categoryorder="array",
        categoryarray=labels,
        tickmode="array",
        tickvals=labels,
        ticktext=as_plotly_text([tick_label(t) for t in clean_tokens(tokens)]),
        automargin=True,
    )


def _heatmap_trace(
    matrix: np.ndarray,
    query_tokens: list[str],
    key_tokens: list[str],
    coloraxis: str | None = None,
    zmin: float = 0.0,
    zmax: float | None = None,
    label: str | None = None,
) -> dict:
    """A heatmap trace as Plotly JSON (the figure that holds it validates it once)."""
    label = _("weight") if label is None else label
    m = np.asarray(matrix)
    if m.shape != (len(query_tokens), len(key_tokens)):
        raise ValueError(
            f"matrix is {m.shape} but there are {len(query_tokens)} query and {len(key_tokens)} key tokens"
        )
    trace = dict(
        type="heatmap",
        z=display_precision(m),
        x=as_plotly_text(hover_labels(key_tokens)),
        y=as_plotly_text(hover_labels(query_tokens)),
        hovertemplate=_("query %{{y}}<br>key %{{x}}<br>{label} %{{z:.3g}}<extra></extra>", label=label),
        xgap=1 if len(key_tokens) <= 64 else 0,
        ygap=1 if len(query_tokens) <= 64 else 0,
    )
    if coloraxis:
        trace["coloraxis"] = coloraxis
    else:
        trace.update(colorscale=ATTENTION_SCALE, zmin=zmin, zmax=zmax if zmax is not None else float(m.max()))
    return trace


def heatmap(
    matrix: np.ndarray,
    query_tokens: list[str],
    key_tokens: list[str],
    title: str = "",
    zmax: float | None = None,
    x_title: str | None = None,
    y_title: str | None = None,
    label: str | None = None,
    width: int = PLOT_WIDTH,
    ticks: int = TICK_FONT,
) -> go.Figure:
    """One ``[query, key]`` matrix; queries run top to bottom, keys left to right; token labels up to
    ``ticks`` px (``larger_ticks``), fitted to ``width``. The axes are "key" and "query" and the
    values "weight" (in the language in force) unless given."""
    x_title = _("key") if x_title is None else x_title
    y_title = _("query") if y_title is None else y_title
    n = max(len(query_tokens), 4)
    layout = _base(title, height=min(900, 160 + 34 * n) if n <= 48 else 800)
    layout["xaxis"] = dict(title=dict(text=x_title), side="top", **_axis_ticks(key_tokens))
    layout["yaxis"] = dict(title=dict(text=y_title), autorange="reversed", **_axis_ticks(query_tokens))
    if title:  # above the key labels and their axis title, which stand on top (fit_axes makes the room)
        layout["title"]["automargin"] = True
    return _fitted_figure(
        [_heatmap_trace(matrix, query_tokens, key_tokens, zmax=zmax, label=label)], layout, ticks, width
    )


def record_heatmap(record: AttentionRecord, layer: int = 0, head: int = 0, title: str = "") -> go.Figure:
    """One head of a record, as a heatmap."""
    return heatmap(record.head(layer, head), record.query_tokens, record.key_tokens, title=title)


def heatmap_row(
    panels: dict[str, np.ndarray],
    query_tokens: list[str],
    key_tokens: list[str],
    title: str = "",
    zmin: float = 0.0,
    zmax: float | None = None,
    colorscale: str = ATTENTION_SCALE,
    label: str | None = None,
    width: int = PLOT_WIDTH,
) -> go.Figure:
    """Several ``[query, key]`` matrices on one shared colour scale: side by side, in as many rows
    as ``width`` needs for each panel's key labels to be read. Query labels show in the first
    column, key labels under the lowest panel of each column."""
    if not panels:
        raise ValueError("heatmap_row needs at least one panel")
    label = _("weight") if label is None else label
    names = list(panels)
    labels = max(text_em(t) for t in clean_tokens(query_tokens)) * TICK_FONT + PAD  # the query labels
    plot_w = width - 20 - COLORBAR - labels
    grid = panel_grid(len(names), len(query_tokens), len(key_tokens), plot_w)
    plot_h = grid.rows * grid.panel_h + (grid.rows - 1) * ROW_GAP
    layout = _grid_layout(
        grid.rows,
        grid.cols,
        tuple(names),
        min(0.2, 20 / plot_w) if grid.cols > 1 else 0.03,
        ROW_GAP / plot_h if grid.rows > 1 else 0.03,
    )
    top = zmax if zmax is not None else max(float(np.max(m)) for m in panels.values())
    traces = []
    for i, name in enumerate(names):
        col = i % grid.cols
        n = "" if i == 0 else str(i + 1)  # the subplot's axes: x, y, then x2, y2, …
        traces.append(
            _heatmap_trace(panels[name], query_tokens, key_tokens, coloraxis="coloraxis", label=label)
            | {"xaxis": f"x{n}", "yaxis": f"y{n}"}
        )
        lowest = i + grid.cols >= len(names)  # no panel under this one
        # where a panel's labels are hidden, so are its tick marks (dashes between the panels)
        layout[f"xaxis{n}"].update(showticklabels=lowest, **_axis_ticks(key_tokens), **_no_ticks(lowest))
        layout[f"yaxis{n}"].update(
            autorange="reversed", showticklabels=col == 0, **_axis_ticks(query_tokens), **_no_ticks(col == 0)
        )
    layout["coloraxis"] = dict(
        colorscale=colorscale, cmin=zmin, cmax=top, colorbar=dict(title=dict(text=label))
    )
    top = 60 if title else MODEBAR + 26  # the first row's panel titles, under the title or the toolbar
    layout.update(_base(title, height=int(plot_h + top + 100)))
    layout["margin"]["t"] = top
    return _fitted_figure(traces, layout, TICK_FONT, width)


def _grid_layout(rows: int, cols: int, titles: tuple[str, ...], across: float, down: float) -> dict:
    """The layout ``make_subplots(rows, cols, subplot_titles=titles, horizontal_spacing=across,
    vertical_spacing=down)`` makes, as JSON (axis domains and anchors, panel titles) and with the
    same floats, but without building a figure (which took 30 ms: a third of a six-panel row)."""
    width = (1.0 - across * (cols - 1)) / cols
    height = (1.0 - down * (rows - 1)) / rows
    layout: dict = {}
    annotations = []
    for cell in range(rows * cols):
        row, col = divmod(cell, cols)  # row 0 at the top
        x0 = sum([width] * col) + col * across
        y0 = sum([height] * (rows - 1 - row)) + (rows - 1 - row) * down
        x, y = [x0, x0 + width], [_clip(y0), _clip(y0 + height)]
        n = "" if cell == 0 else str(cell + 1)
        layout[f"xaxis{n}"] = {"anchor": f"y{n}", "domain": x}
        layout[f"yaxis{n}"] = {"anchor": f"x{n}", "domain": y}
        if cell < len(titles) and titles[cell]:
            annotations.append(
                {
                    "font": {"size": 16},
                    "showarrow": False,
                    "text": titles[cell],
                    "x": sum(x) / 2.0,
                    "xanchor": "center",
                    "xref": "paper",
                    "y": y[1],
                    "yanchor": "bottom",
                    "yref": "paper",
                }
            )
    if annotations:
        layout["annotations"] = annotations
    return layout


def _clip(y: float) -> float:
    """make_subplots' rounding of a domain end that floats just past 0 or 1."""
    return 0.0 if -0.01 < y < 0.0 else 1.0 if 1.0 < y < 1.01 else y


def _fitted_figure(traces: list, layout: dict, ticks: int, width: int, colorbar: bool = True) -> go.Figure:
    """A figure from its JSON with its token axes fitted (``fit_axes``), built and validated by
    Plotly once: each ``update_*`` on a ``go.Figure`` re-walks its tree (0.2 s for a six-panel row)."""
    _merge(layout, fitted(layout, colorbar=colorbar, largest=ticks, width=width))
    fig = go.Figure(data=traces, layout=layout)
    fig._planned_width = width
    return fig


def _merge(into: dict, update: dict) -> None:
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value


def legend_on_top(fig: go.Figure) -> go.Figure:
    """A horizontal legend above the plot, under the strip of Plotly's toolbar (drawn over the chart's
    top right corner while the pointer is on it) and under the title: Plotly reserves the rows the
    legend wraps into above the plot, so neither the toolbar nor the title lies across it."""
    return fig.update_layout(legend=_top_legend(fig.layout.to_plotly_json()))


def _top_legend(layout: dict) -> dict:
    """``legend_on_top``'s legend for a figure's ``layout`` (plain JSON)."""
    room = max(MODEBAR, _title_room(layout) if (layout.get("title") or {}).get("text") else 0)
    top = 1 - room / (layout.get("height") or 450)
    return dict(orientation="h", x=0, yref="container", y=top, yanchor="top")


def _no_ticks(shown: bool) -> dict:
    """An axis whose labels are hidden gets no tick marks either (the theme's own where they show)."""
    return {} if shown else {"ticks": ""}


def lines(
    x: np.ndarray,
    series: dict[str, np.ndarray],
    x_title: str,
    y_title: str,
    title: str = "",
    mode: str = "lines",
    log_x: bool = False,
) -> go.Figure:
    """One line per series over a shared x."""
    traces = [
        dict(type="scatter", x=np.asarray(x), y=np.asarray(y), mode=mode, name=name)
        for name, y in series.items()
    ]
    layout = _base(title, height=380)
    layout.update(xaxis=dict(title=dict(text=x_title)), yaxis=dict(title=dict(text=y_title)))
    if log_x:
        layout["xaxis"]["type"] = "log"
    if len(series) <= 6:  # more would take rows of the plot: right
        layout["legend"] = _top_legend(layout)
    return go.Figure(data=traces, layout=layout)


def grouped_bars(
    tokens: list[str],
    series: dict[str, np.ndarray],
    x_title: str,
    y_title: str,
    title: str = "",
    width: int = PLOT_WIDTH,
    ticks: int = TICK_FONT,
) -> go.Figure:
    """Bars per token position, one colour per series (e.g. entropy per query, per scorer); a token
    that repeats keeps one group of bars per position; token labels up to ``ticks`` px."""
    positions = as_plotly_text(hover_labels(tokens))
    bars = [
        dict(
            type="bar",
            x=positions,
            y=np.asarray(v),
            name=name,
            hovertemplate=f"%{{x}}<br>{name} %{{y:.3g}}<extra></extra>",
        )
        for name, v in series.items()
    ]
    layout = _base(title, height=380)
    layout.update(
        barmode="group",
        xaxis=dict(title=dict(text=x_title), **_axis_ticks(tokens)),
        yaxis=dict(title=dict(text=y_title)),
    )
    layout["legend"] = _top_legend(layout)
    return _fitted_figure(bars, layout, ticks, width, colorbar=False)


def matrix_heatmap(
    matrix: np.ndarray,
    x_title: str,
    y_title: str,
    title: str = "",
    colorscale: str = DIVERGING_SCALE,
    zmid: float | None = 0.0,
    x: np.ndarray | None = None,
    y: np.ndarray | None = None,
    label: str | None = None,
) -> go.Figure:
    """A numeric matrix on numeric axes (positional-encoding P, P·Pᵀ, binary digits); its values are
    "value" (in the language in force) unless ``label`` names them."""
    label = _("value") if label is None else label
    m = np.asarray(matrix, dtype=np.float32)
    fig = go.Figure(
        go.Heatmap(
            z=display_precision(m),
            x=x,
            y=y,
            colorscale=colorscale,
            zmid=zmid,
            colorbar=dict(title=label),
            hovertemplate=f"{y_title} %{{y}}<br>{x_title} %{{x}}<br>{label} %{{z:.3g}}<extra></extra>",
        )
    )
    fig.update_xaxes(title=x_title)
    fig.update_yaxes(title=y_title, autorange="reversed")
    return _base_layout(fig, title, height=460)


def positional_curves(P: np.ndarray, columns: list[int], title: str = "") -> go.Figure:
    """Columns of P against position, as the attention-pooling tutorial plots columns 6–9."""
    P = np.asarray(P)
    series = {_("col {c}", c=c): P[:, c] for c in columns}
    return lines(np.arange(P.shape[0]), series, _("position (row of P)"), _("encoding value"), title)


def nadaraya_watson(
    x_train: np.ndarray,
    y_train: np.ndarray,
    x_query: np.ndarray,
    y_truth: np.ndarray,
    estimates: dict[str, np.ndarray],
    title: str = "",
) -> go.Figure:
    """Training points, the true function and each estimate ``f(x)`` (gaps where undefined)."""
    fig = go.Figure(
        [
            go.Scatter(
                x=x_train,
                y=y_train,
                mode="markers",
                name=_("training data (keys, values)"),
                marker=dict(color="rgba(255,127,14,0.6)", size=7),
            ),
            go.Scatter(
                x=x_query, y=y_truth, mode="lines", name=_("truth"), line=dict(color="black", dash="dash")
            ),
        ]
    )
    for name, est in estimates.items():
        fig.add_trace(
            go.Scatter(
                x=x_query,
                y=np.asarray(est, dtype=float),
                mode="lines",
                name=name,
                line=dict(width=3),
                connectgaps=False,
            )
        )
    fig.update_xaxes(title=_("x (query)"))
    fig.update_yaxes(title="y")
    return legend_on_top(_base_layout(fig, title, height=420))


def scatter_groups(
    frame,
    x: str,
    y: str,
    group: str,
    label_columns: list[str],
    title: str = "",
    labels: dict | None = None,
    group_name: Callable[[str], str] = str,
) -> go.Figure:
    """One marker per row of ``frame``, one colour per value of ``group``; hover names the row.
    ``labels``: what to call a column on the axes and in the hover (its name where not given);
    ``group_name``: what to call a group in the legend and the hover (a stored English pattern in the
    visitor's language)."""
    names = {x: x, y: y, **(labels or {})}
    fig = go.Figure()
    for value, part in frame.groupby(group, sort=True):
        name = group_name(str(value))
        labels = part[label_columns].astype(str).agg(" · ".join, axis=1)
        fig.add_trace(
            go.Scatter(
                x=part[x],
                y=part[y],
                mode="markers",
                name=name,
                text=labels,
                marker=dict(size=10),
                hovertemplate=f"%{{text}}<br>{names[x]} %{{x:.3g}}<br>{names[y]} %{{y:.3g}}<extra>{name}</extra>",
            )
        )
    fig.update_xaxes(title=names[x])
    fig.update_yaxes(title=names[y])
    return legend_on_top(_base_layout(fig, title, height=420))


def head_title(layer: int, head: int | str) -> str:
    """The head view's title: ``layer 3, head 0`` or ``layer 3, heads averaged``."""
    if head == "average":
        return _("layer {layer}, heads averaged", layer=layer)
    return _("layer {layer}, head {head}", layer=layer, head=int(head))


def head_matrix(record: AttentionRecord, layer: int, head: int | str = 0) -> np.ndarray:
    """``[query, key]`` weights of one head, or of the layer's heads averaged (``"average"``)."""
    return record.weights[layer].mean(0) if head == "average" else record.head(layer, int(head))


def head_view(record: AttentionRecord, layer: int, head: int | str = 0, width: int = PLOT_WIDTH) -> go.Figure:
    """One head (or ``"average"`` of a layer's heads) with its title: the page's and the CLI's figure."""
    matrix = head_matrix(record, layer, head)
    return heatmap(matrix, record.query_tokens, record.key_tokens, title=head_title(layer, head), width=width)


def larger_ticks(fig: go.Figure, size: int, width: int | None = None) -> go.Figure:
    """Token tick labels up to ``size`` px (characters that must read from the back of a room),
    smaller where the tokens would not fit: a 32-character couplet gets less than a 7-character one.
    Planned for ``width`` px, by default the width the figure was built for."""
    return fit_axes(fig, largest=size, width=width or planned_width(fig))


CLAUSE_MARKS = frozenset("，。、；！？,;!?")  # a couplet's clause ends at one of these


def clause_bounds(tokens: list[str]) -> list[float]:
    """Positions between clauses: half a cell after each clause mark that is not the last token."""
    return [i + 0.5 for i, t in enumerate(tokens[:-1]) if t.strip() in CLAUSE_MARKS]


def clause_dividers(fig: go.Figure, query_tokens: list[str], key_tokens: list[str]) -> go.Figure:
    """Thin lines between a heatmap's clauses on both axes, so that a multi-clause couplet reads as
    its clauses: each clause's block of the alignment is framed. No clause marks, no lines."""
    return dividers(fig, clause_bounds(key_tokens), clause_bounds(query_tokens))


def dividers(fig: go.Figure, xs: list[float], ys: list[float]) -> go.Figure:
    """Thin dotted lines across a heatmap at key positions ``xs`` and query positions ``ys``."""
    line = dict(color="rgba(90, 90, 90, 0.9)", width=2, dash="dot")
    for x in xs:
        fig.add_vline(x=x, line=line)
    for y in ys:
        fig.add_hline(y=y, line=line)
    return fig


def attribution_heatmap(
    scores: dict[str, np.ndarray],
    tokens: list[str],
    signed: set[str] | frozenset[str] = frozenset(),
    title: str = "",
    width: int = PLOT_WIDTH,
    labels: dict[str, str] | None = None,
) -> go.Figure:
    """Methods × input tokens (``models.analysis.attribution``): each row divided by its largest |score|,
    on one diverging scale from −1 to 1, so a signed method's evidence against the output shows blue
    and an unsigned method (attention, saliency) uses the red half; the hover keeps each raw score.
    Rows are named by ``labels`` (method → name shown; default the method's id), a signed one with ±."""
    names = list(scores)
    raw = (
        np.stack([np.asarray(scores[m], np.float64) for m in names]) if names else np.zeros((0, len(tokens)))
    )
    largest = np.abs(raw).max(1, keepdims=True)
    normed = np.divide(raw, largest, out=np.zeros_like(raw), where=largest > 0).astype(np.float32)
    shown = labels or {}
    rows = [f"{shown.get(m, m)} ±" if m in signed else shown.get(m, m) for m in names]
    x = as_plotly_text(hover_labels(tokens))
    trace = go.Heatmap(
        z=display_precision(normed),
        x=x,
        y=rows,
        customdata=raw.astype(np.float32),
        colorscale=DIVERGING_SCALE,
        zmin=-1,
        zmax=1,
        colorbar=dict(title=_("share of the row's largest")),
        hovertemplate=_(
            "%{y}<br>token %{x}<br>score %{customdata:.3g}, %{z:.2f} of the row's largest<extra></extra>"
        ),
        xgap=1 if len(tokens) <= 64 else 0,
        ygap=1,
    )
    layout = _base(title, height=140 + 34 * max(len(names), 2))
    layout["xaxis"] = dict(title=dict(text=_("input token")), **_axis_ticks(tokens))
    layout["yaxis"] = dict(autorange="reversed", type="category")
    return fit_axes(go.Figure(trace, layout), width=width)


def faithfulness_bars(
    methods: list[str],
    fractions: list[float],
    comprehensiveness: np.ndarray,
    sufficiency: np.ndarray,
    title: str = "",
) -> go.Figure:
    """Each method's comprehensiveness (higher: its top tokens matter more) and sufficiency (lower:
    its top tokens alone keep the output) at each share of the input tokens, side by side."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=[_("comprehensiveness ↑"), _("sufficiency ↓")])
    for col, values in enumerate((comprehensiveness, sufficiency)):
        for r, frac in enumerate(fractions):
            name = _("top {share:.0%}", share=frac)
            fig.add_trace(
                go.Bar(
                    x=methods,
                    y=np.asarray(values)[:, r],
                    name=name,
                    legendgroup=name,
                    showlegend=col == 0,
                    marker_color=("#9ecae1", "#4292c6", "#08519c")[r % 3],
                    hovertemplate=f"%{{x}}<br>{name} %{{y:.3g}}<extra></extra>",
                ),
                row=1,
                col=col + 1,
            )
    fig.update_yaxes(title_text=_("change of log p"), row=1, col=1)
    fig.update_layout(barmode="group")
    _base_layout(fig, title, height=400)
    return legend_on_top(fig)
