"""Scoring functions side by side on the same queries and keys."""

import numpy as np
import streamlit as st

from attention_atlas.models.attention.demos import MASK_NAMES, ScoringSetup
from attention_atlas.ui.cached import (
    capabilities,
    ensure_loaded,
    model_choices,
    model_queries_keys,
    saturation,
    scoring_records,
)
from attention_atlas.ui.url_state import Link, section
from attention_atlas.ui.widgets import chart, intro, plain, plural, text_box, whole_number
from attention_atlas.viz_core.export import records_frame, series_frame, token_series_frame
from attention_atlas.viz_core.figures import grouped_bars, heatmap_row, lines
from attention_atlas.viz_core.stats import row_entropy

K = "scoring_"
LAYER, HEAD = 2, 5  # the real head shown first (within the model's range)
DIMS = [2, 4, 8, 16, 32, 64, 128, 256, 512]
st.title("🎯 Scoring functions")
intro(
    "Attention turns a **score** for every (query, key) pair into weights with a softmax. "
    "Here six scoring functions see the *same* queries and keys (random ones, or a real head's); only the score differs."
)
link = Link("scoring")

sources = ["random", *(f"real: {m}" for m in model_choices(queries_keys=True))]


def real_name(option: str) -> str:
    """A source as the URL names it: ``random`` or the model's id (``?source=minilm``)."""
    return option.removeprefix("real: ")


def follow_source() -> None:
    """A causal model's own scores are masked: picking one opens with the causal mask, and leaving
    one drops it, so the panels show what the caption says (a URL's mask still wins on opening)."""
    chosen = st.session_state[K + "source"]
    if chosen != "random" and capabilities(real_name(chosen)).causal:
        st.session_state[K + "mask"] = "causal"
    elif st.session_state.get(K + "mask") == "causal":
        st.session_state[K + "mask"] = MASK_NAMES[0]


source = st.radio(
    "queries and keys",
    sources,
    horizontal=True,
    key=link.choice("source", K + "source", sources, "random", text=real_name),
    on_change=follow_source,
)
real = None
if source == "random":
    c1, c2, c3 = st.columns(3)
    d = c1.select_slider("vector size d", DIMS, key=link.choice("d", K + "d", DIMS, 16, "is not on offer"))
    n = c2.slider("queries = keys", 2, 24, key=link.number("n", K + "n", 2, 24, 8))
    seed = whole_number(
        c3, "random seed", 0, 99_999, 0, link.number("seed", K + "seed", 0, 99_999, 0, checks_itself=True)
    )
else:
    model = capabilities(real_name(source))
    c1, c2, c3 = st.columns([3, 1, 1])
    text = text_box(c1, "text", link.text("text", K + "text", 200, model.example), 200, model.example)
    top_layer, top_head = model.layers - 1, model.heads - 1
    layer_key = link.number("layer", K + "layer", 0, top_layer, min(LAYER, top_layer), checks_itself=True)
    layer = whole_number(c2, "layer", 0, top_layer, min(LAYER, top_layer), layer_key)
    head_key = link.number("head", K + "head", 0, top_head, min(HEAD, top_head), checks_itself=True)
    head = whole_number(c3, "head", 0, top_head, min(HEAD, top_head), head_key)
    if not text.strip():
        st.info("Type a sentence: its tokens become the queries and keys.")
        st.stop()
    try:
        ensure_loaded(model.id)  # "Loading the model…", not "Reading queries and keys…", on a first visit
        real = model_queries_keys(model.id, text, layer, head)
    except ValueError as err:  # nothing left after cleaning, a text the tokenizer makes no tokens of
        st.warning(plain(err))
        st.stop()
    d, n, seed = real[0].shape[1], len(real[2]), 0
    if n < 2:
        st.info(f"{model.id} reads this as one token; comparing scores needs two or more: type a longer text.")
        st.stop()
    own = "the scaled dot panel"
    if model.causal:
        own += " with the causal mask (a causal model: each token reads itself and the tokens before)"
    elif "encoder_self" in model.kinds:
        own += " (the encoder's self-attention over the upper line)"
    st.caption(
        f"{plural(n, 'token')}, d = {d}: {model.id}'s layer {layer}, head {head}. Its own scores are "
        f"{own}; the other panels ask what this head would attend to under another scoring function."
    )
