"""``patch_view(model, tokenizer, clean, corrupt, answer, wrong)``: activation patching of the notebook's
own causal LM (``models.analysis.patching``), drawn where it is called as the other notebook calls
are: the answer's probabilities on both prompts, then the layer × position heatmaps (the residual
stream, each attention block's output, each feed-forward block's output) and the layer × head
heatmaps (each head's output, each head's pattern), as plain Plotly figures (``page.Figures``)."""

from __future__ import annotations

from attention_atlas.i18n import language
from attention_atlas.notebook.inputs import NotebookError, language_of
from attention_atlas.notebook.page import Figures, View
from attention_atlas.notebook.views import finish, mode_of

TITLES = {
    "resid": "the residual stream entering each block",
    "attn_out": "each attention block's output",
    "mlp_out": "each feed-forward block's output",
    "heads": "each head's output, all positions",
    "pattern": "each head's attention pattern, all positions",
}


def patch_view(
    model,
    tokenizer,
    clean: str,
    corrupt: str,
    answer: str,
    wrong: str,
    direction: str = "denoise",
    *,
    kinds=None,
    html_action: str = "view",
    lang: str = "en",
    display_mode: str | None = None,
):
    """Patch every component of ``model`` between ``clean`` and ``corrupt`` (the same number of tokens)
    and draw the effects: ``direction`` "denoise" copies clean activations into the corrupted run,
    "noise" corrupted ones into the clean run; ``answer`` and ``wrong`` are single tokens (``" Paris"``,
    with its space). The view's ``result`` holds the ``Patching`` (its arrays for your own analysis)."""
    from attention_atlas.models.analysis import patching as pt
    from attention_atlas.notebook.run import adapter_of
    from attention_atlas.viz_core import patching_figures as pf

    lang = language_of(lang)
    palette = mode_of(display_mode)
    kinds = pt.KINDS if kinds is None else tuple(kinds)
    try:
        result = pt.patching(adapter_of(model, tokenizer), clean, corrupt, answer, wrong, direction, kinds)
    except ValueError as err:  # the analysis's one-line refusals
        raise NotebookError(str(err)) from None
    figures = []
    with language(lang):
        for kind in kinds:
            effect = getattr(result, kind)
            if kind in pf.POSITION_KINDS:
                figures.append(pf.position_map(effect, result.tokens_clean, result.tokens_corrupt, TITLES[kind]))
            else:
                figures.append(pf.head_map(effect, TITLES[kind]))
    (pa, pw), (ca, cw) = result.probs_clean, result.probs_corrupt
    caption = (
        f"{direction}: effect 0 is the run unpatched, 1 the other run's answer. Logit difference"
        f" {answer!r} − {wrong!r}: clean {result.metric_clean:.3f}, corrupted {result.metric_corrupt:.3f};"
        f" probabilities clean {pa:.3f} / {pw:.3f}, corrupted {ca:.3f} / {cw:.3f}."
    )
    view = View([Figures(figures, "activation patching", caption)], "patching view", lang=lang, palette=palette)
    view.result = result
    return finish(view, html_action)
