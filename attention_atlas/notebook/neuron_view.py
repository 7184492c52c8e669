"""BertViz's neuron view (``from bertviz.neuron_view import show``), with its signature, for the model a
notebook has loaded as it is: any Hugging Face encoder or causal LM whose queries and keys the app
captures (``models.analysis.neuron``), where BertViz needs forked BERT, GPT-2 and RoBERTa classes.

For one head and one query token (``query``: a position, by default the last token that is not a
special token): q, each key k, q∘k, the scores and the weights, the numbers the app's neuron view
shows (``viz_core.neuron``), as one self-contained figure. ``model_type`` is accepted for BertViz's
callers and not needed. Two sentences (``sentence_b``) are not read yet: one line says so.
"""

from __future__ import annotations

from attention_atlas.i18n import _, language, shown
from attention_atlas.notebook.inputs import NotebookError, language_of, pick
from attention_atlas.notebook.page import Figures, View
from attention_atlas.notebook.run import adapter_of
from attention_atlas.notebook.views import finish, mode_of
from attention_atlas.viz_core.neuron import HeadVectors, neuron
from attention_atlas.viz_core.neuron_figure import neuron_figure
from attention_atlas.viz_core.tokens import clean_token


def show(
    model,
    model_type,
    tokenizer,
    sentence_a,
    sentence_b=None,
    display_mode="dark",
    layer=None,
    head=None,
    html_action="view",
    query=None,
    lang="en",
):
    """The neuron view of ``layer`` (0 unless given), ``head`` (0) and ``query`` for ``sentence_a``,
    drawn where it is called (``html_action="return"``: its HTML, as BertViz returns it)."""
    if not isinstance(model_type, str):
        raise NotebookError(f"model_type is a name such as 'bert' or 'gpt2', not {model_type!r}")
    if sentence_b is not None:
        raise NotebookError("sentence_b: this neuron view reads one text; pass the two sentences as sentence_a")
    if not isinstance(sentence_a, str) or not sentence_a.strip():
        raise NotebookError("sentence_a must be a text to read, not empty")
    mode, lang = mode_of(display_mode), language_of(lang)
    vectors = head_vectors(model, tokenizer, sentence_a)
    layer = pick(0 if layer is None else layer, vectors.n_layers, "layer")[0]
    head = pick(0 if head is None else head, vectors.n_heads, "head")[0]
    query = pick(last_word(vectors) if query is None else query, len(vectors.query_tokens), "query")[0]
    with language(lang):
        section = _section(vectors, layer, head, query)
    return finish(View([section], name="neuron view", lang=lang, palette=mode), html_action)


def head_vectors(model, tokenizer, text: str) -> HeadVectors:
    """Every layer's queries and keys of ``text`` as ``model`` computes them (a refusal: one line)."""
    from attention_atlas.models.analysis.neuron import head_vectors as captured

    try:
        return captured(adapter_of(model, tokenizer), text, "self")
    except ValueError as err:  # the adapter's and the capture's one-line refusals
        raise NotebookError(shown(err)) from None


def last_word(vectors: HeadVectors) -> int:
    """The last position that is not a special token (the last one if every token is)."""
    words = [i for i, special in enumerate(vectors.key_special) if not special]
    return words[-1] if words else len(vectors.query_tokens) - 1


def _section(vectors: HeadVectors, layer: int, head: int, query: int) -> Figures:
    n = neuron(vectors, layer, head, query)
    label = vectors.query_tokens[query]
    title = _(
        "Layer {layer}, head {head}: query {query} · {token}",
        layer=layer,
        head=head,
        query=query,
        token=clean_token(label),
    )
    caption = _(
        "Each row of q ∘ K sums to q·k; the score is q·k × {scaling:.4g}, the weight the softmax of the scores "
        "over the keys the query sees. Red: positive, blue: negative.",
        scaling=n.scaling,
    )
    fig = neuron_figure(n, vectors.key_tokens, label)
    return Figures([fig], title=title, caption=caption, record=None)

