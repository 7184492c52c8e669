"""The Does attention explain? page's parts: one output's attribution by every method, computed once
per model (a bundled one, or an upload by its key), text, output and steps and shared
(``models.analysis.attribution``), and its blocks: the methods × tokens heatmap, the input coloured by
one method, the faithfulness table with the deletion curves, the methods' rank agreement; the same for
an uploaded decoder or seq2seq model in a folded panel of the Checkpoint inspector (``upload_panel``)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import streamlit as st

from attention_atlas.i18n import N_, _
from attention_atlas.ui import cached
from attention_atlas.ui.plain_text import plain
from attention_atlas.ui.url_state import Unlinked, section
from attention_atlas.ui.widgets import chart, fact
from attention_atlas.viz_core.figures import attribution_heatmap, lines, matrix_heatmap

FAMILIES = ("couplet", "translation", "encoder-decoder", "causal")  # the models with an output token
POINTS = 33  # the deletion curve's points on the page: a long input's curve is sampled, not every k


def models() -> list[str]:
    """Every registered model that writes an output token."""
    from attention_atlas.models.registry import available

    return [m.id for m in available() if m.family in FAMILIES]


@st.cache_data(show_spinner=cached.Said(N_("Computing every attribution…")), max_entries=16, ttl=cached.TTL)
def _attribution(key: str, text: str, target: str | None, position: int | None, steps: int, _source):
    from attention_atlas.models.analysis.attribution import attribute, subject_of

    with cached.lane_for(key, text).turn():
        return attribute(subject_of(_source.adapter, text, target, position), steps=steps, points=POINTS)


@st.cache_data(show_spinner=cached.Said(N_("Reading that head's attention…")), max_entries=16, ttl=cached.TTL)
def _attention_at(key: str, text: str, target: str | None, position: int | None, layer, head, _source):
    from attention_atlas.models.analysis.attribution import at_head, attribute, subject_of

    with cached.lane_for(key, text).turn():
        subject = at_head(subject_of(_source.adapter, text, target, position), layer, head)
        return attribute(subject, ("attention",), points=POINTS)


def _queued(source: cached.Source, text: str, key: tuple, call):
    """``call()``: a bundled model's after its turn in the line (``cached.queued``, which loads it); an
    upload, loaded already, takes its lane inside the call."""
    return cached.queued(source.key, text, key, call) if source.bundled else call()


def attribution(
    source: cached.Source,
    text: str,
    target: str | None,
    position: int | None,
    steps: int,
    layer=None,
    head=None,
):
    """The attribution of one output of ``source`` (a bundled model or an upload; cached by its key, in
    its lane), its attention row that of ``layer`` and ``head`` where given (``at_head``), or None after
    a one-line notice."""
    key = ("attribution", source.key, text, target, position, steps)
    try:
        result = _queued(
            source, text, key, lambda: _attribution(source.key, text, target, position, steps, source)
        )
        if (layer is None and head is None) or "attention" not in result.methods:
            return result
        part = _queued(
            source,
            text,
            (*key, layer, head),
            lambda: _attention_at(source.key, text, target, position, layer, head, source),
        )
        return result.with_row(part, "attention")
    except (ValueError, FileNotFoundError, RuntimeError) as err:  # RuntimeError: an upload that cannot run
        st.info(plain(" ".join(str(err).split())))
        return None


LAST, MEAN = "last", "mean"


def head_choice(link, key: str, model_id: str, info, col) -> tuple[int | None, int | None]:
    """The layer and head whose row the attention method is (a Transformer's; default the last layer, its
    heads averaged), both in the page's link; ``(None, None)`` for a model of one attention."""
    if info.layers * info.heads <= 1:
        return None, None
    layers, heads = [LAST, *range(info.layers)], [MEAN, *range(info.heads)]
    a, b = col.columns(2)
    layer = a.selectbox(
        _("attention: layer"),
        layers,
        format_func=lambda v: _("last") if v == LAST else str(v),
        key=link.choice("layer", f"{key}layer_{model_id}", layers, LAST),  # per model: their layers differ
    )
    head = b.selectbox(
        _("head"),
        heads,
        format_func=lambda v: _("mean") if v == MEAN else str(v),
        key=link.choice("head", f"{key}head_{model_id}", heads, MEAN),
    )
    return (None if layer == LAST else layer), (None if head == MEAN else head)


def output_settings(link, key: str, col) -> tuple[int | None, int]:
    """The output position (None: the last) and integrated gradients' steps, both in ``link``."""
    position = col.number_input(
        _("output position (−1: the last)"),
        min_value=-1,
        max_value=255,
        step=1,
        key=link.number("position", key + "position", -1, 255, -1),
    )
    steps = col.slider(
        _("integrated gradients' steps"), 4, 128, key=link.number("steps", key + "steps", 4, 128, 32)
    )
    return (None if position < 0 else int(position)), steps


