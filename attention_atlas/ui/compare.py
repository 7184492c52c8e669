"""The Transformer page's comparisons: a second input beside the first (the difference of every
head where the tokens line up), and one token masked and the model rerun (exBERT's idea).

The numbers are plain functions (``align``, ``aligned_difference``, ``row_change``…), tested
without Streamlit; the two tabs draw them, each chart with its CSV.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from difflib import SequenceMatcher

import numpy as np
import pandas as pd
import streamlit as st

from attention_atlas.i18n import N_, _, ngettext
from attention_atlas.ui import cached
from attention_atlas.ui.url_state import Link
from attention_atlas.ui.views import show_notices
from attention_atlas.ui.widgets import chart, plain, text_box
from attention_atlas.viz_core.derive import ViewOptions, groups_from_word_ids
from attention_atlas.viz_core.export import matrix_frame, token_matrix_frame
from attention_atlas.viz_core.figures import DIVERGING_SCALE, heatmap_row, matrix_heatmap
from attention_atlas.viz_core.layout import PLOT_WIDTH, TICK_FONT, text_em
from attention_atlas.viz_core.record import AttentionRecord
from attention_atlas.viz_core.tokens import clean_token

C, M = "tf_cmp_", "tf_mask_"  # widget keys (the page's prefix is tf_)
LIMIT = 10_000  # characters in the second box, as in the page's first
TOP = 10  # heads listed in the "changed most" table
# One word (or character) of the first input swapped to make the second box's first text.
SWAPS = {
    "cat": "dog", "dog": "cat", "mat": "rug", "tired": "hungry", "he": "she", "she": "he",
    "good": "bad", "bad": "good", "big": "small", "small": "big", "man": "woman", "woman": "man",
    "黄": "白", "白": "黄", "鸣": "啼", "柳": "竹", "红": "青", "山": "水", "水": "山", "春": "秋",
}  # fmt: skip


# ---------------------------------------------------------------- numbers (no Streamlit)
@dataclass(frozen=True)
class Alignment:
    """Positions of two token lists that line up, pair by pair, and those left out."""

    a: list[int]  # positions in the first list
    b: list[int]  # the positions they pair with in the second
    labels: list[str]  # per pair: the token, or 'x｜y' where a same-length stretch was substituted
    only_a: list[int]  # positions of the first list that pair with nothing
    only_b: list[int]

    @property
    def same(self) -> int:
        return sum("｜" not in label for label in self.labels)


def pair(x: str, y: str) -> str:
    """The label of two tokens at one place: 'cat｜dog' (each cleaned: no 'Ġ', no outer space)."""
    return f"{clean_token(x)}｜{clean_token(y)}"


def align(first: list[str], second: list[str]) -> Alignment:
    """``difflib.SequenceMatcher`` over token strings: equal stretches line up, and so does a
    stretch replaced by one of the same length (one word changed: 'cat｜dog'), position by
    position; what was inserted, deleted or replaced by a stretch of another length is left out."""
    a, b, labels, only_a, only_b = [], [], [], [], []
    matcher = SequenceMatcher(None, list(first), list(second), autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
            a += range(i1, i2)
            b += range(j1, j2)
            labels += [x if x == y else pair(x, y) for x, y in zip(first[i1:i2], second[j1:j2], strict=True)]
        else:
            only_a += range(i1, i2)
            only_b += range(j1, j2)
    return Alignment(a, b, labels, only_a, only_b)


def aligned_difference(first: np.ndarray, second: np.ndarray, rows: Alignment, cols: Alignment) -> np.ndarray:
    """``first − second`` over ``[..., query, key]`` weights, on the query rows ``rows`` and the
    key columns ``cols`` that line up: ``[..., aligned queries, aligned keys]``."""
    return first[..., rows.a, :][..., cols.a] - second[..., rows.b, :][..., cols.b]


def mean_abs(diff: np.ndarray) -> np.ndarray:
    """``[layers, heads]``: the mean absolute difference over each head's cells."""
    return np.abs(diff).mean(axis=(-2, -1)) if diff.size else np.zeros(diff.shape[:2])


def row_change(before: np.ndarray, after: np.ndarray, skip: list[int]) -> np.ndarray:
    """``[layers, heads]``: the total variation ½·Σ|before − after| of each query row, averaged
    over the rows not in ``skip`` (all rows when nothing else is left)."""
    tv = 0.5 * np.abs(before - after).sum(-1)  # [layers, heads, query]
    keep = [q for q in range(tv.shape[-1]) if q not in set(skip)] or list(range(tv.shape[-1]))
    return tv[..., keep].mean(-1)


