"""Home: what each page shows, and one link per tutorial lesson that opens its page as the lesson
discusses it (the page's settings in the link's query, read by ``ui.url_state``; the links in
``ui.home_views``)."""

import streamlit as st

from attention_atlas.i18n import _
from attention_atlas.paths import page
from attention_atlas.ui.cached import model_choices
from attention_atlas.ui.home_views import lesson_links, wrapped_links
from attention_atlas.ui.widgets import intro

st.title("🔭 Attention Atlas")
intro(
    _(
        "See attention at work: type a sentence or a Chinese couplet line, and look at what each "
        "model attends to. Everything runs here, offline; nothing you type leaves this machine."
    )
)

wrapped_links()
st.subheader(_("Pages"))
st.page_link(
    page("scoring.py"),
    label=_("**Scoring functions**: six scores on the same queries and keys, side by side; why ÷√d; masks."),
    icon="🎯",
)
st.page_link(
    page("positional.py"),
    label=_(
        "**Positional encoding**: sinusoidal curves, the matrix P, why P·Pᵀ depends on the offset; binary counting."
    ),
    icon="🌊",
)
st.page_link(
    page("pooling.py"),
    label=_(
        "**Attention pooling**: Nadaraya–Watson regression, the simplest attention; train a kernel width live."
    ),
    icon="📈",
)
st.page_link(
    page("complexity.py"),
    label=_(
        "**Attention vs CNN, RNN**: the tutorial's cost table measured on this machine: time and memory "
        "as n grows, fitted slopes, the crossover, paths between tokens."
    ),
    icon="⏱️",
)

st.page_link(
    page("transformer.py"),
    label=_(
        "**Transformer heads**: every layer and head of {models}; rollout and flow.",
        models=", ".join(model_choices(transformer=True)),
    ),
    icon="🧠",
)
st.page_link(
    page("long_input.py"),
    label=_(
        "**Long inputs**: a whole text up to the model's own context, thousands of tokens; every head "
        "computed from its queries and keys."
    ),
    icon="📜",
)
st.page_link(
    page("corpus.py"),
    label=_("**Corpus**: thousands of texts through one model; every head summarised, searched, mapped."),
    icon="📚",
)
st.page_link(
    page("prediction.py"),
    label=_(
        "**Inside a prediction**: the logit lens: what the model would predict after each block, "
        "a token followed through the blocks, what each block promoted and suppressed."
    ),
    icon="🔬",
)
st.page_link(
    page("attribution.py"),
    label=_(
        "**Does attention explain?**: one output scored by attention, gradients and occlusion side by side, "
        "and each method's faithfulness measured."
    ),
    icon="🔍",
)
st.page_link(
    page("couplets.py"),
    label=_(
        "**Couplets**: type an upper line (上联) and watch the seq2seq model write the lower line, "
        "character by character, with its alignment."
    ),
    icon="🏮",
)
st.page_link(
    page("translation.py"),
    label=_(
        "**Translation**: English in, French out, and where the decoder looked for each word; "
        "additive vs dot product."
    ),
    icon="🗼",
)
st.page_link(
    page("watch_learn.py"),
    label=_("**Watch attention learn**: train the couplet model live and see its alignment appear."),
    icon="🎬",
)
st.page_link(
    page("checkpoint.py"),
    label=_(
        "**Checkpoint inspector**: upload a model you trained; it is loaded without running any of "
        "its code, and shown beside ours."
    ),
    icon="🧳",
)

lesson_links()

st.caption(
    _(
        "Heatmaps: rows are queries (what is looking), columns are keys (what is looked at); "
        "hover a cell for both tokens and the weight. Every chart has a CSV download; the camera "
        "icon on a chart saves a PNG. Every page keeps its settings in its address: the sidebar's "
        "**Link to this view** gives a link that opens the same view."
    )
)