def explained(result, link, key: str) -> None:
    """One attribution drawn: the headline, the methods × tokens heatmap, the input coloured by a method
    picked, the faithfulness table and curves, the methods' rank agreement (the choices in ``link``)."""
    from attention_atlas.models.analysis.attribution import METHODS, SIGNED

    headline(result)
    heatmap_block(result, SIGNED, key + "heat")
    shown = [m for m in METHODS if m in result.methods]
    method = (
        st.segmented_control(
            _("colour the input by"),
            shown,
            format_func=named,
            key=link.choice("method", key + "method", shown, shown[-1]),
        )
        or shown[-1]
    )
    coloured_text(result, method, SIGNED, key + "text_chart")
    section(_("Faithfulness: does removing what a method points at change the output?"), "faithfulness")
    faithfulness_block(result, key + "faith")
    st.subheader(_("Do the methods agree?"))
    rank = (
        st.segmented_control(
            _("rank agreement"),
            RANKS,
            format_func=lambda r: _(RANK_NAMES[r]),
            key=link.choice("rank", key + "rank", RANKS, RANKS[0]),
        )
        or RANKS[0]
    )
    agreement_block(result, rank, key + "agree")


PANEL = N_("Does attention explain? Attention beside gradients and occlusion for one output")


def upload_panel(
    source: cached.Source, text: str, target: str, seq2seq: bool, records: dict, key: str
) -> None:
    """The Checkpoint inspector's folded panel: one output of an uploaded decoder or seq2seq model explained
    as on the Does attention explain? page (a seq2seq model's output the one ``target`` forces, else its
    own; a causal LM's next token asked here), its settings out of the URL (``Unlinked``); an upload that
    writes no output (an encoder) is said in one line instead."""
    from attention_atlas.models.analysis.attribution import refusal

    why = refusal(source.adapter)
    if why is not None:
        st.caption("🔍 " + _("Does attention explain?") + " " + plain(" ".join(str(why).split())))
        return
    panel = st.expander(_(PANEL), key=key + "open", on_change="rerun")
    if not panel.open:  # every method runs the model: only when opened
        return
    with panel:
        link = Unlinked()
        c1, c2 = st.columns([1, 3])
        if seq2seq:
            c2.caption(_("The output explained is the one forced above, else the model's own."))
        else:
            label = _("next token to explain (empty: the model's own)")  # " Paris" keeps its space
            target = c2.text_input(label, key=link.text("target", key + "target", 2_000))
        position, steps = output_settings(link, key, c1)
        rec = records.get("cross", records.get("self"))
        grid = SimpleNamespace(layers=getattr(rec, "n_layers", 1), heads=getattr(rec, "n_heads", 1))
        layer, head = head_choice(link, key, source.key, grid, c1)
        result = attribution(source, text, target if target.strip() else None, position, steps, layer, head)
        if result is not None:
            explained(result, link, key)


def headline(result) -> None:
    gap = result.ig_completeness_gap
    fact(
        _(
            "Explaining the output **{target}** (log p = {f:.3f}; {fb:.3f} from an input of baseline tokens, "
            "{baseline}).",
            target=plain(result.target),
            f=result.f_input,
            fb=result.f_baseline,
            baseline=plain(result.baseline_token),
        )
        + (
            ""
            if np.isnan(gap)
            else " "
            + _(
                "Integrated gradients' completeness gap: {gap:.2e} ({share:.2%} of the difference).",
                gap=gap,
                share=result.ig_relative_gap,
            )
        )
    )
    said = [m for m in ("occlusion", "integrated_gradients") if m in result.methods]
    if "attention" in result.methods and said:
        top = {m: int(np.argmax(result.scores[m])) for m in ("attention", *said)}
        other = said[0]
        token = lambda m: f"{top[m]} · {plain(result.tokens[top[m]])}"  # noqa: E731
        if top["attention"] != top[other]:
            st.info(
                _(
                    "Attention and {other} disagree: attention's top input token is **{a}**, {other}'s is **{b}**."
                    " Which one is the explanation? The faithfulness table below measures it.",
                    other=named(other),
                    a=token("attention"),
                    b=token(other),
                ),
                icon="⚖️",
            )
        else:
            fact(
                _(
                    "Attention and {other} agree on the top input token, **{a}**.",
                    other=named(other),
                    a=token("attention"),
                )
            )
    for method, why in result.refused.items():
        fact(_("{method} is not shown: {why}", method=named(method), why=plain(why)))


