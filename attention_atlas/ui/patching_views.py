"""The "Inside a prediction" page's Patching tab (``app_pages/prediction.py``): activation patching of the
model between a clean and a corrupted prompt (``models.analysis.patching``, computed once per model and
inputs and shared by sessions), the answers' probabilities on both prompts first, then one layer ×
position or layer × head heatmap at a time, and the heads ranked by effect with a link to each one's
attention on the Transformer page. Its first load teaches: SmolLM2 answers " Paris" to the Eiffel Tower
and " Rome" to the Colosseum, and the subject's tokens carry the answer up to the middle blocks, where
the last position takes it over. Widget keys start with ``patch_``.
"""

from __future__ import annotations

from urllib.parse import quote, urlencode

import streamlit as st

from attention_atlas.i18n import N_, _
from attention_atlas.ui import cached
from attention_atlas.ui.url_state import Link, Unlinked, kept
from attention_atlas.ui.widgets import chart, fact, plain, text_box
from attention_atlas.viz_core import patching_figures as pf

K = "patch_"
LIMIT = 400  # characters of a prompt: patching runs one forward per component, so prompts stay short
ANSWER_LIMIT = 40
EXAMPLE = ("The Eiffel Tower is in the city of", "The Colosseum is in the city of", " Paris", " Rome")
ABOUT = N_(
    "Which components cause the answer? Run a clean prompt and a corrupted one that changes the answer, "
    "copy one activation from one run into the other, and measure how much of the answer comes back "
    "(denoising) or goes away (noising). The metric is the logit difference between the answer and the "
    "wrong answer at the last position: 0 is the corrupted run, 1 the clean run."
)
KINDS = {
    "resid": N_("residual stream"),
    "attn_out": N_("attention output"),
    "mlp_out": N_("feed-forward output"),
    "heads": N_("head outputs"),
    "pattern": N_("head patterns"),
}
DIRECTIONS = {"denoise": N_("denoise: clean into corrupted"), "noise": N_("noise: corrupted into clean")}
TITLES = {
    "resid": N_("the residual stream entering each block, at one position"),
    "attn_out": N_("each attention block's output, at one position"),
    "mlp_out": N_("each feed-forward block's output, at one position"),
    "heads": N_("each head's output, at every position"),
    "pattern": N_("each head's attention pattern, at every position"),
}
TOP_HEADS = 5


# A resource: the arrays are shared by sessions, never pickled per rerun.
@st.cache_resource(show_spinner=False, max_entries=4)
def computed(key: str, clean: str, corrupt: str, answer: str, wrong: str, direction: str, _source: cached.Source):
    from attention_atlas.models.analysis.patching import patching

    cached.janitor().on_quiet(computed.clear)
    with cached.lane_for(key, clean).turn():
        return patching(_source.adapter, clean, corrupt, answer, wrong, direction)


@st.cache_resource(show_spinner=False, max_entries=8)
def per_position(key: str, clean: str, corrupt: str, answer: str, wrong: str, direction: str, layer: int, _source):
    from attention_atlas.models.analysis.patching import head_positions

    cached.janitor().on_quiet(per_position.clear)
    with cached.lane_for(key, clean).turn():
        return head_positions(_source.adapter, clean, corrupt, answer, wrong, layer, direction)


def patching_tab(source: cached.Source, link: Link | Unlinked) -> None:
    st.caption(_(ABOUT))
    c1, c2 = st.columns(2)
    clean = text_box(c1, _("clean prompt"), link.text("clean", K + "clean", LIMIT, EXAMPLE[0]), LIMIT, EXAMPLE[0])
    corrupt = text_box(
        c2, _("corrupted prompt (as many tokens)"), link.text("corrupt", K + "corrupt", LIMIT, EXAMPLE[1]), LIMIT
    )
    _swap_row(source)
    c1, c2, c3 = st.columns([1, 1, 2])
    answer = c1.text_input(_("answer (one token)"), key=link.text("answer", K + "answer", ANSWER_LIMIT, EXAMPLE[2]))
    wrong = c2.text_input(_("wrong answer (one token)"), key=link.text("wrong", K + "wrong", ANSWER_LIMIT, EXAMPLE[3]))
    direction = c3.radio(
        _("direction"),
        list(DIRECTIONS),
        format_func=lambda d: _(DIRECTIONS[d]),
        horizontal=True,
        key=link.choice("direction", K + "direction", list(DIRECTIONS), "denoise"),
    )
    if not clean.strip() or not corrupt.strip():
        st.info(_("Type a clean and a corrupted prompt to patch one into the other."))
        return
    try:
        with st.spinner(_("Patching every block, position and head…")):
            source.ready()
            result = computed(source.key, clean, corrupt, answer, wrong, direction, source)
    except ValueError as err:  # PatchError (lengths, answers, a model that cannot be patched), InputError
        st.warning(plain(err))
        return
    except (OSError, RuntimeError) as err:
        st.error(_("{model} cannot run here: {error}", model=source.name, error=plain(err)))
        return
    _answers(result, answer, wrong)
    kind = st.radio(
        _("what is patched"),
        list(KINDS),
        format_func=lambda k: _(KINDS[k]),
        horizontal=True,
        key=link.choice("kind", K + "kind", list(KINDS), "resid"),
    )
    effect = getattr(result, kind)
    title = _(TITLES[kind])

    def frame():
        return pf.frame({kind: effect}, result.tokens_clean, result.tokens_corrupt)

    if kind in pf.POSITION_KINDS:
        fig = pf.position_map(effect, result.tokens_clean, result.tokens_corrupt, title)
        chart(fig, frame, K + "map", f"patching_{kind}")
        return
    chart(pf.head_map(effect, title), frame, K + "map", f"patching_{kind}")
    _ranked(source, clean, effect)
    if kind == "heads":
        inputs = (clean, corrupt, answer, wrong, direction)
        _heads_by_position(source, inputs, result, link, int(pf.ranked_heads(effect, 1)[0][0]))


