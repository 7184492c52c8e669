"""Watch attention learn: the couplet seq2seq trained from scratch in front of the class.

The run trains in a background thread owned by this session (ui/watch_learn.py); a fragment
redraws its snapshot every second without blocking the page, and stops the run when the
visitor leaves. At most ATLAS_MAX_TRAININGS runs train at once on a server; others wait in line.
"""

import streamlit as st

from attention_atlas.i18n import N_, _
from attention_atlas.models.training import classroom as cr
from attention_atlas.ui import watch_learn as wl
from attention_atlas.ui.url_state import Link, rerun_page
from attention_atlas.ui.widgets import intro

K = "learn_"
BIG = 24  # tick font size: characters must read from the back of a room
AXES = {"x_title": _("upper line 上联 (keys)"), "y_title": _("lower line 下联 (queries)")}
MODES = {
    N_("Additive"): ("additive",),
    N_("Dot product"): ("dot",),
    N_("Race: additive vs dot"): cr.ATTENTIONS,
}
REFRESH = 1.0  # seconds between redraws while a run is live
PRESET = cr.PRESETS["classroom"]
# Training seconds per model on offer: at 30 s additive's held-out alignment is 0.36 and the probe
# shows no diagonal; by 60 s it is 0.84 (bench/RESULTS.md, bench_classroom)
SECONDS = list(range(60, 301, 30))

st.title("🎬 " + _("Watch attention learn"))
intro(
    _(
        "The couplet tutorial's seq2seq (BiLSTM encoder, LSTM decoder), trained **from scratch** "
        "while you watch: {hidden} hidden units, the {vocab:,} most frequent "
        "characters, batches of 5- and 7-character couplets. Every few steps the model force-decodes "
        "the probe couplet **{upper} → {lower}**; at first its attention is spread "
        "evenly, and as it learns that couplets match position by position the diagonal appears.",
        hidden=PRESET.hidden,
        vocab=PRESET.vocab_size,
        upper=PRESET.probe[0],
        lower=PRESET.probe[1],
    )
)

got = wl.current()
snap = got[0].snapshot() if got else None
live = bool(snap and snap.live)
c1, c2, c3 = st.columns([2, 2, 3])
link = Link("watch-learn")
modes = list(MODES)
mode = c1.radio(
    _("Attention"),
    modes,
    format_func=_,
    key=link.choice("mode", K + "mode", modes, modes[0]),
    disabled=live,
)
seconds = c2.slider(
    _("Training time per model (s)"),
    SECONDS[0],
    SECONDS[-1],
    step=SECONDS[1] - SECONDS[0],
    key=link.choice("seconds", K + "seconds", SECONDS, 120, "is not on offer"),
    disabled=live,
    help=_(
        "Seconds each model spends in training steps. Measuring the probe every "
        "{every} steps adds to the time on the clock, and a race trains its two models "
        "in turn: about twice as long.",
        every=PRESET.measure_every,
    ),
)
link.done()
wl.controls(c3, got, live, MODES[mode], seconds, K)


@st.fragment(run_every=REFRESH if live else None)
def show(was_live: bool) -> None:
    got = wl.current()
    if got is None:
        wl.before_start(MODES[mode], PRESET, BIG, AXES, K + "probe_")
        return
    run, watch = got
    watch.beat()
    snap = run.snapshot()
    if was_live and not snap.live:
        rerun_page()  # the whole page: buttons back, and no more timer
    wl.status(snap)
    if not snap.probes:
        return
    race = len(snap.probes) > 1
    last = {a: h[-1] for a, h in snap.histories.items()}
    titles = {
        a: _(
            "**{attention}**: step {step:,}, probe alignment {alignment:.0%}",
            attention=wl.name(a),
            step=p.step,
            alignment=p.probe_alignment,
        )
        for a, p in last.items()
    }
    heat_cols = wl.heatmaps(snap.probes, titles, BIG, AXES, K + "probe_")
    left, right = st.columns(2) if race else (heat_cols[1], heat_cols[1])
    with left:
        wl.curve_chart(snap.histories, "alignment", _("held-out alignment"), K + "alignment")
    with right:
        wl.curve_chart(snap.histories, "valid_loss", _("held-out loss"), K + "loss")
    st.caption(
        _(
            "Alignment: the share of characters whose attention peaks on their own position, on "
            "{n} held-out couplets (none of their upper lines is trained on), force-decoded.",
            n=PRESET.watch_pairs,
        )
    )


show(live)