causal_source = source != "random" and model.causal
c1, c2, c3 = st.columns(3)
mask = c1.selectbox(
    "mask (the self-attention tutorial)",
    MASK_NAMES,
    key=link.choice("mask", K + "mask", MASK_NAMES, "causal" if causal_source else MASK_NAMES[0]),
)
window = c2.slider(
    "local window",
    0,
    n - 1,
    key=link.number("window", K + "window", 0, n - 1, min(1, n - 1)),
    disabled=mask != "local window",
)
stride = c3.slider(
    "stride", 1, n, key=link.number("stride", K + "stride", 1, n, min(3, n)), disabled=mask != "strided"
)
c1, c2, c3 = st.columns(3)
valid_len = c1.slider(
    "valid keys (padding)",
    1,
    n,
    key=link.number("valid", K + "valid", 1, n, max(1, n - 3)),
    disabled=mask != "padding",
)
temperature = c2.slider(
    "cosine temperature", 0.05, 2.0, step=0.05, key=link.number("temp", K + "temp", 0.05, 2.0, 0.2, 0.05)
)
sigma = c3.slider(
    "Gaussian σ", 0.25, 10.0, step=0.25, key=link.number("sigma", K + "sigma", 0.25, 10.0, 2.0, 0.25)
)
c1, c2 = st.columns(2)
identical = c1.toggle(
    "make every key identical (weights turn uniform)",
    key=link.flag("same", K + "same"),
    help="The attention-pooling tutorial: when all keys are equal, every score is equal, so softmax spreads evenly.",
)
relative = c2.toggle(
    "add a relative position bias (the self-attention tutorial)",
    key=link.flag("relbias", K + "relbias"),
    help="A learned number per offset (key − query), clipped at ±4, added to every score; here random.",
)
link.done()

masking = dict(mask=mask, window=window, stride=stride, valid_len=valid_len)
scoring = dict(temperature=temperature, sigma=sigma, identical_keys=identical, relative_bias=relative)
setup = ScoringSetup(d=d, n=n, seed=int(seed), **masking, **scoring)
records = scoring_records(setup, *(real or ()))
first = next(iter(records.values()))

section("Weights, one colour scale", "weights")
panels = {name: r.head() for name, r in records.items()}
chart(
    heatmap_row(panels, first.query_tokens, first.key_tokens, zmax=1.0),
    records_frame(records, "scoring"),
    K + "weights",
    "scoring_weights",
)
if identical and not relative:
    spread = max(float(np.ptp(r.head()[:, r.head()[0] > 0])) for r in records.values())
    st.success(
        f"All keys are equal, so every score in a row is equal and every function gives the "
        f"same weight to each allowed key (largest spread in a row: {spread:.2g})."
    )

st.subheader("How spread out is each query's attention?")
st.caption(
    f"Entropy in bits: 0 = all weight on one key; log₂({n}) = {np.log2(n):.2f} = uniform over all keys."
)
entropy = {name: row_entropy(r.head()) for name, r in records.items()}
chart(
    grouped_bars(first.query_tokens, entropy, "query", "entropy (bits)"),
    token_series_frame(first.query_tokens, entropy),
    K + "entropy",
    "scoring_entropy",
)

section("Why divide by √d?", "why-divide-by-sqrt-d")
st.markdown(
    "The dot product of two random d-dimensional vectors has variance d. Without scaling, the "
    "largest score soon dwarfs the rest and softmax becomes one-hot, where its gradient vanishes. "
    "Dividing by √d keeps the scores' spread the same at every d."
)
dims = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
curves = saturation(dims, n_keys=n, seed=int(seed))
named = {"dot (no scaling)": curves["dot"], "scaled dot (÷√d)": curves["scaled_dot"]}
chart(
    lines(dims, named, "vector size d", "mean largest weight", mode="lines+markers", log_x=True),
    series_frame(dims, named, "d"),
    K + "saturation",
    "softmax_saturation",
)
st.caption(f"1.0 = one-hot (saturated); 1/{n} = {1 / n:.2f} = uniform.")
