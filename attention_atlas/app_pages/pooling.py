"""Attention pooling as Nadaraya–Watson kernel regression, with a kernel width trained live."""

import streamlit as st

from attention_atlas.i18n import N_, _, ngettext
from attention_atlas.models.attention.kernel_regression import KERNELS
from attention_atlas.ui.cached import pooling_view
from attention_atlas.ui.pooling_views import learn_kernel_width
from attention_atlas.ui.url_state import Link, section
from attention_atlas.ui.widgets import chart, intro, whole_number
from attention_atlas.viz_core.export import record_frame, series_frame
from attention_atlas.viz_core.figures import heatmap, nadaraya_watson

K = "pool_"
st.title(_("📈 Attention pooling"))
intro(
    _(
        "The oldest attention: to predict y at a query x, average the training values yᵢ, weighting each "
        "by how close its key xᵢ is to x. With a Gaussian kernel the weights are exactly "
        "softmax(−(x − xᵢ)² / 2h²): attention with the Gaussian scoring function."
    )
)
link = Link("pooling")
FLAT = N_(
    "The constant kernel weighs every training point alike, whatever the bandwidth: each query's "
    "weights are 1/n, its estimate the mean of all the values."
)
# The catalog's names of the kernels (``KERNELS``: the selectbox's options, shown with ``format_func=_``).
KERNEL_NAMES = (N_("gaussian"), N_("boxcar"), N_("epanechnikov"), N_("constant"))


def estimate_names(kernel: str, bandwidth: float, w: float | None) -> dict[str, str]:
    """The legend's name of each of ``pooling_view``'s estimates (named in English there, as in the CSV)."""
    names = {
        f"{kernel} kernel, h = {bandwidth}": _("{kernel} kernel, h = {h}", kernel=_(kernel), h=bandwidth)
    }
    if w is not None:
        names[f"learned Gaussian, w = {w:.2f}"] = _("learned Gaussian, w = {w:.2f}", w=w)
    return names


c1, c2, c3, c4, c5 = st.columns(5)
kernel = c1.selectbox(
    _("kernel"),
    list(KERNELS),
    format_func=_,
    key=link.choice("kernel", K + "kernel", list(KERNELS), next(iter(KERNELS))),
)
flat = kernel == "constant"  # every key weighs the same, whatever h: the slider has nothing to change
bandwidth = c2.slider(
    _("bandwidth h"),
    0.05,
    3.0,
    step=0.05,
    key=link.number("h", K + "h", 0.05, 3.0, 0.5, 0.05),
    disabled=flat,
    help=_(FLAT) if flat else _("How far from a query its kernel reaches: the width of the band below."),
)
n_train = c3.slider(_("training points"), 10, 200, key=link.number("n", K + "n", 10, 200, 50))
noise = c4.slider(_("noise"), 0.0, 2.0, step=0.1, key=link.number("noise", K + "noise", 0.0, 2.0, 0.5, 0.1))
seed = whole_number(
    c5, _("random seed"), 0, 99_999, 0, link.number("seed", K + "seed", 0, 99_999, 0, checks_itself=True)
)

data_key = (n_train, noise, seed)
trained = st.session_state.get(K + "trained")
if trained and trained["data_key"] != data_key:
    trained = None  # the data changed since training: train again
view = pooling_view(n_train, noise, seed, kernel, bandwidth, trained["w"] if trained else None)

section(_("Estimate against the truth"), "estimate")
legend = estimate_names(kernel, bandwidth, trained["w"] if trained else None)
estimates = {legend.get(name, name): values for name, values in view.estimates.items()}
chart(
    nadaraya_watson(view.x_train, view.y_train, view.x_test, view.y_truth, estimates),
    series_frame(view.x_test, {"truth": view.y_truth, **view.estimates}, "x"),
    K + "fit",
    "nadaraya_watson",
)
missing = view.record.meta["undefined_queries"]
if missing:
    st.warning(
        ngettext(
            "{n:,} query of {total} has no training point within the {kernel} kernel's reach: the estimate "
            "is undefined there (the gaps), and the heatmap leaves those rows out. Widen the bandwidth.",
            "{n:,} queries of {total} have no training point within the {kernel} kernel's reach: the estimate "
            "is undefined there (the gaps), and the heatmap leaves those rows out. Widen the bandwidth.",
            missing,
            n=missing,
            total=len(view.x_test),
            kernel=_(kernel),
        )
    )

st.subheader(_("Attention weights: test x (queries) × training x (keys)"))
axes = {"x_title": _("training x (key)"), "y_title": _("test x (query)")}
rec = view.record
chart(
    heatmap(rec.head(), rec.query_tokens, rec.key_tokens, **axes),
    record_frame(rec),
    K + "weights",
    "pooling_weights",
)
if flat:
    why = _(FLAT)
    st.caption(_("No band here: {why}", why=why[0].lower() + why[1:]))
else:
    st.caption(
        _("Sorted inputs make a band: each query attends to the keys near it. Wider bandwidth, wider band.")
    )

learn_kernel_width(link, view, trained, data_key, axes)
