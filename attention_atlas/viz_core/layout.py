"""How big tick labels may be and how many fit: from the number of tokens and the space they get.

The server does not know how wide the browser draws a chart (charts stretch to their column),
so widths are planned for ``PLOT_WIDTH``, a full-width chart on the wide layout at 1280 × 720,
the narrower of the two screens the app is checked on; a page that puts a chart in a column
passes that column's width. Heights are the figure's own.

On each categorical axis the font shrinks from the largest size asked for until every label
fits, down to ``MIN_FONT``; below that only every ``stride``-th position is labelled (the
hover still names every cell). Labels side by side along x stay upright when each is one
character (汉字 turned on their side are hard to read); longer ones stay side by side where
they fit and are turned to read upwards (-90°) where they do not, each then in a line's width
(Plotly's own turn, 30°, let long labels such as merged words overlap each other and the axis
title). Labels stacked along y need a line each.
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass

import plotly.graph_objects as go

from attention_atlas.viz_core.tokens import tick_label

PLOT_WIDTH = 820  # px: a full-width chart on the wide layout at 1280 × 720 (940 at 1400 × 900)
TICK_FONT = 15  # px: the charts' text size, and the largest tick label unless a page asks for more
MIN_FONT = 10  # px: smaller labels are hard to read, so the ticks are thinned instead
LINE = 1.3  # em: what a label needs across the axis when stacked (y) or turned (x)
GAP = 4  # px: between two upright labels side by side
STRIDES = (1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 25, 32, 40, 50, 64, 80, 100, 128, 256, 512, 1024)
COLORBAR = 100  # px: a colour bar with its tick labels and title
TITLE = 30  # px: an axis title
PAD = 10  # px: between tick labels and their plot
NUMBERS = 50  # px: the tick labels of a numeric y axis
MODEBAR = 32  # px: the strip of Plotly's toolbar at a chart's top right
SEPARATOR = " · "  # between position and token in a category name (viz_core.tokens.hover_labels)


def text_em(label: str) -> float:
    """A label's width in em: CJK characters and emoji 1 em, anything else about 0.6 em."""
    return sum(1.0 if unicodedata.east_asian_width(ch) in "WF" else 0.6 for ch in label) or 0.6


@dataclass(frozen=True)
class Ticks:
    size: int  # px
    stride: int  # every stride-th position is labelled
    angle: int | None  # 0 (side by side), -90 (turned to read upwards), None (y)


def fit_ticks(
    labels: list[str], length: float, largest: int = TICK_FONT, across: bool = True, smallest: int = MIN_FONT
) -> Ticks:
    """Font and stride for ``labels`` spread evenly over ``length`` px (``across``: an x axis); below
    ``smallest`` px the labels are thinned instead of shrunk."""
    slot = length / max(len(labels), 1)
    widest = max((text_em(t) for t in labels), default=0.6)
    upright = across and widest <= 1.0  # one character each: side by side as they are

    def need(size: float) -> float:  # px one label takes along the axis
        return widest * size + GAP if upright else LINE * size

    size = (slot - GAP) / widest if upright else slot / LINE
    if size >= smallest:
        size, stride = int(min(largest, size)), 1
    else:
        size = min(largest, smallest)
        stride = next((s for s in STRIDES if need(size) <= slot * s), STRIDES[-1])
    if not across:
        return Ticks(size, stride, None)
    # side by side where they fit, else turned upright (-90°): Plotly's own choice, 30°, let long
    # labels (words merged from pieces) overlap each other and the axis title above them
    return Ticks(size, stride, 0 if upright or widest * size + GAP <= slot * stride else -90)


# -- a whole figure ---------------------------------------------------------------------------------