def shown_rows(record: AttentionRecord, position: int, options: ViewOptions) -> list[int]:
    """The query row(s) that token ``position`` of the raw ``record`` becomes in ``options.apply``'s view."""
    n = len(record.query_tokens)
    word_ids = record.meta.get("query_word_ids")
    merged = options.merge and word_ids is not None and record.meta.get("key_word_ids") is not None
    groups = groups_from_word_ids(word_ids) if merged else [[i] for i in range(n)]
    special = record.meta.get("query_special") or [False] * n
    flags = [all(special[i] for i in g) for g in groups]
    keys_special = record.meta.get("key_special") or [False] * len(record.key_tokens)
    hidden = options.hide and (any(flags) or any(keys_special)) and not all(flags) and not all(keys_special)
    kept = [g for g, f in zip(groups, flags, strict=True) if not (hidden and f)]
    return [i for i, g in enumerate(kept) if position in g]


def variant(text: str) -> str:
    """The first input with one word (or character) swapped, else without its last word: a second
    input that differs a little, so the comparison shows something before anyone types."""
    words = text.split(" ")
    for i, word in enumerate(words):
        core = word.strip(".,;:!?\"'").lower()
        if core in SWAPS:
            swapped = word.replace(core, SWAPS[core]).replace(core.capitalize(), SWAPS[core].capitalize())
            return " ".join([*words[:i], swapped, *words[i + 1 :]])
    for i, ch in enumerate(text):
        if ch in SWAPS:
            return text[:i] + SWAPS[ch] + text[i + 1 :]
    return " ".join(words[:-1]) if len(words) > 1 else text[:-1] or text


def pill_labels(tokens: list[str], positions: list[int], words: dict[int, str] | None = None) -> dict[int, str]:
    """Each offered position's label, escaped as text; a token that repeats carries its position as
    a subscript ('the₁', 'the₅'), since Streamlit tells options apart by their labels, and a piece of
    a longer word (``words``: ``piece_words``) says so ('to (of tortoise)')."""
    labels = {p: plain(clean_token(tokens[p])) for p in positions}
    counts = Counter(labels.values())
    sub = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")
    words = words or {}
    return {
        p: piece_label(label + str(p).translate(sub) if counts[label] > 1 else label, words.get(p))
        for p, label in labels.items()
    }


def piece_words(tokens: list[str], word_ids: list | None) -> dict[int, str]:
    """Each position that is one of several pieces of a word, and that word ('to', 'rt', 'oise' → 'tortoise')."""
    words: dict[int, str] = {}
    for group in groups_from_word_ids(word_ids) if word_ids else []:
        if len(group) > 1:
            words.update(dict.fromkeys(group, "".join(clean_token(tokens[i]) for i in group)))
    return words


def piece_label(label: str, word: str | None) -> str:
    """A token's label, and where it is a piece of a longer word, that word: 'to (of tortoise)', so that
    a piece is not read as the word it spells (issue 40 item 16). ``label`` is escaped already."""
    return label if word is None else _("{piece} (of {word})", piece=label, word=plain(word))


def pair_labels(first: list[str], second: list[str]) -> list[str]:
    """Labels of two equally long token lists: the token, or 'x｜y' where they differ."""
    return [x if x == y else pair(x, y) for x, y in zip(first, second, strict=True)]


# ---------------------------------------------------------------- cached runs
@st.cache_data(show_spinner=False, max_entries=32)
def shown_record(model_id: str, text: str, options: ViewOptions) -> AttentionRecord:
    """One input's record as the page shows it (raw weights α; the model run is ``cached.run_model``'s)."""
    return options.apply(cached.run_model(model_id, text).records[options.kind])


@dataclass(frozen=True)
class Comparison:
    """Two inputs' records as shown, how their tokens line up, and every head's aligned difference."""

    a: AttentionRecord
    b: AttentionRecord
    rows: Alignment  # query rows that line up
    cols: Alignment  # key columns that line up (``rows`` itself for self-attention)
    diff: np.ndarray  # [layers, heads, aligned rows, aligned cols]: first − second
    grid: np.ndarray  # [layers, heads]: mean |diff|


@st.cache_data(show_spinner=False, max_entries=16)  # the spinner is the caller's, in the visitor's language
def comparison(model_id: str, text: str, second: str, options: ViewOptions) -> Comparison:
    """Both records, their alignments (rows, columns), and every head's aligned difference."""
    a, b = shown_record(model_id, text, options), shown_record(model_id, second, options)
    rows = align(a.query_tokens, b.query_tokens)
    cols = rows if a.query_tokens == a.key_tokens and b.query_tokens == b.key_tokens else None
    cols = cols or align(a.key_tokens, b.key_tokens)
    diff = aligned_difference(a.weights, b.weights, rows, cols)
    return Comparison(a, b, rows, cols, diff, mean_abs(diff))


