"""One self-contained HTML file per view: the app's figures, its JavaScript and Plotly.js inline.

Each section of a page is one record drawn as the Transformer page draws it: the model view
(``viz_core.model_view``) whose tiles open a head in the head view (``viz_core.figures.head_view``)
from every head's weights packed in 16 bits (``viz_core.wire``), arrow keys stepping heads, both
run by the app's own ``ui/live_heads.js``; and the line view (``viz_core.line_view`` drawn by
``ui/line_view.js``). The two scripts are read from the package, not copied: ``page.js`` imports
each from a blob URL of its text and mounts it as the Streamlit component would, with the
figures in place of the component's data. Plotly.js is the plotly package's own copy, inlined
(``window.Plotly`` is put back as it was) and run only by the first view of a notebook page: the
next views find it there. Nothing is fetched from any URL.

The same sections draw the live widget (``notebook.widget``) with ``data(live=True)``: no head's
weights ride along, each head comes from the kernel (``head_data``). ``display`` picks which a
notebook shows.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import uuid
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import plotly.io as pio

from attention_atlas.i18n import _, language
from attention_atlas.notebook.assets import driver, plotly_js, scripts
from attention_atlas.viz_core.figures import PLOTLY_CONFIG, dividers, head_title, head_view
from attention_atlas.viz_core.layout import SEPARATOR, VIEW_CHROME, fit_axes, planned_width
from attention_atlas.viz_core.line_view import THRESHOLD, head_colours, line_data
from attention_atlas.viz_core.model_view import model_view
from attention_atlas.viz_core.record import AttentionRecord
from attention_atlas.viz_core.tokens import as_plotly_text
from attention_atlas.viz_core.wire import all_heads, record_id

# Every head's 16-bit weights ride in the file up to this size (minilm's 72 heads to 512 tokens;
# SmolLM2's 270 heads to about 270 tokens); beyond it the head view keeps the head it opened with.
HEADS_BYTES = 40_000_000

# BertViz's display_mode: its model view's light and dark palettes (background, text). Without one a
# view has no background of its own and takes the notebook's text colour, light theme or dark.
PALETTES = {"dark": {"background": "black", "color": "#ccc"}, "light": {"background": "white", "color": "black"}}


def _json(value) -> str:
    """JSON that is safe inside a ``<script>`` element: no ``</`` can close it."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/")


def _figure(fig) -> str:
    return pio.to_json(fig, validate=False)


