"""Model view + head view that switch heads in the browser (a Streamlit v2 component).

``st.plotly_chart`` mounts a new chart whenever its figure changes, so a click on a
model-view tile cost a server round trip and a fresh plot (~0.6 s here). Both views are
drawn by ``live_heads.js`` with Plotly.js instead: the page keeps every head's weights
(when they fit in ``MAX_HEADS_BYTES``) and redraws a clicked head at once; Python then
hears of the click and moves the layer and head widgets to match. The figures are
exactly those ``atlas figure`` writes.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import plotly
import plotly.graph_objects as go
import plotly.io as pio
import streamlit as st
from streamlit import runtime
from streamlit.components.v1 import declare_component

from attention_atlas import i18n
from attention_atlas.i18n import N_, _, ngettext
from attention_atlas.ui.widgets import PLOTLY_CONFIG, csv_button, for_screen, hold

HERE = Path(__file__).resolve().parent
PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
# The plotly package's folder, served by Streamlit as a v1 component's files at /component/<name>/:
# plotly.js comes from the installed package, whatever flags the server was started with.
PLOTLY_FILES = "plotly"
PLOTLY_COMPONENT = f"{__name__}.{PLOTLY_FILES}"  # declare_component's name: the caller's module + ours

HINT = N_(
    "Each tile is one head, scaled to its own maximum. Click a tile to open it below; in the head "
    "view (click it first), ←/→ step through the heads and ↑/↓ through the layers."
)

_component = st.components.v2.component(
    "atlas_live_heads", js=(HERE / "live_heads.js").read_text(encoding="utf-8"), isolate_styles=False
)


def layers_heads(layers: int, heads: int) -> str:
    """The model view's grid, ``'6 layers × 12 heads'`` in the visitor's language. (``.format(n=…)``
    after ``ngettext``, not ``n=`` in it: ``i18n.ngettext``'s own count is a parameter named ``n``.)"""
    return _(
        "{layers} × {heads}",
        layers=ngettext("{n:,} layer", "{n:,} layers", layers).format(n=layers),
        heads=ngettext("{n:,} head", "{n:,} heads", heads).format(n=heads),
    )


def plotly_url() -> str:
    """The URL of the plotly package's own plotly.min.js, served from where it is installed (nothing is
    copied or written). Its folder is registered once per server, from a script run (which
    ``declare_component`` needs); the page loads the file once (``live_heads.js``)."""
    registry = runtime.get_instance().component_registry if runtime.exists() else None
    if registry is not None and registry.get_component_path(PLOTLY_COMPONENT) is None:
        declare_component(PLOTLY_FILES, path=PLOTLY_JS.parent)
    base = st.get_option("server.baseUrlPath").strip("/")
    return "/".join(["", *([base] if base else []), "component", PLOTLY_COMPONENT, PLOTLY_JS.name])


def _mount(role: str, fig: go.Figure, key: str, data: dict, **callbacks: Callable[[], None]) -> None:
    """One view of the group ``key``: its figure exactly as ``atlas figure`` writes it."""
    figure = pio.to_json(for_screen(fig), validate=False)  # projector fonts, high contrast where asked
    config = {**PLOTLY_CONFIG, "responsive": True}  # as every st.plotly_chart, and fit the column
    notes = {
        "drawing": _("Drawing the chart…"),
        "failed": _("The chart could not be drawn:"),
    }  # live_heads.js's
    _component(
        data={
            "role": role,
            "group": key,
            "figure": figure,
            "config": config,
            "plotly": plotly_url(),
            "notes": notes,
            **data,
        },
        key=f"{key}_{role}",
        **callbacks,
    )


def model_view_chart(
    fig: go.Figure,
    key: str,
    grid: tuple[int, int],
    widgets: tuple[str, str],
    heads: dict | None = None,
    csv: tuple[Callable, str, str] | None = None,
) -> None:
    """The model view of ``grid`` = (layers, heads). A click on a tile (or an arrow key in the
    focused head view) opens that head in the head view of the same ``key``, and the layer
    and head widgets (their keys: ``widgets``) move to it.

    ``heads`` (``all_heads``) rides with the model view, not the head view: its message is
    the same on every rerun of the tab, so Streamlit sends it once and a hash after that.
    """

    def follow() -> None:
        pick = picked(key, *grid)
        if pick:
            hold(key, {widgets[0]: pick[0], widgets[1]: str(pick[1])})  # a polling page calls keep_held(key)

    _mount("model", fig, key, {"grid": grid, "heads": heads}, on_pick_change=follow)
    if csv:  # (what makes the numbers behind it, its file name, the button's name)
        csv_button(csv[0], key + "_model", csv[1], label=csv[2])


def picked(key: str, layers: int, heads: int) -> tuple[int, int] | None:
    """The (layer, head) just picked in ``model_view_chart(key=key)``, if valid."""
    pick = getattr(st.session_state.get(key + "_model"), "pick", None)
    try:
        layer, head = int(pick["layer"]), int(pick["head"])
    except (TypeError, KeyError, ValueError):
        return None
    return (layer, head) if 0 <= layer < layers and 0 <= head < heads else None


def head_view_chart(fig: go.Figure, key: str, rid: str, layer: int, head: str, single: bool) -> None:
    """The head view of record ``rid`` at ``layer`` and ``head`` (a head, "average"…); a
    ``single`` heatmap can be redrawn in the browser with any other head of the record."""
    shown = f"{rid}|{layer}|{head}"  # ui/live_heads.js writes the same for a head it draws itself
    # The same head in another language is drawn again: its title and axes are words.
    _mount("head", fig, key, {"shown": shown, "single": single, "lang": i18n.current()})