@st.cache_data(show_spinner=False, max_entries=32)  # the spinner is the caller's
def masked_run(model_id: str, text: str, position: int, replacement: str, target: str | None):
    """The model's records for ``text`` with token ``position`` replaced (at the id level)."""
    return cached.adapter(model_id).run_masked(text, position, replacement, target=target)


# ---------------------------------------------------------------- drawing
def _grid_chart(grid: np.ndarray, label: str, title: str, key: str, filename: str, value: str) -> None:
    """A layer × head grid of one number per head, with its CSV."""
    L, H = grid.shape
    fig = matrix_heatmap(
        grid,
        _("head"),
        _("layer"),
        title,
        colorscale="Reds",
        zmid=None,
        x=list(range(H)),
        y=list(range(L)),
        label=label,
    )
    fig.update_traces(zmin=0)
    fig.update_xaxes(dtick=1 if H <= 16 else None)  # whole heads and layers, never 0.5
    fig.update_yaxes(dtick=1 if L <= 16 else None)
    fig.update_layout(height=min(460, 140 + 45 * L))
    chart(fig, matrix_frame(grid, "layer", "head", value), key, filename)


def _turn_pairs(fig, cols: list[str], panels: int) -> None:
    """Turn the key labels when 'x｜y' labels upright would run into their neighbours."""
    slot = (PLOT_WIDTH - 200) / panels / max(len(cols), 1)  # px per key, roughly
    widest = max(text_em(clean_token(c)) for c in cols) * TICK_FONT
    if any("｜" in c for c in cols) and widest > slot:
        fig.update_xaxes(tickangle=-45)


def _head_choice(grid: np.ndarray, label: str, key: str) -> tuple[int, int]:
    """A select box of every head, the one with the largest value first."""
    order = np.argsort(-grid, axis=None, kind="stable")
    heads = [tuple(int(i) for i in np.unravel_index(o, grid.shape)) for o in order]
    fmt = lambda lh: _(  # noqa: E731
        "layer {layer}, head {head} ({label} {value:.3g})",
        layer=lh[0],
        head=lh[1],
        label=label,
        value=grid[lh],
    )
    return st.selectbox(_("open head (largest first)"), heads, format_func=fmt, key=key)


def _difference_chart(diff: np.ndarray, rows: list[str], cols: list[str], title: str, key: str, frame, name):
    """One head's difference on a diverging scale centred on 0 (red: the first is larger)."""
    top = float(np.abs(diff).max()) or 1.0
    fig = heatmap_row(
        {title: diff}, rows, cols, zmin=-top, zmax=top, colorscale=DIVERGING_SCALE, label=_("difference")
    )
    _turn_pairs(fig, cols, 1)  # 'the cat｜dog sat' upright reads as one run
    chart(fig, frame, key, name)


def _alignment_line(al: Alignment, n_a: int, n_b: int, what: str) -> str:
    swapped = [label for label in al.labels if "｜" in label]
    fields = dict(what=what, a=len(al.a), n_a=n_a, b=len(al.b), n_b=n_b, same=al.same, swapped=len(swapped))
    if swapped:
        line = _(
            "{what}: {a} of {n_a} positions of the first input line up with {b} of {n_b} of the "
            "second ({same} identical, {swapped} substituted: {pairs}).",
            pairs=", ".join(swapped[:8]),
            **fields,
        )
    else:
        line = _(
            "{what}: {a} of {n_a} positions of the first input line up with {b} of {n_b} of the "
            "second ({same} identical, {swapped} substituted).",
            **fields,
        )
    return plain(line)


def _left_out(al: Alignment, a: list[str], b: list[str]) -> str:
    def show(positions, tokens):
        return ", ".join(f"{p}·{tokens[p]}" for p in positions[:12]) + (" …" if len(positions) > 12 else "")

    parts = [
        _("first: {tokens}", tokens=show(al.only_a, a)) if al.only_a else "",
        _("second: {tokens}", tokens=show(al.only_b, b)) if al.only_b else "",
    ]
    listed = _("; ").join(p for p in parts if p)
    return plain(_("Left out (no partner): {parts}", parts=listed)) if any(parts) else ""