@dataclass
class _Axis:
    """One axis of a figure as plain values, read once (a Plotly property read parses its path
    and walks the figure's tree each time: fit_axes used to spend most of its time there)."""

    name: str  # its layout key: xaxis, yaxis2, …
    names: list[str]  # its categories (empty: not a categorical axis)
    tokens: list[str]  # their tick labels, as ``tokens.tick_label`` writes them
    span: float  # the share of the plot area it spans
    shown: bool  # whether its tick labels are shown
    titled: bool
    side: str | None
    labelled: int  # positions with a tick label

    @classmethod
    def of(cls, name: str, spec: dict) -> _Axis:
        names = list(_given(spec, "categoryarray", ())) if spec.get("type") == "category" else []
        lo, hi = _given(spec, "domain", (0.0, 1.0))
        return cls(
            name,
            names,
            [tick_label(str(c).split(SEPARATOR, 1)[-1]) for c in names],
            hi - lo,
            spec.get("showticklabels") is not False,
            bool((spec.get("title") or {}).get("text")),
            spec.get("side"),
            len(_given(spec, "tickvals", ())),
        )


_AXIS_KEY = re.compile(r"([xy])axis(\d*)")


def _axes(layout: dict, letter: str) -> list[_Axis]:
    """The ``letter`` (x or y) axes of a figure's layout as plain JSON, in number order: ``xaxis``
    always (a figure has it even when nothing sets it), then ``xaxis2``, … where the layout sets them."""
    found = {int(m[2] or 1): k for k in layout if (m := _AXIS_KEY.fullmatch(k)) and m[1] == letter}
    found.setdefault(1, f"{letter}axis")
    return [_Axis.of(found[n], layout.get(found[n]) or {}) for n in sorted(found)]


def _figure_axes(fig: go.Figure) -> list[_Axis]:
    layout = fig.layout.to_plotly_json()
    return _axes(layout, "x") + _axes(layout, "y")


def _given(spec: dict, name: str, default):
    """``spec[name]`` where it is set (a list, a tuple or a numpy array: never tested for truth)."""
    value = spec.get(name)
    return default if value is None else value


def _band(axes: list[_Axis], chosen: dict, across: bool) -> float:
    """px the labels and title of the shown ``axes`` take beside the plot (left for y, above/below for x)."""
    band = 0.0
    for axis in axes:
        if not axis.shown:
            continue
        title = TITLE if axis.titled else 0
        if not axis.names:
            band = max(band, (0 if across else NUMBERS) + title + (LINE * TICK_FONT if across else 0))
            continue
        ticks = chosen.get(axis.name)
        size = ticks.size if ticks else TICK_FONT
        widest = max(text_em(t) for t in axis.tokens)
        turned = across and (ticks.angle == -90 if ticks else widest > 1.0)
        extent = min(widest * size, 180) if (turned or not across) else LINE * size
        band = max(band, extent + title + PAD)
    return band


def _has_colorbar(fig: go.Figure) -> bool:
    if fig.layout.coloraxis.colorscale is not None or fig.layout.coloraxis.cmax is not None:
        return fig.layout.coloraxis.showscale is not False
    return any(t.type == "heatmap" and t.showscale is not False for t in fig.data)


def fit_axes(
    fig: go.Figure, largest: int = TICK_FONT, width: int = PLOT_WIDTH, smallest: int = MIN_FONT
) -> go.Figure:
    """Fit the tick labels of every categorical axis of ``fig`` (positions named ``"3 · token"``) to
    its share of a ``width`` × ``fig.layout.height`` figure: font from ``smallest`` up to ``largest``,
    stride, angle. The width is kept on the figure (``planned_width``) for a later refit."""
    fig._planned_width = width
    colorbar = _has_colorbar(fig)
    fig.update_layout(fitted(fig.layout.to_plotly_json(), colorbar, largest, width, smallest))
    return fig


