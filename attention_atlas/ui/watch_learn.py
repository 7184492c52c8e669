"""The "Watch attention learn" page's Streamlit side: one training run per session, the watch that
stops it when its visitor leaves, and what a run's snapshot looks like: its state and progress
line, its figures, and the page's blocks (the probe heatmaps, the untrained start, the buttons).

The run itself (``models.training.classroom.ClassroomRun``) trains in a background thread and
knows nothing of Streamlit; it asks ``SessionWatch`` about once a second whether to go on.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from attention_atlas.i18n import N_, _
from attention_atlas.models.training import classroom as cr
from attention_atlas.serve.lanes import trainings
from attention_atlas.ui.widgets import chart, plain
from attention_atlas.viz_core.export import record_frame
from attention_atlas.viz_core.figures import heatmap
from attention_atlas.viz_core.record import AttentionRecord

RUN_KEY = "learn_run"  # session state: (ClassroomRun, SessionWatch)
IDLE_SECONDS = 60.0  # no redraw for this long (the tab closed, the laptop asleep): the run stops
GRACE_SECONDS = 10.0  # disconnected this long, the visitor is gone (a quick reconnect keeps the run)
COLORS = {"additive": "#d62728", "dot": "#1f77b4"}
NAMES = {"additive": N_("additive"), "dot": N_("dot")}  # an attention as the page names it


def name(attention: str) -> str:
    """``attention`` (``cr.ATTENTIONS``) in this run's language."""
    return _(NAMES.get(attention, attention))


def _connected(session_id: str | None) -> bool:
    """Whether the server still has this session's browser connected (always, outside a server)."""
    from streamlit import runtime

    if session_id is None or not runtime.exists():
        return True
    return runtime.get_instance().is_active_session(session_id)