# ---------------------------------------------------------------- the two tabs
def compare_tab(model_id: str, text: str, options: ViewOptions) -> None:
    """A second sentence, its heads, and the difference from the first input's."""
    second = text_box(st, _("second text"), C + "text", LIMIT, variant(text))
    if not second.strip():
        st.info(_("Type a second text to compare with the first."))
        return
    try:
        notices = cached.run_model(model_id, second).notices
        with st.spinner(_("Comparing the two inputs…")):
            cmp = comparison(model_id, text, second, options)
    except ValueError as err:
        st.warning(_("The second text cannot be run: {error}", error=plain(err)))
        return
    show_notices(notices)
    a, b, rows, cols = cmp.a, cmp.b, cmp.rows, cmp.cols
    what = _("Tokens") if cols is rows else _("Rows (queries)")
    st.markdown(_alignment_line(rows, len(a.query_tokens), len(b.query_tokens), what))
    if cols is not rows:
        st.markdown(_alignment_line(cols, len(a.key_tokens), len(b.key_tokens), _("Columns (keys)")))
    for al, x, y in ((rows, a.query_tokens, b.query_tokens), (cols, a.key_tokens, b.key_tokens)):
        left = _left_out(al, x, y)
        if left:
            st.caption(left)
        if cols is rows:
            break
    if not rows.a or not cols.a:
        st.info(_("No token of the two inputs lines up: there is nothing to compare."))
        return
    st.subheader(_("Every head: first − second where the tokens line up"))
    title = _("mean |first − second| over the aligned cells")
    _grid_chart(
        cmp.grid, _("mean |Δ|"), title, C + "grid", f"{model_id}_compare_heads", "mean_abs_difference"
    )
    st.caption(
        _(
            "One tile per layer × head: the mean absolute difference of the two inputs' attention weights, "
            "over the query rows and key columns whose tokens line up (same token, or one substituted for "
            "another at the same place); unaligned tokens are left out. Raw weights α as the model gave them "
            "(not renormalised, nor weighted by value norms)."
        )
    )
    layer, head = _head_choice(cmp.grid, _("mean |Δ|"), C + "head")
    diff = cmp.diff[layer, head]
    col_labels = rows.labels if cols is rows else cols.labels
    frame = token_matrix_frame(diff, rows.labels, col_labels, "difference").assign(
        first_query_pos=np.repeat(rows.a, len(cols.a)),
        second_query_pos=np.repeat(rows.b, len(cols.b)),
        first_key_pos=np.tile(cols.a, len(rows.a)),
        second_key_pos=np.tile(cols.b, len(rows.b)),
    )
    name = f"{model_id}_compare_layer{layer}_head{head}"
    _difference_chart(
        diff,
        rows.labels,
        col_labels,
        _("layer {layer}, head {head}: first − second", layer=layer, head=head),
        C + "diff",
        frame,
        name,
    )
    st.caption(
        _("Red: the first input attends more there; blue: the second does. 'a｜b' marks a substituted token.")
    )


def _mask_choices(model_id: str, text: str):
    """The adapter's replacements and the input tokens that may be masked, or a reason there are none."""
    if not cached.capabilities(model_id).masking:
        able = ", ".join(cached.model_choices(masking=True))
        return None, _(
            "Masking reruns self-attention models and the couplet Transformer ({able}); {model} is not one.",
            able=able,
            model=model_id,
        )
    records = cached.run_model(model_id, text).records
    source = records.get("self") or records.get("encoder_self")
    special = source.meta.get("key_special") or [False] * len(source.key_tokens)
    words = piece_words(source.key_tokens, source.meta.get("key_word_ids"))
    return (cached.adapter(model_id).replacements(), source.key_tokens, special, words), None


