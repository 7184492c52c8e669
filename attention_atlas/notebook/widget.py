"""The live widget: a view drawn by the notebook's own front end (anywidget), asking the kernel.

The widget carries what the first screen shows: the model view's tiles, which head it opens with
(``page.Section.data(live=True)``), the line view, the long-input figures. The front end asks for
that first head as soon as it has the tiles, and for another at each tile click or arrow key:
``{"pick": {section, layer, head}}``; the kernel answers with that head's figure, so the weights
of every head never travel and the tiles paint without waiting for the head. The head view's
lines of another layer (its selector, a tile, an arrow key) are asked for the same way,
``{"lines": {section, layer}}``, and come back as that layer's line data. On a long-input
view, a box drawn on the overview sends ``{"zoom": {section, x, y}}``; the kernel answers with
the window of tokens under it at full resolution, from the captured queries and keys.
Plotly.js (4.8 MB, 1.5 MB gzipped) is one model every view of a kernel refers to
(``PlotlyScript``): it travels once, and a notebook of ten views loads it once.

A notebook saved with its widget state (JupyterLab's "Save Widget State Automatically", which the
package turns on by default: jupyter-config/lab-settings/) shows its views when reopened before anything
runs: the state holds each view's tiles, line view and scripts, Plotly.js once, and the head each
model view showed last (the front end keeps it in the model's ``drawn``, which only the page sets).
The front end is ``page.js`` and ``widget.js`` joined into one ES module; both mount the app's
own ``ui/live_heads.js`` and ``ui/line_view.js``.

anywidget ships its JupyterLab 4 and Notebook 7 front end inside its wheel (the ``notebook``
extra installs it): nothing is fetched. Where the front end would come from a CDN (VS Code,
Colab) the views stay self-contained HTML (``page.View``, ``display``).
"""

from __future__ import annotations

import math

import anywidget
import traitlets

from attention_atlas.i18n import language
from attention_atlas.notebook.assets import esm, plotly_gz, scripts


class PlotlyScript(anywidget.AnyWidget):
    """Plotly.js gzipped, a model that every live view of the kernel refers to and none displays.
    An anywidget, not a bare ``ipywidgets.Widget``: JupyterLab saves a bare model's bytes as ``{}``
    (its state is copied through JSON), anywidget's model keeps them (``structuredClone``)."""

    _esm = "export default {};"
    source = traitlets.Bytes().tag(sync=True)


_plotly: list[PlotlyScript] = []


def plotly_model() -> PlotlyScript:
    """The kernel's one ``PlotlyScript``, made again if it was closed (``Widget.close_all``)."""
    if not _plotly or _plotly[0].comm is None:
        _plotly[:] = [PlotlyScript(source=plotly_gz())]
    return _plotly[0]


class LiveView(anywidget.AnyWidget):
    """A view's sections as a widget; the kernel sends each head it opens."""

    _esm = esm()
    spec = traitlets.Dict().tag(sync=True)
    scripts = traitlets.Dict().tag(sync=True)
    plotly = anywidget.WidgetTrait().tag(sync=True)

    def __init__(self, sections: list, lang: str = "en", palette: dict | None = None, choose: dict | None = None, **kwargs):
        """``sections``: ``page.Section``s (and ``page.Figures``); ``lang``: their titles' language;
        ``palette``: the background and text colour of BertViz's ``display_mode`` (``page.PALETTES``)."""
        with language(lang):
            data = [s.data(live=True) for s in sections]
            spec = {"sections": data, "palette": palette, "choose": choose}  # choose: ``page.chooser``'s
        super().__init__(spec=spec, scripts=scripts(), plotly=plotly_model(), **kwargs)
        self._sections, self._lang = sections, lang
        # the record id each model view's head keys carry (``shown``), by section
        self._ids = {i: d["head"]["id"] for i, d in enumerate(data) if "head" in d}
        self.on_msg(self._answer)

    def _answer(self, _widget, content, _buffers) -> None:
        if not isinstance(content, dict):
            return
        with language(self._lang):
            self._reply(content)

    def _reply(self, content: dict) -> None:
        if isinstance(content.get("pick"), dict):
            self.send(self.head(content["pick"]))
        elif isinstance(content.get("lines"), dict):
            self.send(self.lines(content["lines"]))
        elif isinstance(content.get("zoom"), dict):
            self.send(self.window(content["zoom"]))

    def head(self, pick: dict) -> dict:
        """The reply to a pick: ``{"head": {section, figure, shown}}``, or ``{"error": why}``."""
        section, layer, head = (pick.get(k) for k in ("section", "layer", "head"))
        if not _whole(section, layer, head):
            return {"error": f"a head is picked by three whole numbers, not {pick!r}"}
        if section not in self._ids:  # out of range, or plain figures (the long-input view)
            return {"error": f"this view has no model view {section}"}
        target = self._sections[section]
        record = target.record
        if not (0 <= layer < record.n_layers and 0 <= head < record.n_heads):
            return {"error": f"layer {layer}, head {head} is outside this view's {record.n_layers} × {record.n_heads} heads"}
        return {"head": {"section": section, **target.head_data(layer, head, self._ids[section])}}

    def lines(self, ask: dict) -> dict:
        """The reply to a layer the head view opens, ``{section, layer}``: that layer's lines,
        ``{"lines": {section, layer, data}}`` (``page.Section.lines``), or ``{"error": why}``."""
        section, layer = ask.get("section"), ask.get("layer")
        if not _whole(section, layer):
            return {"error": f"a layer's lines are asked for by two whole numbers, not {ask!r}"}
        target = self._sections[section] if 0 <= section < len(self._sections) else None
        if not getattr(target, "line_heads", None):
            return {"error": f"this view has no line view {section}"}
        if not 0 <= layer < target.record.n_layers:
            return {"error": f"layer {layer} is outside this view's {target.record.n_layers} layers"}
        return {"lines": {"section": section, "layer": layer, "data": target.lines(layer)}}

    def window(self, box: dict) -> dict:
        """The reply to a box drawn on a long-input overview, ``{section, x: [a, b], y: [c, d]}`` in
        its cells: ``{"window": {section, figure, note}}`` at full resolution, or ``{"error": why}``."""
        section, xs, ys = (box.get(k) for k in ("section", "x", "y"))
        target = self._sections[section] if isinstance(section, int) and 0 <= section < len(self._sections) else None
        if getattr(target, "zoom", None) is None:
            return {"error": f"this view has no overview to zoom into at {section!r}"}
        if not all(_span(v) for v in (xs, ys)):
            return {"error": f"a box is two ranges of two numbers each, not x={xs!r}, y={ys!r}"}
        try:
            return {"window": {"section": section, **target.zoom(xs, ys)}}
        except ValueError as err:
            return {"error": str(err)}


def _whole(*values) -> bool:
    """Whether every one of ``values`` is an int (not a bool): a message's section, layer, head."""
    return all(isinstance(v, int) and not isinstance(v, bool) for v in values)


def _span(value) -> bool:
    """Whether ``value`` is two finite numbers (a box's range on one axis)."""
    return (
        isinstance(value, list)
        and len(value) == 2
        and all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in value)
    )