# each method as the page names it, in the visitor's language (the CSVs keep the ids of the contract)
METHOD_NAMES = {
    "attention": N_("attention"),
    "rollout": N_("rollout"),
    "value_norms": N_("value norms"),
    "contributions": N_("contributions"),
    "saliency": N_("saliency"),
    "input_x_gradient": N_("input × gradient"),
    "integrated_gradients": N_("integrated gradients"),
    "occlusion": N_("occlusion"),
}


def named(method: str) -> str:
    return _(METHOD_NAMES.get(method, method))


def file_name(result, what: str) -> str:
    """A CSV's name: the model's id and what it holds (``couplet-rnn-additive_attribution_scores``)."""
    return f"{result.model_id}_attribution_{what}"


def scores_frame(result) -> pd.DataFrame:
    rows = []
    for method in result.methods:
        s = result.scores[method]
        top = float(np.abs(s).max()) or 1.0
        for i, (token, v) in enumerate(zip(result.tokens, s, strict=True)):
            rows.append(
                {"method": method, "position": i, "token": token, "score": float(v), "normalised": v / top}
            )
    return pd.DataFrame(rows)


def heatmap_block(result, signed, key: str) -> None:
    labels = {m: named(m) for m in result.scores}
    fig = attribution_heatmap(
        result.scores, result.tokens, signed, title=_("Methods × input tokens"), labels=labels
    )
    chart(fig, lambda: scores_frame(result), key, file_name(result, "scores"))


def coloured_text(result, method: str, signed, key: str) -> None:
    """The input, each token on a cell as strong as its share of the method's largest |score|."""
    from attention_atlas.viz_core.tokens import as_plotly_text

    fig = attribution_heatmap(
        {method: result.scores[method]}, result.tokens, signed, labels={method: named(method)}
    )
    fig.update_traces(text=[as_plotly_text(result.tokens)], texttemplate="%{text}", showscale=False)
    fig.update_layout(height=150)
    chart(fig, lambda: scores_frame(result).query("method == @method"), key, file_name(result, method))


def faithfulness_frame(result) -> pd.DataFrame:
    rows = []
    for r, method in enumerate(result.methods):
        row = {_("method"): named(method)}
        for c, frac in enumerate((10, 20, 50)):
            row[_("comprehensiveness {k}%", k=frac)] = float(result.comprehensiveness[r, c])
        for c, frac in enumerate((10, 20, 50)):
            row[_("sufficiency {k}%", k=frac)] = float(result.sufficiency[r, c])
        row["AOPC"] = float(result.aopc[r])
        rows.append(row)
    return pd.DataFrame(rows)


def faithfulness_block(result, key: str) -> None:
    frame = faithfulness_frame(result)
    st.dataframe(frame, hide_index=True, width="stretch")
    best = result.methods[int(np.argmax(result.aopc))]
    fact(
        _(
            "Comprehensiveness: how much log p drops when a method's top tokens are replaced by the baseline "
            "token (higher: more faithful); sufficiency: how much it drops when only they are kept (lower: "
            "more faithful). AOPC: the mean drop along the deletion curve. Most faithful here by AOPC: **{best}**.",
            best=named(best),
        )
    )
    ks = np.flatnonzero(~np.isnan(result.deletion[0]))  # where the curve was evaluated
    curves = {named(m): result.deletion[r, ks] for r, m in enumerate(result.methods)}
    fig = lines(ks, curves, _("top tokens replaced"), "log p", title=_("Deletion curves"))
    chart(
        fig, lambda: pd.DataFrame(curves).assign(removed=ks), key + "_deletion", file_name(result, "deletion")
    )


RANKS = ("spearman", "kendall")  # the rank agreement the matrix shows (its CSV holds both)
RANK_NAMES = {"spearman": N_("Spearman ρ"), "kendall": N_("Kendall τ")}


def agreement_block(result, rank: str, key: str) -> None:
    """Every two methods' rank agreement as a matrix, ``rank`` one of ``RANKS``."""
    from attention_atlas.models.analysis.attribution import agreement

    rho, tau = agreement(result)
    names = list(result.methods)
    title = _("Rank agreement ({name})", name=_(RANK_NAMES[rank]))
    fig = matrix_heatmap(
        rho if rank == "spearman" else tau,
        _("method"),
        _("method"),
        title,
        x=[named(m) for m in names],  # in the visitor's language; the CSV keeps the ids
        y=[named(m) for m in names],
        label="ρ" if rank == "spearman" else "τ",
    )
    fig.update_traces(zmin=-1, zmax=1)

    def frame() -> pd.DataFrame:
        return pd.concat(
            pd.DataFrame(m, index=names, columns=names).rename_axis("method").reset_index().assign(kind=kind)
            for m, kind in ((rho, "spearman"), (tau, "kendall"))
        )

    chart(fig, frame, key, file_name(result, "agreement"))
