"""The live widget: a view drawn by the notebook's own front end (anywidget), asking the kernel.

The widget carries what the first screen shows: the model view's tiles, which head it opens with
(``page.Section.data(live=True)``), the line view, the long-input figures. The front end asks for
that first head as soon as it has the tiles, and for another at each tile click or arrow key:
``{"pick": {section, layer, head}}``; the kernel answers with that head's figure, so the weights
of every head never travel and the tiles paint without waiting for the head. Plotly.js (4.8 MB) goes once per page, when
the first widget asks for it (``{"need": "plotly"}``): a notebook of ten views loads it once.
The front end is ``page.js`` and ``widget.js`` joined into one ES module; both mount the app's
own ``ui/live_heads.js`` and ``ui/line_view.js``.

anywidget ships its JupyterLab 4 and Notebook 7 front end inside its wheel (the ``notebook``
extra installs it): nothing is fetched. Where the front end would come from a CDN (VS Code,
Colab) the views stay self-contained HTML (``page.View``, ``display``).
"""

from __future__ import annotations

import anywidget
import traitlets

from attention_atlas.notebook.assets import esm, plotly_js, scripts


class LiveView(anywidget.AnyWidget):
    """A view's sections as a widget; the kernel sends each head it opens."""

    _esm = esm()
    spec = traitlets.Dict().tag(sync=True)
    scripts = traitlets.Dict().tag(sync=True)

    def __init__(self, sections: list, **kwargs):
        """``sections``: ``page.Section``s (and ``page.Figures``)."""
        data = [s.data(live=True) for s in sections]
        super().__init__(spec={"sections": data}, scripts=scripts(), **kwargs)
        self._sections = sections
        # the record id each model view's head keys carry (``shown``), by section
        self._ids = {i: d["head"]["id"] for i, d in enumerate(data) if "head" in d}
        self.on_msg(self._answer)

    def _answer(self, _widget, content, _buffers) -> None:
        if not isinstance(content, dict):
            return
        if content.get("need") == "plotly":
            self.send({"plotly": plotly_js()})
        elif isinstance(content.get("pick"), dict):
            self.send(self.head(content["pick"]))

    def head(self, pick: dict) -> dict:
        """The reply to a pick: ``{"head": {section, figure, shown}}``, or ``{"error": why}``."""
        section, layer, head = (pick.get(k) for k in ("section", "layer", "head"))
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (section, layer, head)):
            return {"error": f"a head is picked by three whole numbers, not {pick!r}"}
        if section not in self._ids:  # out of range, or plain figures (the long-input view)
            return {"error": f"this view has no model view {section}"}
        target = self._sections[section]
        record = target.record
        if not (0 <= layer < record.n_layers and 0 <= head < record.n_heads):
            return {"error": f"layer {layer}, head {head} is outside this view's {record.n_layers} × {record.n_heads} heads"}
        return {"head": {"section": section, **target.head_data(layer, head, self._ids[section])}}