class SessionWatch:
    """Is the visitor who started a run still there? Each redraw of the page ``beat``s; the run's
    thread calls the watch, which says no once the page has not redrawn for ``idle`` seconds, or
    for twice the last gap between two redraws where that is longer (a saturated server redraws
    late, and a visitor still watching was stopped at 60 s), or the session has been disconnected
    for ``grace`` seconds."""

    def __init__(
        self,
        session_id: str | None,
        idle: float = IDLE_SECONDS,
        grace: float = GRACE_SECONDS,
        connected: Callable[[str | None], bool] = _connected,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.session_id, self.idle, self.grace = session_id, idle, grace
        self.connected, self.clock = connected, clock
        self.last_beat, self.gone_since, self.gap = clock(), None, 0.0

    def beat(self) -> None:
        now = self.clock()
        self.gap, self.last_beat = now - self.last_beat, now

    def __call__(self) -> bool:
        now = self.clock()
        if now - self.last_beat > max(self.idle, 2 * self.gap):
            return False
        if self.connected(self.session_id):
            self.gone_since = None
            return True
        self.gone_since = self.gone_since or now
        return now - self.gone_since < self.grace


def session_id() -> str | None:
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    return ctx.session_id if ctx else None


def current() -> tuple[cr.ClassroomRun, SessionWatch] | None:
    return st.session_state.get(RUN_KEY)


def start(attentions: tuple[str, ...], max_seconds: float) -> None:
    """A new run for this session (an earlier one is stopped)."""
    reset()
    watch = SessionWatch(session_id())
    run = cr.ClassroomRun(attentions, cr.PRESETS["classroom"], max_seconds, alive=watch)
    st.session_state[RUN_KEY] = (run.start(), watch)


def reset() -> None:
    got = st.session_state.pop(RUN_KEY, None)
    if got is not None:
        got[0].stop()


@st.cache_resource(show_spinner=False, max_entries=8)
def _untrained(attention: str, p: cr.Preset) -> np.ndarray:
    return cr.untrained_probe(attention, p)


def untrained(attention: str, p: cr.Preset) -> np.ndarray:
    """``cr.untrained_probe``, once per process: what every run of ``p`` starts from."""
    with st.spinner(_("Loading the couplets and building the untrained models…")):
        return _untrained(attention, p)


def clock_text(seconds: float) -> str:
    """Wall-clock seconds as a class reads them: "45 s", "2 min 05 s"."""
    t = round(seconds)
    return _("{m} min {s:02d} s", m=t // 60, s=t % 60) if t >= 60 else _("{s} s", s=t)


# -- what a snapshot looks like ----------------------------------------------------------------


def status(snap: cr.Snapshot) -> None:
    """The run's state (waiting in line for a trainer, loading, failed or stopped) and, once it has
    trained, a progress bar: training seconds per model, the clock, each model's step."""
    done = {a: h[-1].seconds for a, h in snap.histories.items() if h}
    if snap.state == cr.WAITING:
        pool = trainings()
        st.warning(
            _(
                "⏳ Waiting for a free trainer (position {position}): "
                "{busy} of {capacity} are training for other visitors.",
                position=snap.position or 1,
                busy=pool.busy,
                capacity=pool.capacity,
            )
        )
    elif snap.state == cr.LOADING:
        st.info(_("Loading the couplets and building the model…"))
    elif snap.state == cr.FAILED:
        st.warning(_("The run failed: {message}", message=plain(snap.message)))
    elif snap.state == cr.STOPPED:
        st.warning(_("The run stopped: {message}", message=plain(snap.message)))
    if done:
        share = min(1.0, min(done.values()) / snap.max_seconds)
        steps = ", ".join(
            _("{attention} step {step:,}", attention=name(a), step=h[-1].step)
            for a, h in snap.histories.items()
        )
        word = {cr.PAUSED: N_("paused"), cr.DONE: N_("done")}.get(snap.state, N_("training"))
        text = _(
            "{state}: {spent:.0f} of {budget:.0f} s of training per model · {clock} on the clock · {steps}",
            state=_(word),
            spent=min(done.values()),
            budget=snap.max_seconds,
            clock=clock_text(snap.clock_seconds),
            steps=steps,
        )
        st.progress(share, text=text)


def probe_record(probe: np.ndarray, attention: str) -> AttentionRecord:
    upper, lower = cr.PRESETS["classroom"].probe
    scoring = "additive" if attention == "additive" else "scaled_dot"
    return AttentionRecord(
        probe[None, None].astype(np.float32),
        list(lower),
        list(upper),
        "cross",
        f"classroom-{attention}",
        scoring=scoring,
        meta={"decoding": "forced"},
    )


def probe_chart(probe: np.ndarray, attention: str, font: int, axes: dict, key: str) -> None:
    """The probe couplet's attention on a fixed 0–1 scale, so the film shows the weights sharpen."""
    rec = probe_record(probe, attention)
    fig = heatmap(rec.head(), rec.query_tokens, rec.key_tokens, zmax=1.0, ticks=font, **axes)
    chart(fig, record_frame(rec), key, f"learn_probe_{attention}")


def history_frame(histories: dict[str, list[cr.Point]]) -> pd.DataFrame:
    rows = [{"attention": a, **vars(p)} for a, hist in histories.items() for p in hist]
    return pd.DataFrame(rows)


def curve_chart(histories: dict[str, list[cr.Point]], metric: str, title: str, key: str) -> None:
    """``metric`` of each model over training seconds (``title``: the metric's name, translated), with
    the CSV of every measurement."""
    frame = history_frame(histories)
    fig = go.Figure()
    for a, hist in histories.items():
        pts = [p for p in hist if getattr(p, metric) is not None]
        fig.add_scatter(
            x=[p.seconds for p in pts],
            y=[getattr(p, metric) for p in pts],
            name=name(a),
            mode="lines+markers",
            line=dict(color=COLORS.get(a)),
            hovertemplate=_(
                "{attention}<br>%{{x:.0f}} s<br>{metric} %{{y:.3f}}<extra></extra>",
                attention=name(a),
                metric=title,
            ),
        )
    fig.update_xaxes(title=_("training seconds"), rangemode="tozero")
    fig.update_yaxes(title=title, range=[0, 1.02] if metric.endswith("alignment") else None)
    fig.update_layout(
        height=260,
        margin=dict(t=30, b=40, l=60, r=10),
        legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0),
    )
    chart(fig, frame, key, f"learn_{metric}")


# -- the page's blocks -------------------------------------------------------------------------


def heatmaps(probes: dict, titles: dict, font: int, axes: dict, prefix: str) -> list:
    """The probe heatmaps, one column each (a single model: a wider one, room beside it), each
    titled from ``titles`` and keyed ``prefix`` + its attention; ``font``: the ticks' size."""
    cols = st.columns(len(probes)) if len(probes) > 1 else st.columns([3, 2])
    for col, (attention, probe) in zip(cols, probes.items(), strict=False):
        with col:
            st.markdown(titles[attention])
            probe_chart(probe, attention, font, axes, prefix + attention)
    return cols


def before_start(attentions: tuple[str, ...], preset: cr.Preset, font: int, axes: dict, prefix: str) -> None:
    """The untrained models' attention: what the film starts from (``heatmaps``' arguments)."""
    st.info(_("Choose an attention (or the race) and press **Start**."))
    probes = {a: untrained(a, preset) for a in attentions}
    titles = {a: _("**{attention}**: step 0, untrained", attention=name(a)) for a in probes}
    heatmaps(probes, titles, font, axes, prefix)
    lo, hi = min(p.min() for p in probes.values()), max(p.max() for p in probes.values())
    st.caption(
        _(
            "Before any training: from its random initial weights each character of the lower line "
            "spreads its attention almost evenly over the {n} characters of the upper "
            "line (every weight between {lo:.0%} and {hi:.0%}; even would be {even:.0%}). "
            "Nothing tells the model yet that couplets match position by position: press **Start** and "
            "watch the diagonal appear.",
            n=len(preset.probe[0]),
            lo=lo,
            hi=hi,
            even=1 / len(preset.probe[0]),
        )
    )


def controls(place, got, live: bool, attentions: tuple[str, ...], seconds: int, prefix: str) -> None:
    """Start, Pause / Resume and Reset in ``place``, side by side: Start runs ``attentions`` for
    ``seconds`` each; ``got`` is the session's run, if any, and ``live`` whether it is training.
    Keys: ``prefix`` + start, pause, reset."""
    with place:
        b1, b2, b3 = st.columns(3)
        if b1.button("▶ " + _("Start"), key=prefix + "start", disabled=live, type="primary"):
            start(attentions, float(seconds))
            st.rerun()
        paused = bool(got and got[0].paused)
        if b2.button(
            "▶ " + _("Resume") if paused else "⏸ " + _("Pause"), key=prefix + "pause", disabled=not live
        ):
            if paused:
                got[0].resume()
            else:
                got[0].pause()
            st.rerun()
        if b3.button("↺ " + _("Reset"), key=prefix + "reset", disabled=got is None):
            reset()
            st.rerun()