def _swap_row(source: cached.Source) -> None:
    """Folded under the prompts: the corrupted prompt made from the clean one, one word swapped for
    another of as many tokens (a pair of different lengths cannot be patched)."""
    with st.expander(_("Make the corrupted prompt: swap one word of the clean prompt")):
        c1, c2, c3 = st.columns([2, 2, 1], vertical_alignment="bottom")
        c1.text_input(_("a word of the clean prompt"), key=K + "old")
        c2.text_input(_("swapped for"), key=K + "new")
        c3.button(_("Swap"), key=K + "swap", on_click=_swap, args=(source,))
        problem = st.session_state.pop(K + "swap_problem", None)
        if problem is not None:
            st.warning(plain(problem))


def _swap(source: cached.Source) -> None:
    from attention_atlas.models.analysis.patching import PatchError, swap

    state = st.session_state
    try:
        source.ready()
        state[K + "corrupt"] = swap(source.adapter, state.get(K + "clean", ""), state.get(K + "old", ""), state.get(K + "new", ""))
    except PatchError as err:
        state[K + "swap_problem"] = err


def _heads_by_position(source: cached.Source, inputs: tuple, result, link: Link | Unlinked, top: int) -> None:
    """One layer's heads, each patched at one position at a time (the layer of the strongest head first)."""
    layers = result.heads.shape[0]
    layer = st.select_slider(
        _("one layer's heads, position by position"),
        list(range(layers)),
        key=link.number("layer", K + "layer", 0, layers - 1, top),
    )
    with st.spinner(_("Patching each head of layer {layer} at each position…", layer=layer)):
        effect = per_position(source.key, *inputs, layer, source)
    title = _("layer {layer}: each head's output, at one position", layer=layer)
    fig = pf.position_map(effect, result.tokens_clean, result.tokens_corrupt, title, rows="head")

    def frame():
        return pf.head_positions_frame(effect, layer, result.tokens_clean, result.tokens_corrupt)

    chart(fig, frame, K + "positions", f"patching_heads_layer{layer}")


def _answers(result, answer: str, wrong: str) -> None:
    (pa, pw), (ca, cw) = result.probs_clean, result.probs_corrupt
    fact(
        _(
            "Clean prompt: P({answer}) = {pa:.3f}, P({wrong}) = {pw:.3f}; corrupted prompt: P({answer}) = "
            "{ca:.3f}, P({wrong}) = {cw:.3f}. Logit difference: clean {clean:.2f}, corrupted {corrupt:.2f}.",
            answer=repr(answer),
            wrong=repr(wrong),
            pa=pa,
            pw=pw,
            ca=ca,
            cw=cw,
            clean=result.metric_clean,
            corrupt=result.metric_corrupt,
        )
    )
    if not pa > pw or not cw > ca:
        st.warning(
            _(
                "The model does not prefer the answer on the clean prompt and the wrong answer on the "
                "corrupted one: the effects measure something else than the switch between them."
            )
        )


def _ranked(source: cached.Source, clean: str, effect) -> None:
    """The heads with the largest effects, each a link to its attention on the Transformer page."""
    lines = [_("**Heads with the largest effect**")]
    for layer, head, value in pf.ranked_heads(effect, TOP_HEADS):
        label = _("layer {layer}, head {head}: effect {value:.3f}", layer=layer, head=head, value=value)
        if source.bundled:  # the Transformer page's own settings (its URL state), this head opened
            query = {"model": source.key, "text": clean, "layer": layer, "head": head} | kept()
            lines.append(f"- [{label}](./transformer?{urlencode(query, quote_via=quote)})")
        else:
            lines.append(f"- {label}")
    st.markdown("\n".join(lines))
