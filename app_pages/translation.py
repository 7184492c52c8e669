"""Translation (seed 004): English in, French out, with the alignment the decoder attended by."""

import json
from pathlib import Path

import pandas as pd
import streamlit as st

from ui.cached import model_choices, run_model
from ui.widgets import chart
from viz_core.export import record_frame, series_frame
from viz_core.figures import heatmap, lines

K = "translate_"
DEFAULT = "translate-gru-additive"
AXES = {"x_title": "English (keys)", "y_title": "French (queries)"}
FONT = 16  # words must read from the back of a classroom
SMOOTH = 20  # training-loss curves: mean over this many steps
SEED_SENTENCES = ("Go.", "I lost.", "He's calm.", "I'm home.")
ROOT = Path(__file__).resolve().parents[1]
COST_FILE = ROOT / "bench" / "translation_cost.json"
WEIGHTS = ROOT / "weights"


def use_example(sentence: str) -> None:
    st.session_state[K + "english"] = sentence
    st.session_state[K + "french"] = ""


def run(model_id: str, english: str, french: str, beam: int):
    try:
        return run_model(model_id, english, french or None, beam)
    except FileNotFoundError as err:
        st.info(f"The bundled weights are missing: {err}")
        st.stop()
    except ValueError as err:  # input with no words left after cleaning
        st.warning(str(err))
        st.stop()


def alignment_chart(model_id: str, result, key: str, title: str = "") -> None:
    rec = result.records["cross"]
    fig = heatmap(rec.head(), rec.query_tokens, rec.key_tokens, title=title, **AXES)
    fig.update_xaxes(tickfont_size=FONT)
    fig.update_yaxes(tickfont_size=FONT)
    chart(fig, record_frame(rec), key, model_id)


def caption(model_id: str, result, how: str) -> str:
    rec = result.records["cross"]
    unfinished = "" if rec.meta.get("finished", True) else " · stopped at the length cap before <eos>"
    return f"{model_id}, {how} · log-probability {rec.meta['log_prob']:.2f}{unfinished}"


def bundled_table(model_ids: list[str]) -> pd.DataFrame:
    """Each bundled model's training budget and test scores, from its metrics.json."""
    rows = []
    for m in model_ids:
        card = WEIGHTS / m / "metrics.json"
        if not card.is_file():
            continue
        data = json.loads(card.read_text(encoding="utf-8"))
        t, k = data["training"], data["metrics"]
        beam_key = next(x for x in k if x.startswith("bleu_beam"))
        rows.append(
            {
                "model": m,
                "steps": t["steps"],
                "epochs": t["epochs"],
                "test pairs": k["n_pairs"],
                "test BLEU (greedy)": k["bleu"],
                f"test BLEU (beam {beam_key[9:]})": k[beam_key],
                "exact match": f"{k['exact_match']:.1%}",
            }
        )
    return pd.DataFrame(rows)


st.title("🗼 Translation")
st.markdown(
    "Seed 004: a GRU encoder reads the English sentence, a GRU decoder writes French one word "
    "at a time, and before each word it **attends** to the English words with Bahdanau's "
    "additive attention. Its variant swaps in an LSTM and the scaled dot product. Each row of "
    "the heatmap is one French word; its colours say which English words the decoder read to "
    "write it. Word order differs between the languages, so the alignment bends where French does."
)

ids = model_choices(("translation",))
if not ids:
    st.info("No translation model is registered.")
    st.stop()

st.caption("The seed's four sentences:")
for col, sentence in zip(
    st.columns(len(SEED_SENTENCES) + 3)[: len(SEED_SENTENCES)], SEED_SENTENCES, strict=True
):
    col.button(sentence, key=K + "ex_" + sentence, on_click=use_example, args=(sentence,))

# Defaults through session state, since the example buttons also set these boxes.
st.session_state.setdefault(K + "english", "I'm home.")
st.session_state.setdefault(K + "french", "")
c1, c2 = st.columns([3, 2])
english = c1.text_input("English", key=K + "english", max_chars=5000)
french = c1.text_input(
    "Force a French sentence (optional; empty: the model translates)",
    key=K + "french",
    placeholder="Je suis chez moi.",
).strip()
both = c2.toggle("Both models side by side", key=K + "both")
model_id = c2.selectbox(
    "Model", ids, index=ids.index(DEFAULT) if DEFAULT in ids else 0, key=K + "model", disabled=both
)
beam = c2.slider("Beam width (1 = greedy)", 1, 8, 1, key=K + "beam", disabled=bool(french))

if not english.strip():
    st.info("Type an English sentence, e.g. I'm home. (or click one of the seed's sentences)")
    st.stop()

shown = ids if both else [model_id]
results = {m: run(m, english, french, beam) for m in shown}
for notice in dict.fromkeys(n for r in results.values() for n in r.notices):
    st.warning(notice)

how = "forced" if french else ("greedy" if beam == 1 else f"beam {beam}")
cols = st.columns(len(shown))
for col, m in zip(cols, shown, strict=True):
    r = results[m]
    with col:
        st.markdown(f"### {r.output if r.output is not None else french}")
        st.caption(caption(m, r, how))
        alignment_chart(m, r, K + "heat_" + m, title=m if both else "")

with st.expander("The seed's four sentences, translated by " + ", ".join(shown), expanded=False):
    for sentence in SEED_SENTENCES:
        cols = st.columns(len(shown))
        for col, m in zip(cols, shown, strict=True):
            r = run(m, sentence, "", 1)
            with col:
                st.markdown(f"**{sentence}** → {r.output}  \n`{m}`")
                alignment_chart(m, r, K + "seed_" + m + sentence)

st.header("Additive or dot product: what does the swap cost?")
bundled = bundled_table(ids)
if not bundled.empty:
    st.markdown("**The bundled models**, each trained for the same budget, on the held-out test pairs:")
    st.dataframe(bundled, hide_index=True, width="stretch")
if not COST_FILE.is_file():
    st.info(
        "No measurements yet: run `python bench/bench_translation.py` to make bench/translation_cost.json."
    )
    st.stop()
cost = json.loads(COST_FILE.read_text(encoding="utf-8"))
st.markdown(
    "**A controlled comparison** (`bench/bench_translation.py`): the same batches, the same steps, timed in turns."
)
st.markdown(cost["summary"])
table = pd.DataFrame(cost["table"])
st.dataframe(table, hide_index=True, width="stretch")
st.caption(cost["setup"])
c1, c2 = st.columns(2)
with c1:
    curves = {v["name"]: pd.Series(v["loss"], index=v["steps"]) for v in cost["variants"]}
    frame = pd.DataFrame(curves).rolling(SMOOTH, min_periods=1).mean()
    chart(
        lines(
            frame.index.to_numpy(),
            {k: frame[k].to_numpy() for k in frame},
            "step",
            f"training loss per word (mean of {SMOOTH} steps)",
        ),
        series_frame(frame.index.to_numpy(), {k: frame[k].to_numpy() for k in frame}, "step"),
        K + "loss",
        "translation_loss_curves",
    )
with c2:
    curves = {v["name"]: pd.Series(v["bleu"], index=v["eval_steps"]) for v in cost["variants"]}
    frame = pd.DataFrame(curves)
    chart(
        lines(
            frame.index.to_numpy(),
            {k: frame[k].to_numpy() for k in frame},
            "step",
            "validation BLEU",
            mode="lines+markers",
        ),
        series_frame(frame.index.to_numpy(), {k: frame[k].to_numpy() for k in frame}, "step"),
        K + "bleu",
        "translation_bleu_curves",
    )