@dataclass
class Section:
    """One record on a page: which views of it, and where they open."""

    record: AttentionRecord
    title: str = ""
    layer: int = 0
    head: int = 0
    model: bool = True  # the model view with the head view it opens
    line_heads: list[int] = field(default_factory=list)  # the line view of ``layer``, these heads
    labels: tuple[list[int], list[int]] | None = None  # the layers' and heads' own numbers (a subset)
    sentence_b: int | None = None  # BertViz's sentence_b_start: the head view divides A from B there
    verbatim: bool = False  # tokens shown as the record has them (BertViz's calls), not cleaned as the app does
    # BertViz's head view: a layer selector and a colour box per head over the lines of every head,
    # ``line_heads`` the ones switched on; the lines follow the layer a tile or an arrow key opens
    every_head: bool = False
    row: bool = False  # the model view shows the open layer's row of tiles only (``head_view(layer=…)``)

    def data(self, live: bool = False) -> dict:
        """What ``page.js`` draws. ``live``: the live widget's, without any head's weights: its head
        view asks the kernel for each head it opens (``head_data``), the first one too, once the
        tiles are on their way, so they paint without waiting for a 512² figure."""
        record, gid = self.record, f"atlas-{uuid.uuid4().hex[:12]}"
        out: dict = {"title": self.title, "group": gid, "config": {**PLOTLY_CONFIG, "responsive": True}}
        if self.model:
            rid = record_id(gid, record.n_layers, record.n_heads)
            heads = None if live else all_heads(record, rid, HEADS_BYTES)
            fig = model_view(record)
            if self.labels:
                self._relabel(fig, heads)
            if self.row:
                _one_row(fig, self.layer, record.n_layers)
            out["model"] = {"figure": _figure(fig), "grid": [record.n_layers, record.n_heads], "heads": heads}
            if heads is None and not live:
                size = record.weights.size * 2 / 1e6
                out["note"] = (
                    f"Every head of this input would take {size:,.0f} MB, over the file's {HEADS_BYTES / 1e6:,.0f} MB: "
                    "the head view stays on the head it opened with. Pick fewer with include_layers and "
                    "include_heads, or open another with layer= and heads=."
                )
            if live:  # the page asks for it (``head_data``) once the tiles are on their way
                out["head"] = {"open": [self.layer, self.head], "id": rid, "single": True}
            else:
                out["head"] = {**self.head_data(self.layer, self.head, rid), "single": True}
        if self.sentence_b:  # BertViz's filter of the head view: which sentence attends to which
            b = self.sentence_b
            out["sentences"] = {
                "queries": [[0, b], [b, len(record.query_tokens)]],
                "keys": [[0, b], [b, len(record.key_tokens)]],
                "labels": [_("All"), *(_("Sentence {a} → Sentence {b}", a=q, b=k) for q in "AB" for k in "AB")],
                "label": _("Filter"),
            }
        if self.line_heads:
            out["line"] = self.lines(self.layer)
        if self.line_heads and self.every_head:
            layers = self.labels[0] if self.labels else range(record.n_layers)
            out["select"] = {
                "label": _("layer"),
                "layers": [str(n) for n in layers],
                "layer": self.layer,
                "on": self.line_heads,
                "threshold": THRESHOLD,  # the page draws another layer's links from the heads it carries
                "row": self.row,
            }
        return out

    def lines(self, layer: int) -> dict:
        """The line view of ``layer`` (an index into the record): ``line_heads``, or every head in
        its own colour for the head view's boxes (``every_head``); tokens as the page shows them."""
        record = self.record
        if self.every_head:
            out = line_data(record, layer, list(range(record.n_heads)), colours=head_colours(record.n_heads))
        else:
            out = line_data(record, layer, self.line_heads)
        if self.verbatim:
            out.update(queries=record.query_tokens, keys=record.key_tokens)
        return out

    def head_data(self, layer: int, head: int, rid: str) -> dict:
        """The head view of ``layer``, ``head`` (indices into the record): its figure, titled by the
        model's own numbers, and its ``shown`` key for ``live_heads.js``."""
        fig = head_view(self.record, layer, head)
        if self.labels:
            fig.update_layout(title_text=head_title(self.labels[0][layer], self.labels[1][head]))
        if self.verbatim:
            _tokens_as_given(fig, self.record.query_tokens, self.record.key_tokens)
        if self.sentence_b:
            dividers(fig, [self.sentence_b - 0.5], [self.sentence_b - 0.5])
        return {"figure": _figure(fig), "shown": f"{rid}|{layer}|{head}"}

    def _relabel(self, fig, heads: dict | None) -> None:
        """Tiles, their hover and the heads' titles named by the model's own layer and head numbers
        (``include_layers``…). A tile's ``customdata`` stays its place in the grid (a click's
        pick); its hover reads the numbers from ``text`` (layer) and ``hovertext`` (head)."""
        layers, head_ids = self.labels
        fig.update_xaxes(ticktext=[str(h) for h in head_ids])
        fig.update_yaxes(ticktext=[str(layer) for layer in layers])
        tiles = fig.data[1]
        tiles.text = [str(layers[int(layer)]) for layer, _ in tiles.customdata]
        tiles.hovertext = [str(head_ids[int(head)]) for _, head in tiles.customdata]
        tiles.hovertemplate = tiles.hovertemplate.replace("%{customdata[0]}", "%{text}").replace(
            "%{customdata[1]}", "%{hovertext}"
        )
        if heads:
            heads["titles"] = [head_title(layer, h) for layer in layers for h in head_ids]


def _one_row(fig, layer: int, layers: int) -> None:
    """The model view's tiles of ``layer`` alone, a row as tall as one of the grid's (``page.js``
    moves the range to another layer's row when the head view opens one)."""
    tq = fig.layout.meta["tile"][0]
    fig.update_yaxes(range=[layer * (tq + 1) + tq - 0.5, layer * (tq + 1) - 0.5])
    fig.update_layout(height=round(VIEW_CHROME + (fig.layout.height - VIEW_CHROME) / layers))


