"""Self-attention beside a convolution and a recurrent layer: the tutorial's table, measured here."""

import streamlit as st

from attention_atlas.i18n import N_, _
from attention_atlas.models.attention import complexity as cx
from attention_atlas.ui import complexity_views as cxv
from attention_atlas.ui.complexity_run import devices, measured
from attention_atlas.ui.url_state import Link
from attention_atlas.ui.widgets import chart, fact, intro
from attention_atlas.viz_core.complexity_figures import Mark, points_frame, scaling_chart

K = cxv.K  # the page's widget-key prefix, shared with its sections
st.title("⏱️ " + _("Attention vs CNN, RNN"))
intro(
    _(
        "The attention-pooling tutorial compares three layers that turn n tokens of d numbers into n "
        "tokens: **self-attention** costs O(n²·d), a **convolution** of kernel k O(k·n·d²), a **recurrent** "
        "layer O(n·d²). Self-attention needs O(1) sequential operations and connects any two tokens in "
        "one layer, but its cost grows with n²: once n passes d it costs more than the recurrent layer. "
        "Here the three run on this machine as n doubles: the tutorial's self-attention "
        "softmax(X Xᵀ/√d) X, a Conv1d of d channels, a GRU or LSTM of d units."
    )
)
link = Link("complexity")
SIZES = [2**i for i in range(2, 16)]  # 4 … 32,768
DIMS = [8, 16, 32, 64, 128, 256, 512, 1024]
KERNELS = [3, 5, 7, 9, 11, 13, 15]
OFFER = "is not on offer"

c1, c2, c3 = st.columns(3)
shortest = c1.select_slider(_("shortest n"), SIZES, key=link.choice("from", K + "from", SIZES, 16, OFFER))
longest = c2.select_slider(_("longest n"), SIZES, key=link.choice("to", K + "to", SIZES, 2048, OFFER))
d = c3.select_slider(_("width d"), DIMS, key=link.choice("d", K + "d", DIMS, 64, OFFER))
c1, c2, c3 = st.columns(3)
k = c1.select_slider(_("kernel k"), KERNELS, key=link.choice("k", K + "k", KERNELS, 3, OFFER))
rnn = c2.radio(
    _("recurrent layer"), cx.RNNS, horizontal=True, key=link.choice("rnn", K + "rnn", cx.RNNS, "GRU")
)
places = devices()
device = c3.radio(
    _("device"),
    list(places),
    format_func=places.get,
    key=link.choice("device", K + "device", list(places), list(places)[-1]),
)
if shortest >= longest:
    link.done()
    st.info(_("Pick a longest n above the shortest ({n:,}): a slope needs at least two sizes.", n=shortest))
    st.stop()

result = measured(cx.Setup(cx.geometric_sizes(shortest, longest), d, k, rnn), device)
names = {cx.ATTENTION: _("self-attention"), cx.CONVOLUTION: _("convolution, k = {k}", k=k), cx.RECURRENT: rnn}

st.subheader(_("Forward time as n grows"))
CLOCKS = {N_("wall clock"): "seconds", N_("CPU time"): "cpu_seconds"}  # shown with format_func=_
# A GPU works apart from the thread's clock. On the CPU with one torch thread, the thread's CPU time is
# the whole work and ignores a busy machine's waits, so it shows the exponents best (bench/RESULTS.md).
clocks = list(CLOCKS) if device == "cpu" else ["wall clock"]
first = "CPU time" if device == "cpu" and cx.thread_clock_counts_all() else "wall clock"
clock = st.radio(
    _("clock"),
    clocks,
    format_func=_,
    horizontal=True,
    key=link.choice("clock", K + "clock", clocks, first, OFFER),
    help=_(
        "Wall clock: what you wait, including waiting for a busy CPU. CPU time: only the work this "
        "thread did (all of it when torch runs one thread, ATLAS_THREADS=1), so other programs barely move it."
    ),
)
what = CLOCKS[clock]
slopes = {layer: cx.tail_slope(*result.series(layer, what)) for layer in cx.LAYERS}


def legend(layer: str) -> str:
    slope = slopes[layer]
    shown = "—" if slope is None else f"{slope:.2f}"
    return _(
        "{layer}: slope {slope} (tutorial {exponent})",
        layer=names[layer],
        slope=shown,
        exponent=cx.TUTORIAL[layer].n_exponent,
    )


attention = result.series(cx.ATTENTION, what)
crossings = {
    other: cx.crossover(*attention, *result.series(other, what)) for other in (cx.RECURRENT, cx.CONVOLUTION)
}
marks = [Mark(d, _("n = d = {d}: the tutorial's crossover", d=d))]
if crossings[cx.RECURRENT]:
    marks.append(Mark(crossings[cx.RECURRENT], _("measured crossover with the {rnn}", rnn=rnn), "dot"))
chart(
    scaling_chart(
        {legend(layer): result.series(layer, what) for layer in cx.LAYERS},
        _("{clock} per forward", clock=_(clock)),
        "s",
        marks,
    ),
    points_frame(result.points),
    K + "time",
    "forward_time",
)
fact(
    _(
        "On {device}, by the {clock}: the median of up to {repeats} forwards after a "
        "warm-up, batch 1, float32, no gradients. Slopes are fitted on log-log axes over the larger half of the "
        "sizes, where fixed overheads no longer count. On a busy machine the wall clock also counts the waits "
        "for a CPU, which grow with the forward's length and steepen every slope.",
        device=places.get(device, result.device),  # in this visitor's language: the result is shared
        clock=_(clock),
        repeats=result.setup.repeats,
    )
)


def where(n: float | None) -> str:
    return f"n ≈ {n:,.0f}" if n else _("not within {lo:,}–{hi:,}", lo=shortest, hi=longest)


left, right = st.columns(2)
left.metric(_("tutorial: attention costs more than the {rnn} from", rnn=rnn), f"n = d = {d:,}")
right.metric(_("measured: attention slower than the {rnn} from", rnn=rnn), where(crossings[cx.RECURRENT]))
left.metric(_("tutorial: attention costs more than the convolution from"), f"n = k·d = {k * d:,}")
right.metric(_("measured: attention slower than the convolution from"), where(crossings[cx.CONVOLUTION]))

cxv.memory_section(result, names)

st.subheader(_("Paths: which tokens one layer connects"))
n_graph = st.slider(_("tokens in the graphs"), 2, 12, key=link.number("tokens", K + "tokens", 2, 12, 8))
link.done()
cxv.paths_chart(names, n_graph, k, rnn)
cxv.table_section(names, slopes, n_graph, k)