def mask_tab(model_id: str, text: str, options: ViewOptions, link: Link) -> None:
    """Click a token to replace it with the model's mask (or pad) token, and see every head's change.
    The token clicked is kept in the page's ``link`` (``masked=12``), so a link reopens it."""
    found, reason = _mask_choices(model_id, text)
    if found is None:
        st.info(reason)
        return
    replacements, tokens, special, words = found
    names = list(replacements)
    if not names:
        st.info(_("{model}'s tokenizer has no mask, pad, unk or eos token to mask with.", model=model_id))
        return
    c1, c2 = st.columns([1, 3])
    name = c1.radio(
        _("replace with"), names, format_func=lambda n: f"{n}: {replacements[n]}", key=f"{M}with_{model_id}"
    )  # per model: each has its own list
    others = _(" or ").join(replacements[n] for n in names)
    note = (
        ""
        if "mask" in replacements
        else _("{model} has no mask token: {others} stands in for one. ", model=model_id, others=others)
    )
    c2.caption(
        _(
            "The token's id is replaced by {replacement} and the model reruns; length and "
            "positions stay. {note}Special tokens cannot be masked, so they are not offered.",
            replacement=plain(replacements[name]),
            note=plain(note),
        )
    )
    positions = [p for p in range(len(tokens)) if not special[p]]
    if not positions:
        st.info(_("Every token of this input is a special token: there is none to mask."))
        return
    labels = pill_labels(tokens, positions, words)
    whole = [p for p in positions if p not in words] or positions  # first offered: a whole word
    middle = whole[len(whole) // 2]
    position = st.pills(
        _("token to mask (click one)"),
        positions,
        format_func=labels.get,
        key=link.choice("masked", M + "token", positions, middle, N_("is not a token that can be masked")),
    )
    if position is None:
        st.info(_("Click a token above to mask it."))
        return
    _masked_view(model_id, text, options, (position, name, tokens, words.get(position)))


def _masked_view(model_id: str, text: str, options: ViewOptions, pick: tuple) -> None:
    position, name, tokens, word = pick
    result = cached.run_model(model_id, text)
    try:
        with st.spinner(_("Running the model with the token masked…")):
            masked = masked_run(model_id, text, position, name, result.output)
    except ValueError as err:
        st.warning(plain(err))
        return
    before, raw = shown_record(model_id, text, options), masked.records[options.kind]
    after = options.apply(raw)
    if after.weights.shape != before.weights.shape:
        st.warning(
            _(
                "The masked run has {after} weights, the original {before}.",
                after=after.weights.shape,
                before=before.weights.shape,
            )
        )
        return
    skip = shown_rows(raw, position, options) if raw.query_tokens == raw.key_tokens else []
    grid = row_change(before.weights, after.weights, skip)
    what = piece_label(plain(f"{position}·{clean_token(tokens[position])}"), word)
    st.subheader(_("Every head's change with token {token} masked", token=what))
    _grid_chart(
        grid, "TV", _("total variation per head"), M + "grid", f"{model_id}_mask_{position}", "change_tv"
    )
    st.caption(
        _(
            "One tile per layer × head: the total variation ½·Σ|before − after| between each query row's "
            "attention before and after masking, averaged over the query rows other than the masked token's "
            "(0: the head did not change; 1: it moved all of its attention). Raw weights α (not weighted by "
            "value norms)."
        )
    )
    _top_heads(grid, f"{model_id}_mask_{position}_top")
    layer, head = _head_choice(grid, "TV", M + "head")
    _before_after(before, after, layer, head, f"{model_id}_mask_{position}_layer{layer}_head{head}")


def _top_heads(grid: np.ndarray, filename: str, key: str = M) -> None:
    L, H = grid.shape
    table = pd.DataFrame(
        {"layer": np.repeat(np.arange(L), H), "head": np.tile(np.arange(H), L), "change (TV)": grid.ravel()}
    )
    table = table.sort_values("change (TV)", ascending=False, kind="stable").head(TOP)
    heads = ngettext("{n:,} head", "{n:,} heads", len(table)).format(n=len(table))
    st.markdown(_("**The {heads} that changed most**", heads=heads))
    names = {"layer": _("layer"), "head": _("head"), "change (TV)": _("change (TV)")}  # headers only
    st.dataframe(table, hide_index=True, key=key + "top", width=480, column_config=names)


MASK_NOTE = N_(
    "Red: more attention after masking; blue: less. 'a｜b' labels the masked token (before｜after)."
)


def _before_after(
    before: AttentionRecord,
    after: AttentionRecord,
    layer: int,
    head: int,
    name: str,
    key: str = M,
    note: str = MASK_NOTE,
) -> None:
    a, b = before.head(layer, head), after.head(layer, head)
    rows = pair_labels(before.query_tokens, after.query_tokens)
    cols = pair_labels(before.key_tokens, after.key_tokens)
    panels = {_("before"): a, _("after"): b}
    frame = token_matrix_frame(a, rows, cols, "before").assign(after=b.ravel(), difference=(b - a).ravel())
    fig = heatmap_row(panels, rows, cols, zmax=float(max(a.max(), b.max())))
    _turn_pairs(fig, cols, 2)
    chart(fig, frame, key + "pair", name)
    diff_frame = token_matrix_frame(b - a, rows, cols, "difference")
    title = _("layer {layer}, head {head}: after − before", layer=layer, head=head)
    _difference_chart(b - a, rows, cols, title, key + "diff", diff_frame, name + "_difference")
    st.caption(_(note))
