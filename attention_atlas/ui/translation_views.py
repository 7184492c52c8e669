"""The Translation page's blocks: a model run that stops the page with one line when it cannot
run, each model's translation with its alignment, the difference of two models forced through
the same French, the tutorial's four sentences (drawn only while unfolded), and what swapping
additive attention for the dot product costs (the bundled models' cards, the controlled bench)."""

from __future__ import annotations

import streamlit as st

from attention_atlas.i18n import N_, _
from attention_atlas.models.tasks.translation import cost_setup, cost_summary
from attention_atlas.ui.cached import card_table, run_model, translation_cost
from attention_atlas.ui.views import (
    alignment_chart,
    alignment_figure,
    beside,
    difference_chart,
    measures_as_rows,
)
from attention_atlas.ui.widgets import chart, plain
from attention_atlas.viz_core.export import record_frame, series_frame
from attention_atlas.viz_core.figures import lines

K = "translate_"
AXES = {"x_title": N_("English (keys)"), "y_title": N_("French (queries)")}  # translated where drawn
FONT = 16  # words must read from the back of a classroom
SMOOTH = 20  # training-loss curves: mean over this many steps
SEED_SENTENCES = ("Go.", "I lost.", "He's calm.", "I'm home.")


# The benchmark's measures (bench/bench_translation.py writes them in English: the table's rows).
COST_MEASURES = (
    N_("parameters"),
    N_("vocabulary"),
    N_("attention parameters"),
    N_("median s / step"),
    N_("× GRU + additive"),
    N_("s / epoch (est.)"),
    N_("training memory MB"),
    N_("loss, last 50 of 300 steps"),
    N_("valid BLEU"),
    N_("test BLEU"),
)


def use_example(sentence: str) -> None:
    """An example button's callback: its sentence in the English box, nothing forced."""
    st.session_state[K + "english"] = sentence
    st.session_state[K + "french"] = ""


def run(model_id: str, english: str, french: str, beam: int):
    """The model's translation (forced when ``french`` is given); missing weights or an input with
    no words left stop the page with one line."""
    try:
        return run_model(model_id, english, french or None, beam)
    except FileNotFoundError as err:
        st.info(_("The bundled weights are missing: {error}", error=plain(err)))
        st.stop()
    except ValueError as err:  # input with no words left after cleaning
        st.warning(plain(err))
        st.stop()


def axes() -> dict:
    """The heatmaps' axis titles in this run's language."""
    return {name: _(title) for name, title in AXES.items()}


def translations(results: dict, shown: list[str], both: bool, how: str) -> None:
    """Each shown model's French over its alignment heatmap, side by side where they fit."""
    places, figures = beside(
        lambda width: [
            alignment_figure(results[m].records["cross"], FONT, axes(), m if both else "", width)
            for m in shown
        ],
        len(shown),
    )
    for col, m, fig in zip(places, shown, figures, strict=True):
        rec = results[m].records["cross"]
        with col:
            used = " ".join(t for t in rec.query_tokens if t != "<eos>")  # a forced sentence as cut and read
            st.markdown(f"### {plain(results[m].output if results[m].output is not None else used)}")
            about = (
                N_("{model}, {how} · log-probability {log_prob:.2f}")
                if rec.meta.get("finished", True)
                else N_(
                    "{model}, {how} · log-probability {log_prob:.2f} · stopped at the length cap before <eos>"
                )
            )
            st.caption(_(about, model=m, how=how, log_prob=rec.meta["log_prob"]))
            chart(fig, lambda rec=rec: record_frame(rec), K + "heat_" + m, m)


def difference(results: dict, shown: list[str], english: str, french: str) -> None:
    """The same French forced through both models, so that their rows line up word for word."""
    a_id, b_id = shown
    reference = french or results[a_id].output
    a, b = (run(m, english, reference, 1).records["cross"] for m in shown)
    st.subheader(_("Difference: {a} − {b}", a=a_id, b=b_id))
    whose = _("yours") if french else _("{model}'s translation", model=a_id)
    st.caption(
        _(
            "Both models force-decode the same French ({whose}), so each row is the same word: "
            "red where the first model reads an English word more, blue where the second does.",
            whose=whose,
        )
    )
    difference_chart(a, b, (a_id, b_id), FONT, K + "diff", "translation_difference")


def seed_sentences(shown: list[str]) -> None:
    """The tutorial's four sentences through the shown models, in an expander drawn only while open
    (opening it reruns the page): four charts a model that most visits never unfold."""
    seeds = st.expander(
        _("The Bahdanau tutorial's four sentences, translated by {models}", models=", ".join(shown)),
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
                        alignment_chart(r.records["cross"], FONT, axes(), K + "seed_" + m + sentence, m)


def swap_cost(ids: list[str]) -> None:
    """Additive or dot product: the bundled models' test scores, then the controlled comparison's
    summary, table and curves; without measurements, one line and the page stops."""
    st.header(_("Additive or dot product: what does the swap cost?"))
    bundled = card_table(tuple(ids))
    if not bundled.empty:
        st.markdown(
            _("**The bundled models**, each trained for the same budget, on the held-out test pairs:")
        )
        st.dataframe(bundled, hide_index=True, width="stretch")
    cost = translation_cost(SMOOTH)
    if cost is None:
        st.info(
            _(
                "No measurements yet: run `python -m bench.bench_translation` to make "
                "attention_atlas/data/translation_cost.json."
            )
        )
        st.stop()
    st.markdown(
        _(
            "**A controlled comparison** (`bench/bench_translation.py`): the same batches, the same steps, "
            "timed in turns."
        )
    )
    st.markdown(cost_summary(cost["table"].to_dict("records")))  # in this visitor's language
    named = cost["table"].assign(
        variant=cost["table"]["variant"].map(_)
    )  # the variants in this visitor's words
    named = named.rename(columns={m: _(m) for m in COST_MEASURES})  # and the measures
    st.dataframe(measures_as_rows(named, "variant"), hide_index=True, width="stretch")
    st.caption(
        _("{setup} Loss curves: the mean of every {n} steps.", setup=cost_setup(cost["setup"]), n=SMOOTH)
    )
    curves = [
        ("loss", _("training loss per word"), "lines", "translation_loss_curves"),
        ("bleu", _("validation BLEU"), "lines+markers", "translation_bleu_curves"),
    ]
    for col, (name, y_title, mode, filename) in zip(st.columns(2), curves, strict=True):
        frame = cost[name]
        series = {k: frame[k].to_numpy() for k in frame}
        with col:
            legend = {_(k): v for k, v in series.items()}  # the CSV keeps the English names
            fig = lines(frame.index.to_numpy(), legend, _("step"), y_title, mode=mode)
            chart(fig, series_frame(frame.index.to_numpy(), series, "step"), K + name, filename)