def _tokens_as_given(fig, queries: list[str], keys: list[str]) -> None:
    """The head view's token axes and hover with the tokens as the record has them (BertViz's
    ``prettify_tokens``: raw, or cleaned as BertViz cleans), not as ``viz_core`` cleans them;
    the ticks refitted to the new labels."""
    for axis, coord, tokens in ((fig.layout.xaxis, "x", keys), (fig.layout.yaxis, "y", queries)):
        names = as_plotly_text([f"{i}{SEPARATOR}{t}" for i, t in enumerate(tokens)])
        axis.categoryarray = names
        fig.data[0][coord] = names
    fit_axes(fig, width=planned_width(fig))


@dataclass
class Figures:
    """Plain Plotly figures on a page, under a title, with a caption (the long-input view: every
    head's thumbnail and one head's overview of a text too long for every head's matrix)."""

    figures: list
    title: str = ""
    caption: str = ""
    record: AttentionRecord | None = None  # none: no head's full matrix is carried
    # the live widget's zoom: a box drawn on the last figure, ``(x range, y range)`` in its cells,
    # answered by a window at full resolution, ``{"figure": JSON, "note": text}``
    zoom: Callable[[list, list], dict] | None = None

    def data(self, live: bool = False) -> dict:
        """What ``page.js`` draws; ``live``: which figure a box zooms into, if the kernel can."""
        out = {
            "title": self.title,
            "config": {**PLOTLY_CONFIG, "responsive": True},
            "figures": [_figure(fig) for fig in self.figures],
            "note": self.caption,
        }
        if live and self.zoom is not None:
            out["zoom"] = len(self.figures) - 1
        return out


def chooser(sections: list, choose: bool) -> dict | None:
    """The selector of a view whose sections show one at a time: its label and each section's name."""
    return {"label": _("Attention"), "options": [s.title for s in sections]} if choose else None


def fragment(sections: list[Section | Figures], palette: str | None = None, choose: bool = False) -> str:
    """The views as an HTML fragment (what a notebook cell shows): a ``<div>``, the data, the
    scripts and Plotly.js inline; ``palette``: BertViz's ``display_mode`` (``PALETTES``)."""
    root = f"atlas-nb-{uuid.uuid4().hex[:12]}"
    spec = {
        "root": root,
        "sections": [s.data() for s in sections],
        "palette": PALETTES.get(palette),
        "choose": chooser(sections, choose),
    }
    return f"""<div id="{root}" class="atlas-notebook" style="font-family: Arial, sans-serif"></div>
<script type="application/json" id="{root}-data">{_json(spec)}</script>
<script type="application/json" id="{root}-js">{_json(scripts())}</script>
<script>window.__atlasPlotlyBefore = window.Plotly;</script>
<script>if (!window.__atlasPlotly) {{
{plotly_js()}
}}</script>
<script>window.__atlasPlotly ||= Promise.resolve(window.Plotly);
window.Plotly = window.__atlasPlotlyBefore;
{driver()}
atlasNotebook("{root}");</script>
"""


def html(
    sections: list[Section], title: str = "Attention Atlas", palette: str | None = None, choose: bool = False
) -> str:
    """The whole file: ``fragment`` in a page of its own."""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{_escape(title)}</title></head>
<body>
{fragment(sections, palette, choose)}</body></html>
"""


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


DISPLAYS = ("auto", "widget", "html")
_display = {"mode": "auto"}


def display(mode: str = "auto") -> None:
    """How views show in a notebook: ``"widget"``, live (anywidget: the kernel sends each head a
    click opens); ``"html"``, the self-contained file's HTML; ``"auto"`` (the default), live in a
    Jupyter kernel where anywidget is installed, except in VS Code and Colab, whose notebooks
    fetch anywidget's front end from a CDN."""
    if mode not in DISPLAYS:
        raise ValueError(f"display is one of {', '.join(DISPLAYS)}, not {mode!r}")
    if mode == "widget" and importlib.util.find_spec("anywidget") is None:
        raise ImportError("the live widget needs anywidget: pip install 'attention-atlas[notebook]'")
    _display["mode"] = mode


