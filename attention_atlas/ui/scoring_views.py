"""The Scoring functions page's blocks: the source of queries and keys (a real head's, read from a
model, or random ones) and the three sections drawn from the six scoring functions' records:
the weights on one colour scale, each query's entropy, and softmax's saturation without ÷√d."""

from __future__ import annotations

import numpy as np
import streamlit as st

from attention_atlas.i18n import N_, _, ngettext
from attention_atlas.models.attention.demos import MASK_NAMES
from attention_atlas.ui.cached import capabilities, ensure_loaded, model_queries_keys, saturation
from attention_atlas.ui.url_state import section
from attention_atlas.ui.widgets import chart, plain, text_box, whole_number
from attention_atlas.viz_core.export import records_frame, series_frame, token_series_frame
from attention_atlas.viz_core.figures import grouped_bars, heatmap_row, lines
from attention_atlas.viz_core.stats import row_entropy

K = "scoring_"
LAYER, HEAD = 2, 5  # the real head shown first (within the model's range)
# The catalog's names of the masks (``MASK_NAMES``, the selectbox's options, shown with ``format_func=_``)
# and of the scoring functions (``SCORERS``: the panels' titles, the bars' legend).
MASKS = (N_("none"), N_("causal"), N_("local window"), N_("strided"), N_("padding"))
SCORERS = (N_("dot"), N_("scaled_dot"), N_("additive"), N_("general"), N_("cosine"), N_("gaussian"))


def real_name(option: str) -> str:
    """A source as the URL names it: ``random`` or the model's id (``?source=minilm``)."""
    return option.removeprefix("real: ")


def source_label(option: str) -> str:
    """A source as the radio shows it: "random", or "real: " and the model's id, in the visitor's language."""
    return _("random") if option == "random" else _("real: {model}", model=real_name(option))


def shown(series: dict) -> dict:
    """``series`` keyed by the scoring functions' names in the visitor's language (the CSVs keep the
    English names)."""
    return {_(name): value for name, value in series.items()}


def follow_source() -> None:
    """A causal model's own scores are masked: picking one opens with the causal mask, and leaving
    one drops it, so the panels show what the caption says (a URL's mask still wins on opening)."""
    chosen = st.session_state[K + "source"]
    if chosen != "random" and capabilities(real_name(chosen)).causal:
        st.session_state[K + "mask"] = "causal"
    elif st.session_state.get(K + "mask") == "causal":
        st.session_state[K + "mask"] = MASK_NAMES[0]
    if chosen != "random":
        clamp_head(capabilities(real_name(chosen)))


def clamp_head(model) -> None:
    """The layer and head the visitor had, brought silently into ``model``'s range: picking a model
    with fewer heads is no mistake to warn about (a number typed or linked out of range still is)."""
    for key, top in ((K + "layer", model.layers - 1), (K + "head", model.heads - 1)):
        value = st.session_state.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool) and value > top:
            st.session_state[key] = top