def fitted(
    layout: dict, colorbar: bool, largest: int = TICK_FONT, width: int = PLOT_WIDTH, smallest: int = MIN_FONT
) -> dict:
    """What ``fit_axes`` changes in a figure's ``layout`` (plain JSON; ``colorbar``: whether the figure
    draws one at its right), as a layout update: a builder that writes its figure as JSON fits it
    before Plotly reads it, once, instead of reading it back from a ``go.Figure``."""
    xs, ys = _axes(layout, "x"), _axes(layout, "y")
    margin = layout.get("margin") or {}
    height = layout.get("height") or 450
    right = COLORBAR if colorbar else 0
    titled = bool((layout.get("title") or {}).get("text"))
    on_top = [a for a in xs if a.side == "top"] if titled else []
    top = (
        _title_room(layout) if on_top else (margin.get("t") or 0)
    )  # a title goes above the axes drawn on top
    chosen: dict[str, Ticks] = {}
    for _ in range(2):  # the y labels' width narrows the x axes, the x labels' height shortens the y axes
        plot_w = (
            width - (margin.get("l") or 0) - (margin.get("r") or 0) - right - _band(ys, chosen, across=False)
        )
        for axis in (a for a in xs if a.names):
            chosen[axis.name] = fit_ticks(axis.tokens, plot_w * axis.span, largest, True, smallest)
        plot_h = height - top - (margin.get("b") or 0) - _band(xs, chosen, across=True)
        for axis in (a for a in ys if a.names):
            chosen[axis.name] = fit_ticks(axis.tokens, plot_h * axis.span, largest, False, smallest)
    update = {a.name: _tick_spec(a, chosen[a.name]) for a in xs + ys if a.names}
    if on_top:
        update["margin"] = {"t": top + _band(on_top, chosen, across=True)}
    return update


def _tick_spec(axis: _Axis, ticks: Ticks) -> dict:
    spec = dict(
        tickmode="array",
        tickvals=axis.names[:: ticks.stride],
        ticktext=axis.tokens[:: ticks.stride],
        tickfont={"size": ticks.size},
    )
    if ticks.angle is not None:
        spec["tickangle"] = ticks.angle
    return spec


def title_room(fig: go.Figure) -> float:
    """px a figure's title takes at the top of the figure (its line and the pad around it)."""
    return _title_room(fig.layout.to_plotly_json())


def _title_room(layout: dict) -> float:
    title = layout.get("title") or {}
    size = (title.get("font") or {}).get("size") or (layout.get("font") or {}).get("size") or TICK_FONT
    return LINE * size + ((title.get("pad") or {}).get("t") or 0) + PAD


def every_label_shown(fig: go.Figure) -> bool:
    """Whether ``fit_axes`` gave each position of every shown categorical axis of ``fig`` its own
    label (stride 1, so at ``smallest`` px or more): the test of whether a width is enough."""
    return all(a.labelled == len(a.names) for a in _figure_axes(fig) if a.names and a.shown)


# -- figures side by side ---------------------------------------------------------------------------

COLUMN_GAP = 16  # px between two Streamlit columns (1 rem)


def column_width(columns: int, width: int = PLOT_WIDTH) -> int:
    """px each of ``columns`` charts side by side gets of a ``width`` px row (Streamlit's columns)."""
    return int((width - COLUMN_GAP * (columns - 1)) / max(columns, 1))


# -- small multiples --------------------------------------------------------------------------------

PANEL_MIN = 140  # px: the narrowest panel of a row of heatmaps
PANEL_MAX_NEED = 190  # px: no panel needs more than this to be read
PANEL_GAP = 20  # px between panels side by side
ROW_GAP = 45  # px between rows of panels (the next row's titles)
ROW_PX = 22  # px per query row of a panel, as far as the panel's shape allows


@dataclass(frozen=True)
class Grid:
    rows: int
    cols: int
    panel_w: float  # px
    panel_h: float  # px


