"""Checkpoint inspector: upload a model file, see what it is, its attention, and ours beside it.

Every check and the loading live in ``models.uploads`` (no code from an upload ever runs),
the upload flow (asking what a bare state dict lacks) in ``ui.uploads``, its model view and
the bundled model beside it in ``ui.checkpoint_views``, an uploaded decoder's or seq2seq
model's output explained in ``ui.attribution_views.upload_panel``; this page is
widgets → cached call → figure. Tests drive it with AppTest's
``file_uploader(key="ckpt_file").upload(...)`` and the demo button ``ckpt_demo``.
"""

import streamlit as st

from attention_atlas.i18n import _
from attention_atlas.ui.attribution_views import upload_panel
from attention_atlas.ui.cached import Source, first_index, model_choices
from attention_atlas.ui.checkpoint_views import beside_bundled, model_view_block
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
from attention_atlas.ui.views import alignment_chart, show_notices
from attention_atlas.ui.widgets import intro, plain, text_box
from attention_atlas.viz_core.record import kind_name

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
    st.radio(_("attention"), kinds, index=first, format_func=kind_name, horizontal=True, key=K + "kind")
    if len(kinds) > 1
    else kinds[0]
)
rec = result.records[kind]
layer, head = 0, "0"
if s.view == "alignment":
    st.subheader(_("Alignment"))
    alignment_chart(rec, BIG, AXES, K + "heat", "upload_alignment")
else:
    layer, head = model_view_block(rec, kind, s, cache_key, text, target)
upload_neuron(cache_key, s.model_id, upload.adapter, text, kind, rec)
source = Source.of_upload(cache_key, s.model_id, upload.adapter)
if getattr(upload.adapter, "family", None) == "causal":
    panel = st.expander(
        _("Inside a prediction: the logit lens, generation and contributions"),
        key=K + "inside",
        on_change="rerun",
    )
    if panel.open:  # each tab runs the model again: only when opened
        with panel:
            prediction_tabs(source, text, text_key, Unlinked(), K + "inside_tab")
upload_panel(source, text, target, s.seq2seq, result.records, K + "attr_")

beside_bundled(s, rec, result, kind, text, target, (layer, head), BIG, AXES)
