"""BertViz's three calls, drawn with Attention Atlas's views: switching is one import line.

``head_view``, ``model_view`` and ``line_view`` take BertViz's arguments, either a self-attention
(``attention``, ``tokens``) or its encoder–decoder form (``encoder_attention``,
``decoder_attention``, ``cross_attention``, ``encoder_tokens``, ``decoder_tokens``), and return a
``page.View`` (shown in Jupyter, ``.to_html()``, ``.save(path)``); ``html_action="return"`` gives
the HTML as BertViz does.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from attention_atlas.notebook.inputs import NotebookError, language_of, pick, record_of
from attention_atlas.notebook.page import Section, View
from attention_atlas.viz_core.line_view import COLOURS, MAX_TOKENS

ACTIONS = ("view", "return")


def _records(attention, tokens, cross) -> list[tuple[str, object]]:
    """``(title, record)`` for each attention given: a self-attention, or encoder, decoder, cross."""
    enc_att, dec_att, cross_att, enc_tok, dec_tok = cross
    if attention is not None:
        if any(a is not None for a in (enc_att, dec_att, cross_att)):
            raise NotebookError("pass either attention and tokens, or the encoder–decoder keywords, not both")
        return [("", record_of(attention, tokens))]
    parts = (  # title, kind, keyword, weights, query tokens, key tokens (None: the same)
        ("encoder self-attention", "encoder_self", "encoder_attention", enc_att, enc_tok, None),
        ("decoder self-attention", "decoder_self", "decoder_attention", dec_att, dec_tok, None),
        ("cross-attention", "cross", "cross_attention", cross_att, dec_tok, enc_tok),
    )
    out = [
        (title, record_of(weights, queries, keys, kind=kind, what=keyword))
        for title, kind, keyword, weights, queries, keys in parts
        if weights is not None
    ]
    if not out:
        raise NotebookError("no attention given: pass attention (outputs.attentions) and tokens")
    return out


def _sentence_b(record, start) -> None:
    if start is not None and not (isinstance(start, int | np.integer) and 0 < start < len(record.key_tokens)):
        raise NotebookError(
            f"sentence_b_start must be a position in 1–{len(record.key_tokens) - 1}, not {start}"
        )


def finish(view: View, html_action: str):
    if html_action not in ACTIONS:
        raise NotebookError(f"html_action is 'view' or 'return', not {html_action!r}")
    return view.to_html() if html_action == "return" else view


def _subset(record, layers: list[int], heads: list[int]):
    if layers == list(range(record.n_layers)) and heads == list(range(record.n_heads)):
        return record, None
    return replace(record, weights=record.weights[layers][:, heads]), (layers, heads)


def model_view(
    attention=None,
    tokens=None,
    sentence_b_start=None,
    prettify_tokens=True,
    display_mode="dark",  # BertViz's theme switch: these views follow the notebook's own text colour
    encoder_attention=None,
    decoder_attention=None,
    cross_attention=None,
    encoder_tokens=None,
    decoder_tokens=None,
    include_layers=None,
    include_heads=None,
    html_action="view",
    lang="en",
):
    """Every layer and head as tiles; a click opens the head below, arrow keys step through them.
    ``lang="zh"``: titles, hover and captions in Chinese."""
    cross = (encoder_attention, decoder_attention, cross_attention, encoder_tokens, decoder_tokens)
    pairs = _records(attention, tokens, cross)
    view = build("model", pairs, sentence_b_start, include_layers, include_heads, lang=lang)
    return finish(view, html_action)


def head_view(
    attention=None,
    tokens=None,
    sentence_b_start=None,
    prettify_tokens=True,
    layer=None,
    heads=None,
    encoder_attention=None,
    decoder_attention=None,
    cross_attention=None,
    encoder_tokens=None,
    decoder_tokens=None,
    include_layers=None,
    html_action="view",
    lang="en",
):
    """BertViz's head view: ``layer``'s ``heads`` as lines (hover a token for its own), above them
    the first head's matrix and every head's tile (click one, or step with the arrow keys)."""
    cross = (encoder_attention, decoder_attention, cross_attention, encoder_tokens, decoder_tokens)
    pairs = _records(attention, tokens, cross)
    view = build("head", pairs, sentence_b_start, include_layers, None, layer, heads, lang=lang)
    return finish(view, html_action)


CROSS_KEYWORDS = (
    "encoder_attention",
    "decoder_attention",
    "cross_attention",
    "encoder_tokens",
    "decoder_tokens",
)


def line_view(attention=None, tokens=None, layer=0, heads=None, html_action="view", lang="en", **encoder_decoder):
    """Only the line view: ``layer``'s ``heads`` (at most eight, one colour each), queries on the
    left and keys on the right; hover a token to see only its lines."""
    unknown = sorted(set(encoder_decoder) - set(CROSS_KEYWORDS))
    if unknown:
        raise NotebookError(f"line_view takes no {unknown}")
    pairs = _records(attention, tokens, tuple(encoder_decoder.get(k) for k in CROSS_KEYWORDS))
    return finish(build("line", pairs, layer=layer, heads=heads, lang=lang), html_action)


VIEWS = ("model", "head", "line")


def build(
    name: str,
    pairs: list[tuple[str, object]],
    sentence_b_start=None,
    include_layers=None,
    include_heads=None,
    layer=None,
    heads=None,
    lang="en",
) -> View:
    """The ``name`` view (``model``, ``head`` or ``line``) of each ``(title, record)``, its titles in ``lang``."""
    if name not in VIEWS:
        raise NotebookError(f"view is one of {', '.join(VIEWS)}, not {name!r}")
    lang = language_of(lang)
    sections = []
    for title, record in pairs:
        _sentence_b(record, sentence_b_start)
        shown, labels = _subset(
            record,
            pick(include_layers, record.n_layers, "include_layers"),
            pick(include_heads, record.n_heads, "include_heads"),
        )
        open_layer = pick(shown.n_layers // 2 if layer is None else layer, shown.n_layers, "layer")[0]
        picked = pick(heads, shown.n_heads, "heads")
        n = max(len(shown.query_tokens), len(shown.key_tokens))
        lines = picked[: len(COLOURS)] if name != "model" and n <= MAX_TOKENS else []
        if name == "line" and not lines:
            raise NotebookError(
                f"the line view draws up to {MAX_TOKENS} tokens; this input has {n}: use the model view"
            )
        section = Section(shown, title, open_layer, picked[0], name != "line", lines, labels, sentence_b_start)
        sections.append(section)
    return View(sections, f"{name} view", lang)
