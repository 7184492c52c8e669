"""Watch attention learn: the couplet seq2seq trained from scratch in front of the class.

The run trains in a background thread owned by this session (ui/watch_learn.py); a fragment
redraws its snapshot every second without blocking the page, and stops the run when the
visitor leaves. At most ATLAS_MAX_TRAININGS runs train at once on a server; others wait in line.
"""

import streamlit as st

from attention_atlas.models.training import classroom as cr
from attention_atlas.serve.lanes import trainings
from attention_atlas.ui import watch_learn as wl
from attention_atlas.ui.url_state import Link
from attention_atlas.ui.widgets import plain

K = "learn_"
BIG = 24  # tick font size: characters must read from the back of a room
AXES = {"x_title": "upper line 上联 (keys)", "y_title": "lower line 下联 (queries)"}
MODES = {"Additive": ("additive",), "Dot product": ("dot",), "Race: additive vs dot": cr.ATTENTIONS}
REFRESH = 1.0  # seconds between redraws while a run is live
PRESET = cr.PRESETS["classroom"]

st.title("🎬 Watch attention learn")
st.markdown(
    "The couplet tutorial's seq2seq (BiLSTM encoder, LSTM decoder), trained **from scratch** "
    f"while you watch: {PRESET.hidden} hidden units, the {PRESET.vocab_size:,} most frequent "
    "characters, batches of 5- and 7-character couplets. Every few steps the model force-decodes "
    f"the probe couplet **{PRESET.probe[0]} → {PRESET.probe[1]}**; at first its attention is spread "
    "evenly, and as it learns that couplets match position by position the diagonal appears."
)

got = wl.current()
snap = got[0].snapshot() if got else None
live = bool(snap and snap.live)
c1, c2, c3 = st.columns([2, 2, 3])
link = Link("watch-learn")
modes = list(MODES)
mode = c1.radio("Attention", modes, key=link.choice("mode", K + "mode", modes, modes[0]), disabled=live)
seconds = c2.slider(
    "Training time (s)",
    30,
    300,
    step=30,
    key=link.choice("seconds", K + "seconds", list(range(30, 301, 30)), 120, "is not on offer"),
    disabled=live,
)
link.done()
with c3:
    b1, b2, b3 = st.columns(3)
    if b1.button("▶ Start", key=K + "start", disabled=live, type="primary"):
        wl.start(MODES[mode], float(seconds))
        st.rerun()
    paused = bool(got and got[0].paused)
    if b2.button("▶ Resume" if paused else "⏸ Pause", key=K + "pause", disabled=not live):
        if paused:
            got[0].resume()
        else:
            got[0].pause()
        st.rerun()
    if b3.button("↺ Reset", key=K + "reset", disabled=got is None):
        wl.reset()
        st.rerun()


def status(snap: cr.Snapshot) -> None:
    done = {a: h[-1].seconds for a, h in snap.histories.items() if h}
    if snap.state == cr.WAITING:
        pool = trainings()
        st.warning(
            f"⏳ Waiting for a free trainer (position {snap.position or 1}): "
            f"{pool.busy} of {pool.capacity} are training for other visitors."
        )
    elif snap.state == cr.LOADING:
        st.info("Loading the couplets and building the model…")
    elif snap.state in (cr.FAILED, cr.STOPPED):
        st.warning(f"The run {snap.state}: {plain(snap.message)}")
    if done:
        share = min(1.0, min(done.values()) / snap.max_seconds)
        steps = ", ".join(f"{a} step {h[-1].step:,}" for a, h in snap.histories.items())
        word = {cr.PAUSED: "paused", cr.DONE: "done"}.get(snap.state, "training")
        st.progress(share, text=f"{word}: {min(done.values()):.0f} of {snap.max_seconds:.0f} s · {steps}")


@st.fragment(run_every=REFRESH if live else None)
def show(was_live: bool) -> None:
    got = wl.current()
    if got is None:
        st.info("Choose an attention (or the race) and press **Start**.")
        return
    run, watch = got
    watch.beat()
    snap = run.snapshot()
    if was_live and not snap.live:
        st.rerun()  # the whole page: buttons back, and no more timer
    status(snap)
    if not snap.probes:
        return
    race = len(snap.probes) > 1
    heat_cols = st.columns(len(snap.probes)) if race else st.columns([3, 2])
    for col, (attention, probe) in zip(heat_cols, snap.probes.items(), strict=False):
        last = snap.histories[attention][-1]
        with col:
            st.markdown(f"**{attention}**: step {last.step:,}, probe alignment {last.probe_alignment:.0%}")
            wl.probe_chart(probe, attention, BIG, AXES, K + "probe_" + attention)
    left, right = st.columns(2) if race else (heat_cols[1], heat_cols[1])
    with left:
        wl.curve_chart(snap.histories, "alignment", "held-out alignment", K + "alignment")
    with right:
        wl.curve_chart(snap.histories, "valid_loss", "held-out loss", K + "loss")
    st.caption(
        f"Alignment: the share of characters whose attention peaks on their own position, on "
        f"{PRESET.watch_pairs} held-out couplets (none of their upper lines is trained on), force-decoded."
    )


show(live)
