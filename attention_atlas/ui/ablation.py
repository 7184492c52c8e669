"""The Transformer page's head ablation: switch off one or several heads (``models.analysis.ablation``) and
see every head's attention change downstream, and for a causal LM the next-token distribution."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from attention_atlas.i18n import N_, _, ngettext
from attention_atlas.ui import cached
from attention_atlas.ui.compare import (
    _before_after,
    _grid_chart,
    _head_choice,
    _top_heads,
    row_change,
    shown_record,
)
from attention_atlas.ui.widgets import chart, plain
from attention_atlas.viz_core.derive import ViewOptions
from attention_atlas.viz_core.figures import grouped_bars
from attention_atlas.viz_core.record import kind_name
from attention_atlas.viz_core.tokens import shown

A = "tf_ablate_"  # widget keys (the page's prefix is tf_)
TOP = 10  # next tokens listed, from before and after together
NOTE = N_("Red: more attention with the heads switched off; blue: less.")
# The logit lens table's columns (``lens_rows``), as the page shows them.
LENS_COLUMNS = {
    "after block": N_("after block"),
    "top token before": N_("top token before"),
    "probability before": N_("probability before"),
    "top token after": N_("top token after"),
    "probability after": N_("probability after"),
}


@st.cache_data(show_spinner=False, max_entries=16)
def ablated(model_id: str, text: str, kind: str, heads: tuple[tuple[int, int], ...], target: str | None):
    """The records of ``text`` with ``heads`` of ``kind`` switched off (a seq2seq model forced to
    ``target``, the output it wrote with every head on, so the two runs line up)."""
    from attention_atlas.models.analysis.ablation import ablated_run

    with cached.lane_for(model_id, text).turn():
        return ablated_run(cached.adapter(model_id), text, kind, heads, target=target)


@st.cache_data(show_spinner=False, max_entries=16)
def next_tokens(model_id: str, text: str, heads: tuple[tuple[int, int], ...]) -> pd.DataFrame:
    """The most likely next tokens before and after (the top ``TOP`` of each, together)."""
    from attention_atlas.models.analysis.ablation import next_token, token_text

    adapter = cached.adapter(model_id)
    with cached.lane_for(model_id, text).turn():
        before, after = next_token(adapter, text), next_token(adapter, text, heads)
    ids = list(dict.fromkeys([*np.argsort(-before)[:TOP], *np.argsort(-after)[:TOP]]))
    frame = pd.DataFrame(
        {
            "token": [token_text(adapter, i) for i in ids],
            "id": ids,
            "before": before[ids],
            "after": after[ids],
        }
    )
    frame["change"] = frame["after"] - frame["before"]
    return frame.sort_values("before", ascending=False, kind="stable").reset_index(drop=True)


@st.cache_data(show_spinner=False, max_entries=16)
def lens_rows(model_id: str, text: str, heads: tuple[tuple[int, int], ...]) -> pd.DataFrame:
    """The logit lens at the last position, block by block, with every head on and with ``heads`` off
    (line breaks and spaces made visible, as Inside a prediction shows them)."""
    from attention_atlas.models.analysis.ablation import lens_at_last, token_text

    adapter = cached.adapter(model_id)
    with cached.lane_for(model_id, text).turn():
        (ids_b, p_b), (ids_a, p_a) = lens_at_last(adapter, text), lens_at_last(adapter, text, heads)
    return pd.DataFrame(
        {
            "after block": range(len(ids_b)),
            "top token before": [shown(token_text(adapter, i)) for i in ids_b],
            "probability before": p_b,
            "top token after": [shown(token_text(adapter, i)) for i in ids_a],
            "probability after": p_a,
        }
    )


def head_label(lh: tuple[int, int]) -> str:
    return _("layer {layer} · head {head}", layer=lh[0], head=lh[1])


def heads_off(n: int) -> str:
    """``'2 heads'`` in the visitor's language."""
    return ngettext("{n:,} head", "{n:,} heads", n).format(n=n)


