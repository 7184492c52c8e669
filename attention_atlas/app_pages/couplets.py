"""Couplets (the couplet tutorial): an upper line in, the lower line and its alignment out."""

import streamlit as st

from attention_atlas.i18n import _
from attention_atlas.models.tasks.couplet import MAX_CHARS
from attention_atlas.ui.cached import capabilities, first_index, model_choices, run_model
from attention_atlas.ui.url_state import Link, section
from attention_atlas.ui.views import alignment_figure, beside, decoding_step, difference_chart, show_notices
from attention_atlas.ui.widgets import chart, fact, intro, plain
from attention_atlas.viz_core.export import record_frame
from attention_atlas.viz_core.stats import diagonal_share

K = "couplet_"
BIG = 24  # tick font size: characters must read from the back of a room
AXES = {"x_title": _("upper line 上联 (keys)"), "y_title": _("lower line 下联 (queries)")}

st.title("🏮 " + _("Couplets"))
intro(
    _(
        "The couplet tutorial's seq2seq: a bidirectional LSTM reads the upper line, an LSTM writes the lower line "
        "one character at a time, and before each character it **attends** to the upper line. "
        "Couplets match position by position, so a model that has learned to attend well shows a "
        "diagonal. Two attentions: parameter-free scaled dot product, and Bahdanau's additive one."
    )
)
link = Link("couplets")

ids = model_choices(task="couplet")
first = ids[first_index(ids)] if ids else None
example = capabilities(first).example if ids else ""
c1, c2 = st.columns([3, 2])
upper = c1.text_input(_("Upper line 上联"), key=link.text("text", K + "upper", MAX_CHARS, example))
target = c1.text_input(
    _("Force a lower line 下联 (optional; empty: the model writes one)"),
    key=link.text("target", K + "target", MAX_CHARS),
    placeholder=_("e.g. {example} (leave empty: the model writes its own)", example="一行白鹭上青天"),
).strip()
both = c2.toggle(_("Dot and additive side by side"), key=link.flag("both", K + "both"))
model_id = c2.selectbox(_("Model"), ids, key=link.choice("model", K + "model", ids, first), disabled=both)
beam = c2.slider(
    _("Beam width (1 = greedy)"), 1, 8, key=link.number("beam", K + "beam", 1, 8, 1), disabled=bool(target)
)

if not upper.strip():
    st.info(_("Type an upper line (上联), e.g. {example}.", example=example))
    st.stop()
if not ids:
    st.info(_("No couplet model is registered."))
    st.stop()
shown = ids if both else [model_id]
try:
    results = {m: run_model(m, upper, target or None, beam) for m in shown}
except FileNotFoundError as err:
    st.info(_("The bundled weights are missing: {error}", error=plain(err)))
    st.stop()
show_notices((n for r in results.values() for n in r.notices), warn=True)
records = {m: r.records["cross"] for m, r in results.items()}
verb = _("forced") if target else (_("greedy") if beam == 1 else _("beam {n}", n=beam))
places, figures = beside(
    lambda width: [alignment_figure(records[m], BIG, AXES, m if both else "", width) for m in shown],
    len(shown),
)
for col, m, fig in zip(places, shown, figures, strict=True):
    rec, output = records[m], results[m].output
    line = output if output is not None else "".join(rec.query_tokens)
    with col:
        upper_line = plain("".join(rec.key_tokens))
        st.markdown(f"### {plain(line)}" if both else f"### {upper_line} → {plain(line)}")
        mass = diagonal_share(rec.head())
        fact(
            _(
                "{model}, {verb}: alignment {alignment:.0%} of characters (argmax) · "
                "{mass:.0%} of the weight on the diagonal",
                model=m,
                verb=verb,
                alignment=rec.meta["alignment"],
                mass=mass,
            )
        )
        key, filename = (K + "heat_" + m, m) if both else (K + "heat", "couplet_attention")
        chart(fig, lambda rec=rec: record_frame(rec), key, filename)

a, b = records[shown[0]], records[shown[-1]]
if len(shown) == 2 and a.head().shape == b.head().shape:
    st.subheader(_("Difference: {a} − {b}", a=shown[0], b=shown[1]))
    st.caption(
        _(
            "Red: the first model attends more; blue: the second. Rows are positions of the "
            "lower lines (both have the upper line's length); 'x｜y' where they differ."
        )
    )
    difference_chart(a, b, (shown[0], shown[1]), BIG, K + "diff", "couplet_difference")

section(_("Step through the decoding"), "step-through")
if both:
    st.caption(_("The same step of each model's lower line, side by side."))
n = max(len(r.query_tokens) for r in records.values())
step = st.slider(_("Step"), 1, n, key=link.number("step", K + "step", 1, n, 1)) if n > 1 else 1
link.done()
for col, m in zip(st.columns(len(shown)), shown, strict=True):
    with col:
        key = K + "step_bars" + ("_" + m if both else "")
        decoding_step(records[m], step, m, BIG, key, "couplet_step" + ("_" + m if both else ""), stacked=both)
