"""The Checkpoint inspector's views of an upload's attention: its model view with the layer and
head picked below it, and the bundled model of its family beside it on the same input.
Widget keys start with ``ckpt_``."""

from __future__ import annotations

import streamlit as st

from attention_atlas.i18n import _, ngettext
from attention_atlas.models.uploads import Summary
from attention_atlas.ui.cached import model_choices, run_model
from attention_atlas.ui.live_heads import HINT, model_view_chart
from attention_atlas.ui.views import alignment_figure, beside, head_view_block
from attention_atlas.ui.widgets import chart, plain
from attention_atlas.viz_core.export import record_frame
from attention_atlas.viz_core.figures import head_view
from attention_atlas.viz_core.model_view import model_view
from attention_atlas.viz_core.record import AttentionRecord, kind_name
from attention_atlas.viz_core.tokens import as_plotly_text
from attention_atlas.viz_core.wire import all_heads, record_id

K = "ckpt_"


def model_view_block(
    rec: AttentionRecord, kind: str, s: Summary, cache_key: str, text: str, target: str
) -> tuple[int, str]:
    """The upload's model view of ``kind`` attention, then a layer slider and a head box (keyed per
    model and kind: head counts differ) and that head's view. Returns the layer and head picked."""
    st.subheader(
        _(
            "Model view: {layers} × {heads} ({kind})",
            layers=ngettext("{count:,} layer", "{count:,} layers", rec.n_layers, count=rec.n_layers),
            heads=ngettext("{count:,} head", "{count:,} heads", rec.n_heads, count=rec.n_heads),
            kind=kind_name(kind),
        )
    )
    st.caption(_(HINT))
    layer_key, head_key = f"{K}layer_{s.model_id}_{kind}", f"{K}head_{s.model_id}"  # head counts differ
    rid = record_id(cache_key, kind, text, target)
    grid = (rec.n_layers, rec.n_heads)
    csv = (lambda: record_frame(rec), f"upload_{kind}_every_head", _("every head"))
    model_view_chart(model_view(rec), K + "heads", grid, (layer_key, head_key), heads=all_heads(rec, rid), csv=csv)
    c1, c2 = st.columns(2)
    layer = (
        c1.slider(_("layer"), 0, rec.n_layers - 1, rec.n_layers - 1, key=layer_key) if rec.n_layers > 1 else 0
    )
    head = c2.selectbox(
        _("head"),
        [str(h) for h in range(rec.n_heads)] + ["average"],
        format_func=lambda h: _("average") if h == "average" else h,
        key=head_key,
    )
    head_view_block(rec, K + "heads", rid, layer, head, (K + "headview", "upload_head"))
    return layer, head


def beside_bundled(
    s: Summary,
    rec: AttentionRecord,
    result,
    kind: str,
    text: str,
    target: str,
    picked: tuple[int, str],
    big: int,
    axes: dict,
) -> None:
    """The section "Beside the bundled model": a bundled model of the upload's family picked, run on
    the same ``text`` (and forced ``target``), and the two side by side, each its alignment or its
    head at the ``picked`` layer and head (where it has them). Stops the page where there is none
    to compare with, or it cannot run here."""
    layer, head = picked
    st.subheader(_("Beside the bundled model"))
    registered = set(model_choices())
    others = [m for m in s.compare if m in registered]
    if not others:
        st.info(_("No bundled model of this family to compare with."))
        st.stop()
    other = st.selectbox(_("bundled model"), others, key=K + "compare")
    try:
        theirs = run_model(other, text, target or None)
    except (OSError, RuntimeError, ValueError) as err:  # weights not installed here, or input it cannot take
        st.info(_("{model} cannot run here: {error}", model=other, error=plain(err)))
        st.stop()
    their_rec = theirs.records.get(kind) or next(iter(theirs.records.values()))
    # the upload by its file name (its id, a hash, in the hover); each side keyed by its id
    sides = [(s.file_name or s.model_id, s.model_id, rec, result.output), (other, other, their_rec, theirs.output)]

    def side_figure(label: str, r, width: int):
        """One side's alignment, or its head at the layer and head chosen above (where it has them)."""
        if s.view == "alignment":
            return alignment_figure(r, big, axes, as_plotly_text([label])[0], width)
        lay = min(layer, r.n_layers - 1)
        hd = head if head == "average" or int(head) < r.n_heads else "0"
        if hd == "average":
            title = _("{model}: layer {layer}, head average", model=label, layer=lay)
        else:
            title = _("{model}: layer {layer}, head {head}", model=label, layer=lay, head=hd)
        return head_view(r, lay, hd, width).update_layout(title_text=as_plotly_text([title])[0])

    places, figures = beside(
        lambda width: [side_figure(label, r, width) for label, __, r, __ in sides], len(sides)
    )
    for col, (label, ident, r, out), fig in zip(places, sides, figures, strict=True):
        with col:
            said = f"**{plain(label)}**" if out is None else f"**{plain(label)}:** {plain(out)}"
            st.markdown(said, help=None if ident == label else ident)
            chart(fig, record_frame(r), K + "side_" + ident, ident)
