"""Couplets (seed 000): an upper line in, the lower line and its alignment out."""

import numpy as np
import pandas as pd
import streamlit as st

from models.registry import available
from ui.widgets import chart
from viz_core.export import record_frame, series_frame
from viz_core.figures import grouped_bars, heatmap, heatmap_row
from viz_core.tokens import hover_labels

K = "couplet_"
BIG = 24  # tick font size: characters must read from the back of a room
AXES = {"x_title": "upper line 上联 (keys)", "y_title": "lower line 下联 (queries)"}


@st.cache_resource(show_spinner="Loading the model…")
def couplet_adapter(model_id: str):
    from models.registry import load

    return load(model_id)


@st.cache_data(show_spinner=False, max_entries=512)
def couplet_run(model_id: str, upper: str, target: str, beam: int):
    return couplet_adapter(model_id).run(upper, target=target or None, beam=beam)


def big(fig):
    fig.update_xaxes(tickfont_size=BIG)
    fig.update_yaxes(tickfont_size=BIG)
    return fig


st.title("🏮 Couplets")
st.markdown(
    "Seed 000's seq2seq: a bidirectional LSTM reads the upper line, an LSTM writes the lower line "
    "one character at a time, and before each character it **attends** to the upper line. "
    "Couplets match position by position, so a model that has learned to attend well shows a "
    "diagonal. Two attentions: parameter-free scaled dot product, and Bahdanau's additive one."
)

ids = [m.id for m in available() if m.family == "couplet"]
c1, c2 = st.columns([3, 2])
upper = c1.text_input("Upper line 上联", "两个黄鹂鸣翠柳", key=K + "upper")
target = c1.text_input(
    "Force a lower line 下联 (optional; empty: the model writes one)",
    "",
    key=K + "target",
    placeholder="一行白鹭上青天",
).strip()
both = c2.toggle("Dot and additive side by side", key=K + "both")
model_id = c2.selectbox(
    "Model",
    ids,
    index=ids.index("couplet-rnn-additive") if "couplet-rnn-additive" in ids else 0,
    key=K + "model",
    disabled=both,
)
beam = c2.slider("Beam width (1 = greedy)", 1, 8, 1, key=K + "beam", disabled=bool(target))

if not upper.strip():
    st.info("Type an upper line (上联), e.g. 两个黄鹂鸣翠柳.")
    st.stop()
if not ids:
    st.info("No couplet model is registered.")
    st.stop()
shown = ids if both else [model_id]
try:
    results = {m: couplet_run(m, upper, target, beam) for m in shown}
except FileNotFoundError as err:
    st.info(f"The bundled weights are missing: {err}")
    st.stop()

for notice in dict.fromkeys(n for r in results.values() for n in r.notices):
    st.warning(notice)


def line_of(result) -> str:
    return result.output if result.output is not None else "".join(result.records["cross"].query_tokens)


def scores(rec) -> str:
    w = rec.head()
    n = min(w.shape)
    mass = float(np.mean(w[np.arange(n), np.arange(n)]))
    return f"alignment {rec.meta['alignment']:.0%} of characters (argmax) · {mass:.0%} of the weight on the diagonal"


verb = "forced" if target else ("greedy" if beam == 1 else f"beam {beam}")
if not both:
    rec = results[model_id].records["cross"]
    st.markdown(f"### {''.join(rec.key_tokens)} → {line_of(results[model_id])}")
    st.caption(f"{model_id}, {verb}: {scores(rec)}")
    chart(
        big(heatmap(rec.head(), rec.query_tokens, rec.key_tokens, **AXES)),
        record_frame(rec),
        K + "heat",
        "couplet_attention",
    )
else:
    cols = st.columns(len(shown))
    for col, m in zip(cols, shown, strict=True):
        rec = results[m].records["cross"]
        with col:
            st.markdown(f"### {line_of(results[m])}")
            st.caption(f"{m}, {verb}: {scores(rec)}")
            chart(
                big(heatmap(rec.head(), rec.query_tokens, rec.key_tokens, title=m, **AXES)),
                record_frame(rec),
                K + "heat_" + m,
                m,
            )
    if len(shown) == 2:
        a, b = (results[m].records["cross"] for m in shown)
        if a.head().shape == b.head().shape:
            rows = [x if x == y else f"{x}｜{y}" for x, y in zip(a.query_tokens, b.query_tokens, strict=True)]
            diff = a.head() - b.head()
            st.subheader(f"Difference: {shown[0]} − {shown[1]}")
            st.caption(
                "Red: the first model attends more; blue: the second. Rows are positions of the "
                "lower lines (both have the upper line's length); 'x｜y' where they differ."
            )
            chart(
                big(
                    heatmap_row(
                        {f"{shown[0]} − {shown[1]}": diff},
                        rows,
                        a.key_tokens,
                        zmin=-1,
                        zmax=1,
                        colorscale="RdBu_r",
                        label="difference",
                    )
                ),
                pd.DataFrame(diff, index=rows, columns=hover_labels(a.key_tokens)).reset_index(),
                K + "diff",
                "couplet_difference",
            )

st.subheader("Step through the decoding")
step_model = model_id
rec = results[step_model].records["cross"]
n = len(rec.query_tokens)
step = st.slider("Step", 1, n, 1, key=K + "step") if n > 1 else 1
written = "".join(rec.query_tokens[: step - 1])
st.markdown(
    f"Writing character **{step}** of {n} ({step_model}): {written}**[{rec.query_tokens[step - 1]}]**"
)
c1, c2 = st.columns([3, 2])
with c1:
    row = rec.head()[step - 1]
    labels = hover_labels(rec.key_tokens)
    fig = grouped_bars(
        labels, {"weight": row}, "upper line 上联", "attention weight", title="where the decoder looked"
    )
    fig.update_xaxes(ticktext=rec.key_tokens, tickvals=labels, tickfont_size=BIG)
    chart(fig, series_frame(labels, {"weight": row}, "upper"), K + "step_bars", "couplet_step")
with c2:
    top = rec.meta.get("top_candidates")
    if top:
        table = pd.DataFrame(top[step - 1], columns=["candidate", "probability"])
        table["chosen"] = np.where(table["candidate"] == rec.query_tokens[step - 1], "←", "")
        st.markdown("**The model's top candidates at this step**")
        st.dataframe(table, hide_index=True, width="stretch")
        st.caption("Its own probabilities, before the couplet rule (length, punctuation) is applied.")
