"""``attribution_view(model, tokenizer, text, target=…)``: does attention explain this output? Every
attribution method beside attention for one output of the notebook's own model, and how faithful each
is (``models.analysis.attribution``), drawn where it is called as the other views are."""

from __future__ import annotations

from attention_atlas.i18n import language
from attention_atlas.notebook.inputs import NotebookError, language_of
from attention_atlas.notebook.page import Figures, View
from attention_atlas.notebook.views import finish


def attribution_view(
    model,
    tokenizer,
    text: str,
    target: str | None = None,
    *,
    position: int | None = None,
    methods: list[str] | None = None,
    steps: int = 32,
    html_action: str = "view",
    lang: str = "en",
):
    """For a causal LM and its tokenizer: the next token after ``text`` (its argmax, or ``target``'s
    first token; ``position`` K: the text's own token K after the tokens before it), explained by each
    of ``methods`` (default every one the model can do; integrated gradients with ``steps`` steps),
    as a methods × tokens heatmap, with each method's comprehensiveness and sufficiency beside it.
    An adapter of the registry (``registry.load("couplet-rnn-additive")``) may stand for ``model`` with
    ``tokenizer=None``: then ``target`` is the forced output and ``position`` its position.

    The returned view carries the numbers as ``.attribution`` (``models.analysis.attribution.Attribution``)."""
    from attention_atlas.models.analysis import attribution as at
    from attention_atlas.notebook.run import adapter_of
    from attention_atlas.viz_core.figures import attribution_heatmap, faithfulness_bars

    if not isinstance(text, str) or not text.strip():
        raise NotebookError("the text is empty: pass a sentence")
    lang = language_of(lang)
    adapter = model if tokenizer is None and hasattr(model, "run") else adapter_of(model, tokenizer)
    try:
        result = at.attribute(at.subject_of(adapter, text, target, position), methods, steps)
    except ValueError as err:  # the attribution's and the adapter's one-line refusals
        raise NotebookError(" ".join(str(err).split())) from None
    for notice in dict.fromkeys(result.notices):
        print(f"note: {notice}")
    with language(lang):
        title = f"{result.target!r}: log p = {result.f_input:.3f}"
        figures = [
            attribution_heatmap(result.scores, result.tokens, at.SIGNED, title=title),
            faithfulness_bars(
                list(result.methods), list(at.FRACTIONS), result.comprehensiveness, result.sufficiency
            ),
        ]
    gap = result.ig_completeness_gap
    caption = (
        f"Baseline token: {result.baseline_token}. Each row is divided by its largest |score|; ± marks a"
        " signed method. Comprehensiveness: how much log p drops when a method's top tokens are replaced"
        " by the baseline token; sufficiency: how much it drops when only they are kept."
        + (
            ""
            if gap != gap
            else f" Integrated gradients' completeness gap {gap:.2e} ({result.ig_relative_gap:.2%})."
        )
    )
    view = View([Figures(figures, "", caption)], "attribution view", lang=lang)
    view.attribution = result
    return finish(view, html_action)
