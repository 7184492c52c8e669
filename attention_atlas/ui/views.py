"""Blocks the pages share: an alignment heatmap, a head view (each with its CSV), notices, a decoding
step, the head statistics."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from attention_atlas.i18n import _
from attention_atlas.ui.live_heads import head_view_chart
from attention_atlas.ui.widgets import PLOTLY_CONFIG, chart, csv_button, fact, for_screen, plain
from attention_atlas.viz_core import head_stats
from attention_atlas.viz_core.export import record_frame, series_frame, token_matrix_frame
from attention_atlas.viz_core.figures import (
    PLOT_WIDTH,
    clause_dividers,
    grouped_bars,
    head_matrix,
    head_view,
    heatmap,
    heatmap_row,
    larger_ticks,
    scatter_groups,
)
from attention_atlas.viz_core.layout import column_width, every_label_shown
from attention_atlas.viz_core.record import AttentionRecord
from attention_atlas.viz_core.tokens import hover_labels


def alignment_figure(rec: AttentionRecord, font: int, axes: dict, title: str = "", width: int = PLOT_WIDTH):
    """A one-head record (rows: what was written, columns: what was read) with large tick labels,
    and dotted lines between clauses (a multi-clause couplet's "，"), planned for ``width`` px."""
    fig = heatmap(rec.head(), rec.query_tokens, rec.key_tokens, title=title, width=width, ticks=font, **axes)
    return clause_dividers(fig, rec.query_tokens, rec.key_tokens)


def beside(build: Callable[[int], list[go.Figure]], count: int) -> tuple[list, list[go.Figure]]:
    """Where to draw ``count`` figures and the figures ``build(width)`` makes for that width: side by
    side in Streamlit columns when each column still gives every label its place by the single view's
    rule (``fit_axes``: a label per position at ``MIN_FONT`` px or more; in projector mode at the
    projector's sizes), else one under the other at full width."""
    if count > 1:
        narrow = build(column_width(count))
        if all(every_label_shown(for_screen(fig)) for fig in narrow):
            return list(st.columns(count)), narrow
    return [st.container() for __ in range(count)], build(PLOT_WIDTH)


def alignment_chart(rec: AttentionRecord, font: int, axes: dict, key: str, filename: str, title: str = ""):
    """``alignment_figure`` with the CSV download of its weights underneath."""
    chart(alignment_figure(rec, font, axes, title), lambda: record_frame(rec), key, filename)


def difference_chart(
    a: AttentionRecord, b: AttentionRecord, names: tuple[str, str], font: int, key: str, filename: str
):
    """``a − b`` for two one-head records with the same shape (the same rows and keys), on a diverging
    scale: red where ``a`` attends more; rows labelled 'x｜y' where the two records' tokens differ."""
    rows = [x if x == y else f"{x}｜{y}" for x, y in zip(a.query_tokens, b.query_tokens, strict=True)]
    diff = a.head() - b.head()
    panels = {f"{names[0]} − {names[1]}": diff}
    fig = heatmap_row(panels, rows, a.key_tokens, zmin=-1, zmax=1, colorscale="RdBu_r", label=_("difference"))
    frame = pd.DataFrame(diff, index=rows, columns=hover_labels(a.key_tokens)).reset_index()
    chart(larger_ticks(fig, font), frame, key, filename)


def measures_as_rows(table: pd.DataFrame, name: str) -> pd.DataFrame:
    """``table`` (one row per ``name``, many measures across) turned so that each ``name`` is a column
    and each measure a row: eleven measures across scroll sideways on a 1280 × 720 page, three
    variants do not. Whole numbers keep their thousands separators."""

    def shown(value) -> str:
        if isinstance(value, int | np.integer):
            return f"{value:,}"
        return f"{value:g}" if isinstance(value, float) else str(value)

    turned = table.set_index(name).map(shown).T
    return turned.rename_axis(_("measure")).reset_index()


def show_terms(model, where=None) -> None:
    """The notice ``model``'s licence asks its users to see (``ModelInfo.terms``), if any: on
    screen in projector mode too (``fact``)."""
    if model.terms:
        fact(f"⚖️ {model.terms}", where)


def show_notices(notices, warn: bool = False, where=None) -> None:
    """Each distinct notice once, as text (a notice may quote the input): a warning, or an ℹ️ caption;
    in ``where`` (a container) if given."""
    where = st if where is None else where
    for notice in dict.fromkeys(notices):
        if warn:
            where.warning(plain(notice))
        else:
            where.caption(f"ℹ️ {plain(notice)}")


def head_stats_block(table: pd.DataFrame, key: str, filename: str) -> None:
    """A head table (``viz_core.head_stats.COLUMNS``): every head placed by its mean distance and
    entropy, coloured by its pattern; the table, each statistic's meaning in its column's help; its CSV."""
    labels = {name: head_stats.label_of(name) for name in head_stats.LABELS}  # in the visitor's language
    fig = scatter_groups(
        table,
        "mean_distance",
        "entropy",
        "pattern",
        ["layer", "head"],
        labels=labels,
        group_name=head_stats.label_of,
    )
    st.plotly_chart(for_screen(fig), key=key + "_chart", config=PLOTLY_CONFIG)
    columns = {name: st.column_config.NumberColumn(help=label) for name, label in labels.items()}
    st.dataframe(table, hide_index=True, key=key + "_table", width="stretch", column_config=columns)
    csv_button(table, key, filename, label=_("head statistics"))


def head_view_block(record: AttentionRecord, key: str, rid: str, layer: int, head: str, csv: tuple[str, str]):
    """The head view of ``record`` at ``layer`` (one head, ``"average"``, or ``"all side by side"``),
    drawn by ``ui.live_heads`` in group ``key``, and the download (``csv`` = key, file name) of its weights."""
    if head == "all side by side":
        panels = {_("head {h}", h=h): record.head(layer, h) for h in range(record.n_heads)}
        fig = heatmap_row(panels, record.query_tokens, record.key_tokens, zmax=1.0)
        head_view_chart(fig, key, rid, layer, head, single=False)
        csv_button(lambda: record_frame(record).query(f"layer == {layer}"), *csv)
    else:
        head_view_chart(head_view(record, layer, head), key, rid, layer, head, single=True)
        tokens = (record.query_tokens, record.key_tokens)
        csv_button(lambda: token_matrix_frame(head_matrix(record, layer, head), *tokens), *csv)


def decoding_step(
    rec: AttentionRecord, step: int, label: str, font: int, key: str, filename: str, stacked: bool = False
):
    """Step ``step`` (1-based) of the couplet decoder ``label``: the lower line so far with the character
    being written, where it looked in the upper line, and the model's own top candidates (beside
    the bars, or under them when ``stacked``)."""
    tokens = rec.query_tokens
    step = min(step, len(tokens))
    written, now = plain("".join(tokens[: step - 1])), plain(tokens[step - 1])
    # "\[**x**\]", not "**[x]**": a ** between a character and a bracket opens no bold in Markdown
    st.markdown(
        _(
            "Writing character **{step}** of {total} ({model}): {written}\\[**{now}**\\]",
            step=step,
            total=len(tokens),
            model=label,
            written=written,
            now=now,
        )
    )
    bars, table = (st.container(), st.container()) if stacked else st.columns([3, 2])
    with bars:
        row, labels = rec.head()[step - 1], hover_labels(rec.key_tokens)
        # one bar per position of the upper line, with its character below
        axes = (_("upper line 上联"), _("attention weight"))
        width = PLOT_WIDTH // 2 if stacked else PLOT_WIDTH * 3 // 5
        fig = grouped_bars(
            rec.key_tokens, {_("weight"): row}, *axes, _("where the decoder looked"), width, font
        )
        chart(fig, series_frame(labels, {"weight": row}, "upper"), key, filename)
    top = rec.meta.get("top_candidates")
    if top:
        with table:
            frame = pd.DataFrame(top[step - 1], columns=["candidate", "probability"])
            frame["chosen"] = np.where(frame["candidate"] == tokens[step - 1], "←", "")
            headers = {"candidate": _("candidate"), "probability": _("probability"), "chosen": _("chosen")}
            st.markdown(_("**{model}'s top candidates at this step**", model=label))
            st.dataframe(frame.rename(columns=headers), hide_index=True, width="stretch")
            st.caption(_("Its own probabilities, before the couplet rule (length, punctuation) is applied."))