def panel_grid(panels: int, queries: int, keys: int, plot_w: float) -> Grid:
    """Rows × columns for ``panels`` heatmaps of ``queries`` × ``keys`` in ``plot_w`` px, each panel
    wide enough for its key labels; as few rows as that allows, the columns balanced."""
    need = max(PANEL_MIN, min(keys * LINE * 12, PANEL_MAX_NEED))
    most = max(1, min(panels, int((plot_w + PANEL_GAP) // (need + PANEL_GAP))))
    rows = math.ceil(panels / most)
    cols = math.ceil(panels / rows)
    panel_w = (plot_w - (cols - 1) * PANEL_GAP) / cols
    panel_h = min(max(ROW_PX * queries, 120), max(1.2 * panel_w, 240))
    return Grid(rows, cols, panel_w, panel_h)


# -- the model view's tiles -------------------------------------------------------------------------

TILE_MAX = 160  # px: the tallest tile (a small grid would otherwise fill a screen)
TILE_MIN = 24  # px: the shortest tile a head's pattern still shows in
VIEW_MAX = 1400  # px: the model view's height, unless that would make tiles shorter than TILE_MIN
VIEW_CHROME = 70  # px: its head numbers, their title and the margins (measured in chromium)
LAYER_LABELS = 55  # px: its layer numbers, their title and the margins


def tile_size(layers: int, heads: int, width: int = PLOT_WIDTH) -> tuple[float, float]:
    """(width, height) in px of one model-view tile: the heads share the width, and a tile is as
    tall as it is wide where the page's height allows, else as tall as fits (30 × 9: 85 × 44)."""
    tile_w = (width - LAYER_LABELS) / heads
    fits = (VIEW_MAX - VIEW_CHROME) / layers
    return tile_w, max(min(tile_w, TILE_MAX, fits), TILE_MIN)


# -- projector mode ---------------------------------------------------------------------------------

PROJECTOR_FONT = 20  # px: the least any text of a figure gets on a projector
PROJECTOR_CJK = 24  # px: tick labels with Chinese characters (strokes blur first)
PROJECTOR_TITLE = 24  # px: a figure's title
PROJECTOR_GAP = 3  # px between heatmap cells (2 when an axis has more than 32 cells)
# of the planned width: at 150 % zoom of 1280 × 720 a full-width chart is ~820 px, since projector mode
# collapses the sidebar (ui.widgets.sidebar_display); 0.6 while the sidebar stayed open beside it
PROJECTOR_WIDTH = 0.95
HIGH_CONTRAST = "Cividis"  # sequential, readable with every common colour-vision deficiency
OKABE_ITO = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]


def _taller_for_rows(fig: go.Figure, size: int, width: int, most: float = 3.0) -> None:
    """A figure whose rows would lose labels at the projector's ``size`` grows taller instead, up to
    ``most`` times its height: a page scrolls down, never sideways, so every row keeps its label
    (a 17-word sentence stacked at full width showed every other word)."""
    start = fig.layout.height
    while start and fig.layout.height < most * start:
        if all(
            a.labelled == len(a.names) for a in _axes(fig.layout.to_plotly_json(), "y") if a.names and a.shown
        ):
            return
        fig.update_layout(height=int(fig.layout.height * 1.15) + 1)
        fit_axes(fig, largest=size, width=width, smallest=size)


def planned_width(fig: go.Figure) -> int:
    """The width ``fit_axes`` planned ``fig``'s ticks for (``PLOT_WIDTH`` if it never ran)."""
    return getattr(fig, "_planned_width", PLOT_WIDTH)


def has_cjk(labels: list[str]) -> bool:
    """Whether any label holds a wide (Chinese, Japanese, Korean) character."""
    return any(unicodedata.east_asian_width(ch) in "WF" for label in labels for ch in label)


def _raise_fonts(node, floor: int, in_font: bool = False) -> None:
    """Every font size in a figure's dict below ``floor`` raised to it, in place."""
    if isinstance(node, dict):
        for key, value in node.items():
            if in_font and key == "size" and isinstance(value, int | float) and value < floor:
                node[key] = floor
            elif isinstance(value, dict | list | tuple):
                _raise_fonts(value, floor, key.endswith("font"))
    elif isinstance(node, list | tuple):
        for item in node:
            _raise_fonts(item, floor)


def _explicit_fonts(fig: go.Figure, size: int = PROJECTOR_FONT) -> None:
    """Every text of ``fig`` at least ``size`` px, set where it is drawn: a host's template (Streamlit
    themes its charts) would otherwise give axes, legends and colour bars their own smaller font."""
    fig.update_layout(font_size=size, hoverlabel_font_size=size, legend_font_size=size)
    for axis in [*fig.select_xaxes(), *fig.select_yaxes()]:
        axis.title.font.size = size
        if (axis.tickfont.size or 0) < size:
            axis.tickfont.size = size
        if axis.type == "log" and axis.tickvals is None:
            axis.dtick = 1  # powers of 10 only: Plotly draws the 2s and 5s between them at ¾ size
    for note in fig.layout.annotations:
        note.font.size = max(note.font.size or 0, size)
    bars = [fig.layout[k].colorbar for k in fig.layout if k.startswith("coloraxis")]
    bars += [t.colorbar for t in fig.data if "colorbar" in t]
    for bar in bars:
        bar.tickfont.size = size
        bar.title.font.size = size


def _diverging(trace_or_axis, low: str, mid: str) -> bool:
    lo = getattr(trace_or_axis, low, None)
    return getattr(trace_or_axis, mid, None) is not None or (lo is not None and lo < 0)


def high_contrast(fig: go.Figure) -> go.Figure:
    """Sequential colour scales → ``HIGH_CONTRAST`` (diverging ones, centred on 0, stay: red–blue
    reads with colour-blindness), line and bar colours → the Okabe–Ito palette."""
    for trace in fig.data:
        if trace.type == "heatmap" and trace.coloraxis is None and not _diverging(trace, "zmin", "zmid"):
            trace.colorscale = HIGH_CONTRAST
    for name in [k for k in fig.layout if k.startswith("coloraxis")]:
        axis = fig.layout[name]
        if axis.colorscale is not None and not _diverging(axis, "cmin", "cmid"):
            axis.colorscale = HIGH_CONTRAST
    fig.update_layout(colorway=OKABE_ITO)
    return fig


def projector(fig: go.Figure, width: int | None = None, contrast: bool = False) -> go.Figure:
    """A copy of ``fig`` for the back of a classroom: every text at least ``PROJECTOR_FONT`` px, token
    ticks ``PROJECTOR_FONT`` (``PROJECTOR_CJK`` with Chinese characters), rows given their height (the
    figure grows) and columns thinned where they do not fit the width, thicker gaps between heatmap cells and lines, and ``high_contrast`` colours if asked.
    Ticks are planned for ``width`` px, by default ``PROJECTOR_WIDTH`` of the figure's own plan: a
    projector is often driven at 150 %, where the same chart gets about as many CSS pixels as at 100 %
    only because projector mode collapses the sidebar."""
    width = width or int(planned_width(fig) * PROJECTOR_WIDTH)
    fig = go.Figure(fig)
    axes = [a for a in _figure_axes(fig) if a.names]
    size = PROJECTOR_CJK if any(has_cjk(a.tokens) for a in axes) else PROJECTOR_FONT
    if fig.layout.title.text:  # before the ticks are fitted: the title's room above them depends on it
        fig.update_layout(title_font_size=PROJECTOR_TITLE)
    if axes:
        fit_axes(fig, largest=size, width=width, smallest=size)
        _taller_for_rows(fig, size, width)
    for trace in fig.data:
        if trace.type == "heatmap":
            for gap, cells in (("xgap", trace.x), ("ygap", trace.y)):
                if trace[gap]:
                    trace[gap] = PROJECTOR_GAP if cells is None or len(cells) <= 32 else 2
        elif trace.type == "scatter" and trace.mode and "lines" in trace.mode:
            trace.line.width = max(trace.line.width or 0, 3)
    _explicit_fonts(fig)
    spec = fig.to_dict()
    _raise_fonts(spec, PROJECTOR_FONT)
    fig = go.Figure(spec)
    return high_contrast(fig) if contrast else fig
