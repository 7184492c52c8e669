"""Scoring functions side by side on the same queries and keys."""

import streamlit as st

from attention_atlas.i18n import _
from attention_atlas.models.attention.demos import MASK_NAMES, ScoringSetup
from attention_atlas.ui import scoring_views as sv
from attention_atlas.ui.cached import capabilities, model_choices, scoring_records
from attention_atlas.ui.url_state import Link
from attention_atlas.ui.widgets import intro, whole_number

K = sv.K  # the page's widget-key prefix, shared with its blocks
DIMS = [2, 4, 8, 16, 32, 64, 128, 256, 512]
st.title(_("🎯 Scoring functions"))
intro(
    _(
        "Attention turns a **score** for every (query, key) pair into weights with a softmax. "
        "Here six scoring functions see the *same* queries and keys (random ones, or a real head's); "
        "only the score differs."
    )
)
link = Link("scoring")

sources = ["random", *(f"real: {m}" for m in model_choices(queries_keys=True))]
source = st.radio(
    _("queries and keys"),
    sources,
    format_func=sv.source_label,
    horizontal=True,
    key=link.choice("source", K + "source", sources, "random", text=sv.real_name),
    on_change=sv.follow_source,
)
real = None
if source == "random":
    c1, c2, c3 = st.columns(3)
    d = c1.select_slider(_("vector size d"), DIMS, key=link.choice("d", K + "d", DIMS, 16, "is not on offer"))
    n = c2.slider(_("queries = keys"), 2, 24, key=link.number("n", K + "n", 2, 24, 8))
    seed = whole_number(
        c3, _("random seed"), 0, 99_999, 0, link.number("seed", K + "seed", 0, 99_999, 0, checks_itself=True)
    )
else:
    model = capabilities(sv.real_name(source))
    real, d, n = sv.real_inputs(link, model)
    seed = 0
causal_source = source != "random" and model.causal
c1, c2, c3 = st.columns(3)
mask = c1.selectbox(
    _("mask (the self-attention tutorial)"),
    MASK_NAMES,
    format_func=_,
    key=link.choice("mask", K + "mask", MASK_NAMES, "causal" if causal_source else MASK_NAMES[0]),
)
window = c2.slider(
    _("local window"),
    0,
    n - 1,
    key=link.number("window", K + "window", 0, n - 1, min(1, n - 1)),
    disabled=mask != "local window",
)
stride = c3.slider(
    _("stride"), 1, n, key=link.number("stride", K + "stride", 1, n, min(3, n)), disabled=mask != "strided"
)
c1, c2, c3 = st.columns(3)
valid_len = c1.slider(
    _("valid keys (padding)"),
    1,
    n,
    key=link.number("valid", K + "valid", 1, n, max(1, n - 3)),
    disabled=mask != "padding",
)
temperature = c2.slider(
    _("cosine temperature"), 0.05, 2.0, step=0.05, key=link.number("temp", K + "temp", 0.05, 2.0, 0.2, 0.05)
)
sigma = c3.slider(
    _("Gaussian σ"), 0.25, 10.0, step=0.25, key=link.number("sigma", K + "sigma", 0.25, 10.0, 2.0, 0.25)
)
c1, c2 = st.columns(2)
identical = c1.toggle(
    _("make every key identical (weights turn uniform)"),
    key=link.flag("same", K + "same"),
    help=_(
        "The attention-pooling tutorial: when all keys are equal, every score is equal, so softmax spreads evenly."
    ),
)
relative = c2.toggle(
    _("add a relative position bias (the self-attention tutorial)"),
    key=link.flag("relbias", K + "relbias"),
    help=_("A learned number per offset (key − query), clipped at ±4, added to every score; here random."),
)
link.done()

masking = dict(mask=mask, window=window, stride=stride, valid_len=valid_len)
scoring = dict(temperature=temperature, sigma=sigma, identical_keys=identical, relative_bias=relative)
setup = ScoringSetup(d=d, n=n, seed=int(seed), **masking, **scoring)
records = scoring_records(setup, *(real or ()))
sv.weights_section(records, identical, relative)
sv.entropy_section(records, n)
sv.saturation_section(n, int(seed))