def real_inputs(link, model) -> tuple[tuple, int, int]:
    """A real head's queries and keys: the text, layer and head (in the page's link), the model
    loaded and the head read, and a caption naming it; ``(real, d, n)``. An empty text, a text with
    no tokens or with a single one stops the page with one line."""
    c1, c2, c3 = st.columns([3, 1, 1])
    text = text_box(c1, _("text"), link.text("text", K + "text", 200, model.example), 200, model.example)
    top_layer, top_head = model.layers - 1, model.heads - 1
    layer_key = link.number("layer", K + "layer", 0, top_layer, min(LAYER, top_layer), checks_itself=True)
    layer = whole_number(c2, _("layer"), 0, top_layer, min(LAYER, top_layer), layer_key)
    head_key = link.number("head", K + "head", 0, top_head, min(HEAD, top_head), checks_itself=True)
    head = whole_number(c3, _("head"), 0, top_head, min(HEAD, top_head), head_key)
    if not text.strip():
        st.info(_("Type a sentence: its tokens become the queries and keys."))
        st.stop()
    try:
        ensure_loaded(model.id)  # "Loading the model…", not "Reading queries and keys…", on a first visit
        real = model_queries_keys(model.id, text, layer, head)
    except ValueError as err:  # nothing left after cleaning, a text the tokenizer makes no tokens of
        st.warning(plain(err))
        st.stop()
    d, n = real[0].shape[1], len(real[2])
    if n < 2:
        st.info(
            _(
                "{model} reads this as one token; comparing scores needs two or more: type a longer text.",
                model=model.id,
            )
        )
        st.stop()
    if model.causal:
        own = _(
            "the scaled dot panel with the causal mask (a causal model: each token reads itself and the tokens before)"
        )
    elif "encoder_self" in model.kinds:
        own = _("the scaled dot panel (the encoder's self-attention over the upper line)")
    else:
        own = _("the scaled dot panel")
    st.caption(
        _(
            "{tokens}, d = {d}: {model}'s layer {layer}, head {head}. Its own scores are {own}; the other "
            "panels ask what this head would attend to under another scoring function.",
            tokens=ngettext("{n:,} token", "{n:,} tokens", n, n=n),
            d=d,
            model=model.id,
            layer=layer,
            head=head,
            own=own,
        )
    )
    return real, d, n


def weights_section(records: dict, identical: bool, relative: bool) -> None:
    """Every function's weights side by side on one colour scale; with identical keys (and no
    position bias), how evenly each row is spread."""
    first = next(iter(records.values()))
    section(_("Weights, one colour scale"), "weights")
    panels = shown({name: r.head() for name, r in records.items()})
    chart(
        heatmap_row(panels, first.query_tokens, first.key_tokens, zmax=1.0),
        lambda: records_frame(records, "scoring"),  # made when the CSV is asked for: 10% of a run here
        K + "weights",
        "scoring_weights",
    )
    if identical and not relative:
        spread = max(float(np.ptp(r.head()[:, r.head()[0] > 0])) for r in records.values())
        st.success(
            _(
                "All keys are equal, so every score in a row is equal and every function gives the "
                "same weight to each allowed key (largest spread in a row: {spread:.2g}).",
                spread=spread,
            )
        )


def entropy_section(records: dict, n: int) -> None:
    """Each query's entropy under each function: how spread out its attention is."""
    first = next(iter(records.values()))
    st.subheader(_("How spread out is each query's attention?"))
    st.caption(
        _(
            "Entropy in bits: 0 = all weight on one key; log₂({n}) = {bits:.2f} = uniform over all keys.",
            n=n,
            bits=np.log2(n),
        )
    )
    entropy = {name: row_entropy(r.head()) for name, r in records.items()}
    chart(
        grouped_bars(first.query_tokens, shown(entropy), _("query"), _("entropy (bits)")),
        lambda: token_series_frame(first.query_tokens, entropy),
        K + "entropy",
        "scoring_entropy",
    )


def saturation_section(n: int, seed: int) -> None:
    """Why divide by √d: the mean largest weight of the plain and the scaled dot product as d grows."""
    section(_("Why divide by √d?"), "why-divide-by-sqrt-d")
    st.markdown(
        _(
            "The dot product of two random d-dimensional vectors has variance d. Without scaling, the "
            "largest score soon dwarfs the rest and softmax becomes one-hot, where its gradient vanishes. "
            "Dividing by √d keeps the scores' spread the same at every d."
        )
    )
    dims = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
    curves = saturation(dims, n_keys=n, seed=seed)
    named = {N_("dot (no scaling)"): curves["dot"], N_("scaled dot (÷√d)"): curves["scaled_dot"]}
    chart(
        lines(
            dims, shown(named), _("vector size d"), _("mean largest weight"), mode="lines+markers", log_x=True
        ),
        series_frame(dims, named, "d"),
        K + "saturation",
        "softmax_saturation",
    )
    st.caption(_("1.0 = one-hot (saturated); 1/{n} = {share:.2f} = uniform.", n=n, share=1 / n))
