"""Home: what each page shows."""

import streamlit as st

st.title("🔭 Attention Atlas")
st.markdown(
    "See attention at work: type a sentence or a Chinese couplet line, and look at what each "
    "model attends to. Everything runs here, offline; nothing you type leaves this machine."
)

st.subheader("Pages")
st.page_link(
    "app_pages/scoring.py",
    label="**Scoring functions**: six scores on the same queries and keys, side by side; why ÷√d; masks.",
    icon="🎯",
)
st.page_link(
    "app_pages/positional.py",
    label="**Positional encoding**: sinusoidal curves, the matrix P, why P·Pᵀ depends on the offset; binary counting.",
    icon="🌊",
)
st.page_link(
    "app_pages/pooling.py",
    label="**Attention pooling**: Nadaraya–Watson regression, the simplest attention; train a kernel width live.",
    icon="📈",
)

st.page_link(
    "app_pages/transformer.py",
    label="**Transformer heads**: every layer and head of minilm, SmolLM2 or our Transformer; rollout and flow.",
    icon="🧠",
)
st.page_link(
    "app_pages/couplets.py",
    label="**Couplets**: type an upper line (上联) and watch the seq2seq model write the lower line, "
    "character by character, with its alignment.",
    icon="🏮",
)
st.page_link(
    "app_pages/translation.py",
    label="**Translation**: English in, French out, and where the decoder looked for each word; "
    "additive vs dot product.",
    icon="🗼",
)
st.page_link(
    "app_pages/checkpoint.py",
    label="**Checkpoint inspector**: upload a model you trained; it is loaded without running any of "
    "its code, and shown beside ours.",
    icon="🧳",
)

st.caption(
    "Heatmaps: rows are queries (what is looking), columns are keys (what is looked at); "
    "hover a cell for both tokens and the weight. Every chart has a CSV download; the camera "
    "icon on a chart saves a PNG."
)
