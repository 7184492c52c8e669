"""Translation (the Bahdanau tutorial): English in, French out, with the alignment the decoder attended by."""

import streamlit as st

from attention_atlas.ui.cached import (
    capabilities,
    card_table,
    first_index,
    model_choices,
    run_model,
    translation_cost,
)
from attention_atlas.ui.url_state import Link
from attention_atlas.ui.views import (
    alignment_chart,
    alignment_figure,
    beside,
    difference_chart,
    measures_as_rows,
    show_notices,
)
from attention_atlas.ui.widgets import chart, intro, plain, text_box
from attention_atlas.viz_core.export import record_frame, series_frame
from attention_atlas.viz_core.figures import lines

K = "translate_"
TEXT_LIMIT = 5000
AXES = {"x_title": "English (keys)", "y_title": "French (queries)"}
FONT = 16  # words must read from the back of a classroom
SMOOTH = 20  # training-loss curves: mean over this many steps
SEED_SENTENCES = ("Go.", "I lost.", "He's calm.", "I'm home.")


def use_example(sentence: str) -> None:
    st.session_state[K + "english"] = sentence
    st.session_state[K + "french"] = ""


def run(model_id: str, english: str, french: str, beam: int):
    try:
        return run_model(model_id, english, french or None, beam)
    except FileNotFoundError as err:
        st.info(f"The bundled weights are missing: {plain(err)}")
        st.stop()
    except ValueError as err:  # input with no words left after cleaning
        st.warning(plain(err))
        st.stop()


st.title("🗼 Translation")
intro(
    "The Bahdanau tutorial: a GRU encoder reads the English sentence, a GRU decoder writes French one word "
    "at a time, and before each word it **attends** to the English words with Bahdanau's "
    "additive attention. Its variant swaps in an LSTM and the scaled dot product. Each row of "
    "the heatmap is one French word; its colours say which English words the decoder read to "
    "write it. Word order differs between the languages, so the alignment bends where French does."
)

link = Link("translation")
ids = model_choices(task="translation")
if not ids:
    st.info("No translation model is registered.")
    st.stop()

st.caption("The Bahdanau tutorial's four sentences:")
for col, sentence in zip(
    st.columns(len(SEED_SENTENCES) + 3)[: len(SEED_SENTENCES)], SEED_SENTENCES, strict=True
):
    col.button(sentence, key=K + "ex_" + sentence, on_click=use_example, args=(sentence,))

first = ids[first_index(ids)]
example = capabilities(first).example
c1, c2 = st.columns([3, 2])
english = text_box(c1, "English", link.text("text", K + "english", TEXT_LIMIT, example), TEXT_LIMIT, example)
french = c1.text_input(
    "Force a French sentence (optional; empty: the model translates)",
    key=link.text("target", K + "french", TEXT_LIMIT),
    placeholder="Je suis chez moi.",
).strip()
both = c2.toggle("Both models side by side", key=link.flag("both", K + "both"))
model_id = c2.selectbox("Model", ids, key=link.choice("model", K + "model", ids, first), disabled=both)
beam = c2.slider(
    "Beam width (1 = greedy)", 1, 8, key=link.number("beam", K + "beam", 1, 8, 1), disabled=bool(french)
)
link.done()  # every setting is above; the rest of the page only reads them

if not english.strip():
    st.info(f"Type an English sentence, e.g. {example} (or click one of the tutorial's sentences)")
    st.stop()

shown = ids if both else [model_id]
results = {m: run(m, english, french, beam) for m in shown}
show_notices((n for r in results.values() for n in r.notices), warn=True)
how = "forced" if french else ("greedy" if beam == 1 else f"beam {beam}")
places, figures = beside(
    lambda width: [
        alignment_figure(results[m].records["cross"], FONT, AXES, m if both else "", width) for m in shown
    ],
    len(shown),
)
for col, m, fig in zip(places, shown, figures, strict=True):
    rec = results[m].records["cross"]
    unfinished = "" if rec.meta.get("finished", True) else " · stopped at the length cap before <eos>"
    with col:
        used = " ".join(t for t in rec.query_tokens if t != "<eos>")  # a forced sentence as cut and read
        st.markdown(f"### {plain(results[m].output if results[m].output is not None else used)}")
        st.caption(f"{m}, {how} · log-probability {rec.meta['log_prob']:.2f}{unfinished}")
        chart(fig, record_frame(rec), K + "heat_" + m, m)

if both:
    # The same French forced through both models, so that their rows line up word for word.
    a_id, b_id = shown
    reference = french or results[a_id].output
    a, b = (run(m, english, reference, 1).records["cross"] for m in shown)
    st.subheader(f"Difference: {a_id} − {b_id}")
    whose = "yours" if french else f"{a_id}'s translation"
    st.caption(
        f"Both models force-decode the same French ({whose}), so each row is the same word: "
        "red where the first model reads an English word more, blue where the second does."
    )
    difference_chart(a, b, (a_id, b_id), FONT, K + "diff", "translation_difference")

# Drawn only while open (opening it reruns the page): four charts a model that most visits never unfold.
seeds = st.expander(
    "The Bahdanau tutorial's four sentences, translated by " + ", ".join(shown),
    key=K + "seeds_" + "_".join(shown),
    on_change="rerun",
)
if seeds.open:
    with seeds:
        for sentence in SEED_SENTENCES:
            for col, m in zip(st.columns(len(shown)), shown, strict=True):
                r = run(m, sentence, "", 1)
                with col:
                    st.markdown(f"**{plain(sentence)}** → {plain(r.output)}  \n`{m}`")
                    alignment_chart(r.records["cross"], FONT, AXES, K + "seed_" + m + sentence, m)

st.header("Additive or dot product: what does the swap cost?")
bundled = card_table(tuple(ids))
if not bundled.empty:
    st.markdown("**The bundled models**, each trained for the same budget, on the held-out test pairs:")
    st.dataframe(bundled, hide_index=True, width="stretch")
cost = translation_cost(SMOOTH)
if cost is None:
    st.info(
        "No measurements yet: run `python -m bench.bench_translation` to make attention_atlas/data/translation_cost.json."
    )
    st.stop()
st.markdown(
    "**A controlled comparison** (`bench/bench_translation.py`): the same batches, the same steps, timed in turns."
)
st.markdown(cost["summary"])
st.dataframe(measures_as_rows(cost["table"], "variant"), hide_index=True, width="stretch")
st.caption(cost["setup"] + f" Loss curves: the mean of every {SMOOTH} steps.")
curves = [
    ("loss", "training loss per word", "lines", "translation_loss_curves"),
    ("bleu", "validation BLEU", "lines+markers", "translation_bleu_curves"),
]
for col, (name, y_title, mode, filename) in zip(st.columns(2), curves, strict=True):
    frame = cost[name]
    series = {k: frame[k].to_numpy() for k in frame}
    with col:
        fig = lines(frame.index.to_numpy(), series, "step", y_title, mode=mode)
        chart(fig, series_frame(frame.index.to_numpy(), series, "step"), K + name, filename)