def live() -> bool:
    """Whether views show as live widgets now (``display``)."""
    mode = _display["mode"]
    if mode != "auto":
        return mode == "widget"
    if any(k.startswith("VSCODE_") for k in os.environ) or "google.colab" in sys.modules:
        return False
    return getattr(shell(), "kernel", None) is not None and importlib.util.find_spec("anywidget") is not None


def shell():
    """The IPython shell this runs in, if any (a Jupyter kernel's, a terminal's), else None."""
    ipython = sys.modules.get("IPython")
    return ipython.get_ipython() if ipython is not None else None


def _cell(where) -> object | None:
    """The cell running now in the shell ``where`` (its ``ExecutionResult``), if any."""
    return getattr(getattr(where, "displayhook", None), "exec_result", None)


@dataclass
class View:
    """What each notebook call returns once it has drawn it (``draw``): shown in Jupyter (live or
    as HTML, ``display``), ``to_html()`` one self-contained file, ``widget()`` the live widget."""

    sections: list[Section]
    name: str = "model view"
    lang: str = "en"  # the language of titles, hover and captions (``i18n``): "en" or "zh"
    palette: str | None = None  # BertViz's display_mode, "dark" or "light" (``PALETTES``); None: the notebook's
    choose: bool = False  # the sections one at a time behind a selector (BertViz's Encoder / Decoder / Cross)
    _widget: object = field(default=None, repr=False, compare=False)
    _drawn_in: object = field(default=None, repr=False, compare=False)  # the cell its call drew it in

    def to_html(self) -> str:
        with language(self.lang):
            return html(self.sections, f"Attention Atlas: {self.name}", self.palette, self.choose)

    def save(self, path) -> Path:
        path = Path(path)
        path.write_text(self.to_html(), encoding="utf-8")
        return path

    def widget(self):
        """The live widget of these sections (``notebook.widget.LiveView``), made once."""
        if self._widget is None:
            from attention_atlas.notebook.widget import LiveView

            with language(self.lang):
                choose = chooser(self.sections, self.choose)
            self._widget = LiveView(self.sections, lang=self.lang, palette=PALETTES.get(self.palette), choose=choose)
        return self._widget

    def fragment(self) -> str:
        """The HTML a notebook shows when it shows HTML (``fragment``)."""
        with language(self.lang):
            return fragment(self.sections, self.palette, self.choose)

    def draw(self) -> None:
        """Show the view where the call is, as BertViz does (``IPython.display.display``): a call
        followed by ``print``, one ending in ``;`` and calls in a loop all draw. Once a cell: the
        same view shown again in that cell (it is the cell's last line, or ``display(view)``)
        draws nothing more; ``view`` in a later cell draws it again. Outside IPython, nothing."""
        where = shell()
        if where is None:
            return
        from IPython.display import display as show

        cell = _cell(where)
        self._drawn_in = None
        show(self)
        self._drawn_in = weakref.ref(cell) if cell is not None else None

    def _ipython_display_(self) -> None:
        # IPython's display of a view, from ``draw``, a cell's last line or ``display(view)``.
        where = shell()
        cell = _cell(where)
        if where is None or (cell is not None and self._drawn_in is not None and self._drawn_in() is cell):
            return  # drawn by its call in this cell already
        from IPython.display import publish_display_data

        bundle = self._repr_mimebundle_()
        data, metadata = bundle if isinstance(bundle, tuple) else (bundle, {})
        publish_display_data(data, metadata)

    def _repr_mimebundle_(self, include=None, exclude=None):
        # What a display shows (``_ipython_display_`` publishes it): IPython would also send what
        # a _repr_html_ gave, beside the widget, and the HTML carries Plotly.js and every head.
        if live():
            return self.widget()._repr_mimebundle_()
        return {"text/html": self.fragment(), "text/plain": repr(self)}

    @property
    def record(self) -> AttentionRecord:
        """The first section's record: the weights the view draws."""
        return self.sections[0].record

    def __repr__(self) -> str:
        parts = ", ".join(
            f"{s.title or s.record.kind}: {s.record.weights.shape}" for s in self.sections if s.record is not None
        )
        return f"<Attention Atlas {self.name} ({parts})>"
