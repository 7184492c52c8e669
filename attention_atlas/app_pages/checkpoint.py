"""Checkpoint inspector: upload a model file, see what it is, its attention, and ours beside it.

Every check and the loading live in ``models.uploads`` (no code from an upload ever runs),
the upload flow (asking what a bare state dict lacks) in ``ui.uploads``; this page is
widgets → cached call → figure. Tests drive it with AppTest's
``file_uploader(key="ckpt_file").upload(...)`` and the demo button ``ckpt_demo``.
"""

import streamlit as st

from attention_atlas.i18n import _, ngettext
from attention_atlas.ui.cached import Source, first_index, model_choices, run_model
from attention_atlas.ui.live_heads import HINT, model_view_chart
from attention_atlas.ui.neuron import upload_neuron
from attention_atlas.ui.prediction_tabs import prediction_tabs
from attention_atlas.ui.uploads import (
    chosen_file,
    how_to,
    load_upload,
    run_upload,
    show_summary,
    upload_limits,
)
from attention_atlas.ui.url_state import Link, Unlinked
from attention_atlas.ui.views import alignment_chart, alignment_figure, beside, head_view_block, show_notices
from attention_atlas.ui.widgets import chart, intro, plain, text_box
from attention_atlas.viz_core.export import record_frame
from attention_atlas.viz_core.figures import head_view
from attention_atlas.viz_core.model_view import model_view
from attention_atlas.viz_core.wire import all_heads, record_id

K = "ckpt_"
BIG = 22  # couplet characters read from the back of the room, as on the Couplets page
AXES = {"x_title": _("input (keys)"), "y_title": _("output (queries)")}

st.title("🧳 " + _("Checkpoint inspector"))
intro(
    _(
        "Upload a checkpoint and see its attention with the same views our bundled models get, then "
        "beside the bundled model of its family on the same input. Files are checked and loaded "
        "**without running any code from them**: safetensors, or `torch.load(weights_only=True)` "
        "after the pickle's imports are read and allowed; zips unpack data files only."
    )
)
with st.expander(_("How to produce a checkpoint")):
    st.markdown(how_to())

couplets = model_choices(task="couplet")
limits = upload_limits()
link = Link("checkpoint")  # an upload cannot travel in a link; the demo and the inputs can
link.flag("demo", K + "demo_on")  # set by the demo button (ui/uploads.chosen_file)
name, data, limits = chosen_file(limits, demo=couplets[first_index(couplets)])
upload, cache_key = load_upload(name, data, limits)
s = upload.summary
show_summary(s)

c1, c2 = st.columns([3, 2])
text_key = link.text("text", K + "text_" + s.architecture, 5_000, s.example)
text = text_box(c1, _("Input"), text_key, 5_000, s.example)
target = (
    c2.text_input(_("Force this output (optional)"), key=link.text("target", K + "target", 5_000)).strip()
    if s.seq2seq
    else ""
)
link.done()
if not text.strip():
    st.info(_("Type an input to see its attention."))
    st.stop()
try:
    result = run_upload(cache_key, upload.adapter, text, target or None)
except (ValueError, RuntimeError) as err:  # empty input, weights that give no valid attention (NaN)…
    st.error(_("The upload gives no attention for this input: {error}", error=plain(err)))
    st.stop()
show_notices(result.notices)
if result.output is not None:
    st.markdown(_("**Output:** {output}", output=plain(result.output)))

kinds = list(result.records)
first = kinds.index("cross") if "cross" in kinds else 0
kind = (
    st.radio(_("attention"), kinds, index=first, horizontal=True, key=K + "kind")
    if len(kinds) > 1
    else kinds[0]
)
rec = result.records[kind]
layer, head = 0, "0"
if s.view == "alignment":
    st.subheader(_("Alignment"))
    alignment_chart(rec, BIG, AXES, K + "heat", "upload_alignment")
else:
    st.subheader(
        _(
            "Model view: {layers} × {heads} ({kind})",
            layers=ngettext("{count:,} layer", "{count:,} layers", rec.n_layers, count=rec.n_layers),
            heads=ngettext("{count:,} head", "{count:,} heads", rec.n_heads, count=rec.n_heads),
            kind=kind,
        )
    )
    st.caption(_(HINT))
    layer_key, head_key = f"{K}layer_{s.model_id}_{kind}", f"{K}head_{s.model_id}"  # head counts differ
    rid = record_id(cache_key, kind, text, target)
    grid = (rec.n_layers, rec.n_heads)
    model_view_chart(model_view(rec), K + "heads", grid, (layer_key, head_key), heads=all_heads(rec, rid))
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
upload_neuron(cache_key, s.model_id, upload.adapter, text, kind, rec)
if getattr(upload.adapter, "family", None) == "causal":
    panel = st.expander(
        _("Inside a prediction: the logit lens, generation and contributions"),
        key=K + "inside",
        on_change="rerun",
    )
    if panel.open:  # each tab runs the model again: only when opened
        with panel:
            source = Source.of_upload(cache_key, s.model_id, upload.adapter)
            prediction_tabs(source, text, text_key, Unlinked(), K + "inside_tab")

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
sides = [(s.model_id, rec, result.output), (other, their_rec, theirs.output)]


def side_figure(label: str, r, width: int):
    """One side's alignment, or its head at the layer and head chosen above (where it has them)."""
    if s.view == "alignment":
        return alignment_figure(r, BIG, AXES, label, width)
    lay = min(layer, r.n_layers - 1)
    hd = head if head == "average" or int(head) < r.n_heads else "0"
    if hd == "average":
        title = _("{model}: layer {layer}, head average", model=label, layer=lay)
    else:
        title = _("{model}: layer {layer}, head {head}", model=label, layer=lay, head=hd)
    return head_view(r, lay, hd, width).update_layout(title_text=title)


places, figures = beside(lambda width: [side_figure(label, r, width) for label, r, __ in sides], len(sides))
for col, (label, r, out), fig in zip(places, sides, figures, strict=True):
    with col:
        if out is not None:
            st.markdown(f"**{label}:** {plain(out)}")
        chart(fig, record_frame(r), K + "side_" + label, label.replace(":", "_"))