def ablation_tab(model_id: str, text: str, options: ViewOptions) -> None:
    """Heads picked to switch off; every head's change; one head before and after; next tokens."""
    model = cached.capabilities(model_id)
    L, H = model.layers, model.heads
    everything = [(lay, h) for lay in range(L) for h in range(H)]
    st.caption(
        _(
            "A switched-off head's output is zeroed before the {kind}'s output projection "
            "(a hook on the model itself): the layers after it see the model without that head.",
            kind=kind_name(options.kind),
        )
    )
    heads = st.multiselect(
        _("heads to switch off"),
        everything,
        default=[(0, 0)],
        format_func=head_label,
        key=A + f"heads_{model_id}",
    )
    if not heads:
        st.info(_("Pick one or more heads to switch off."))
        return
    heads = tuple(sorted(heads))
    result = cached.run_model(model_id, text)
    special = result.records[options.kind].meta.get("key_special") or [False]
    if all(special):
        st.info(
            _("Every token of this input is a special token: type some words to see what the heads change.")
        )
        return
    try:
        with st.spinner(_("Running the model with {heads} switched off…", heads=heads_off(len(heads)))):
            raw = ablated(model_id, text, options.kind, heads, result.output).records[options.kind]
    except ValueError as err:  # models.analysis.ablation.AblationError: a model whose heads cannot be reached
        st.warning(plain(err))
        return
    before, after = shown_record(model_id, text, options), options.apply(raw)
    _changes(model_id, before, after, heads)
    if model.causal:
        _next_tokens(model_id, text, heads)


def _changes(model_id: str, before, after, heads: tuple) -> None:
    grid = row_change(before.weights, after.weights, [])
    first = min(lay for lay, _head in heads)
    upto = _("Layer {first}", first=first) if first == 0 else _("Layers 0–{first}", first=first)
    name = f"{model_id}_ablate_" + "_".join(f"L{lay}H{h}" for lay, h in heads)
    st.subheader(_("Every head's change with {heads} switched off", heads=heads_off(len(heads))))
    _grid_chart(grid, "TV", _("total variation per head"), A + "grid", name, "change_tv")
    st.caption(
        _(
            "One tile per layer × head: the total variation ½·Σ|before − after| of each query row's attention, "
            "averaged over the rows (0: unchanged; 1: all of it moved). {upto} cannot change: a head's "
            "weights are made before its output is mixed in.",
            upto=upto,
        )
    )
    _top_heads(grid, name + "_top", A)
    layer, head = _head_choice(grid, "TV", A + "head")
    _before_after(before, after, layer, head, f"{name}_layer{layer}_head{head}", A, NOTE)


def _next_tokens(model_id: str, text: str, heads: tuple) -> None:
    frame = next_tokens(model_id, text, heads)
    st.subheader(_("The next token, before and after"))
    fig = grouped_bars(
        list(frame["token"]),
        {_("before"): frame["before"].to_numpy(), _("after"): frame["after"].to_numpy()},
        _("next token"),
        _("probability"),
    )
    chart(fig, frame, A + "next", f"{model_id}_ablate_next_token")
    top_b, top_a = frame.loc[frame["before"].idxmax()], frame.loc[frame["after"].idxmax()]
    st.caption(
        plain(
            _(
                "Most likely next token before: {before!r} ({p_before:.1%}); after: "
                "{after!r} ({p_after:.1%}). The {top} most likely of each run are shown.",
                before=top_b["token"],
                p_before=top_b["before"],
                after=top_a["token"],
                p_after=top_a["after"],
                top=TOP,
            )
        )
    )
    _lens(model_id, text, heads)


def _lens(model_id: str, text: str, heads: tuple) -> None:
    """Where in the stack the next token changes: the logit lens at the last position, before and after."""
    frame = lens_rows(model_id, text, heads)
    st.markdown(_("**Block by block: the logit lens at the last position, before and after**"))
    changed = frame["top token before"] != frame["top token after"]
    names = {c: _(label) for c, label in LENS_COLUMNS.items()}  # the headers in the visitor's language
    st.dataframe(frame.iloc[::-1], hide_index=True, width="stretch", height=320, column_config=names)
    where = (
        _(
            "at {changed} of {blocks} blocks, first after block {first}",
            changed=int(changed.sum()),
            blocks=len(frame),
            first=int(changed.idxmax()),
        )
        if changed.any()
        else _("at no block")
    )
    st.caption(
        plain(
            _(
                "Each row reads the residual stream after that block through the model's own final norm and "
                "output head (Inside a prediction shows the whole grid); the top token differs "
                "{where}. The last block's row is the model's own next token.",
                where=where,
            )
        )
    )
