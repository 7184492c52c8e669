"""BertViz's three calls, drawn with Attention Atlas's views: switching is one import line.

``head_view``, ``model_view`` and ``line_view`` take BertViz's arguments, either a self-attention
(``attention``, ``tokens``) or its encoder–decoder form (``encoder_attention``,
``decoder_attention``, ``cross_attention``, ``encoder_tokens``, ``decoder_tokens``). As in BertViz
each draws where it is called (``page.View.draw``: once, also in a loop or before a ``print``) and
``html_action="return"`` draws nothing and gives an ``IPython.display.HTML`` whose ``.data`` is the
self-contained file; otherwise the call returns the ``page.View`` it drew (``.to_html()``,
``.save(path)``). ``display_mode`` ("dark", "light") gives the view BertViz's palette, else it
follows the notebook's theme; ``prettify_tokens`` cleans tokens as BertViz does (``Ġ`` and ``▁``
become spaces, ``##`` stays) or keeps them as given. Layers and heads are the model's own numbers,
``include_layers`` or not (negative: from the end).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from attention_atlas.notebook.inputs import (
    NotebookError,
    from_end,
    language_of,
    listed,
    prettified,
    record_of,
)
from attention_atlas.notebook.page import PALETTES, Section, View
from attention_atlas.viz_core.line_view import COLOURS, MAX_TOKENS

ACTIONS = ("view", "return")


def _records(attention, tokens, cross, prettify: bool = True) -> list[tuple[str, object]]:
    """``(title, record)`` for each attention given: a self-attention, or encoder, decoder, cross;
    the tokens cleaned as BertViz's ``prettify_tokens`` cleans them, or as given."""
    enc_att, dec_att, cross_att, enc_tok, dec_tok = cross
    tokens, enc_tok, dec_tok = (prettified(t, prettify) for t in (tokens, enc_tok, dec_tok))
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
    """``html_action="return"``: the file as BertViz returns its HTML (``.data``), nothing drawn;
    ``"view"``: the view drawn here (``View.draw``) and returned."""
    if html_action not in ACTIONS:
        raise NotebookError(f"html_action is 'view' or 'return', not {html_action!r}")
    if html_action == "return":
        return html_object(view.to_html())
    view.draw()
    return view


class HTML:
    """What ``html_action="return"`` gives where IPython is not installed: the HTML in ``.data``,
    shown as HTML by whatever reads ``_repr_html_``."""

    def __init__(self, data: str):
        self.data = data

    def _repr_html_(self) -> str:
        return self.data


def html_object(text: str):
    """``text`` as BertViz returns its HTML: an ``IPython.display.HTML`` (its ``.data``)."""
    try:
        from IPython.display import HTML as IPythonHTML
    except ImportError:
        return HTML(text)
    return IPythonHTML(text)


def mode_of(display_mode) -> str | None:
    """BertViz's ``display_mode``: "dark" or "light"; None (not given): the notebook's own theme."""
    if display_mode is None or (isinstance(display_mode, str) and display_mode in PALETTES):
        return display_mode
    raise NotebookError(f"display_mode is 'dark' or 'light', not {display_mode!r}")


def _subset(record, layers: list[int], heads: list[int]):
    if layers == list(range(record.n_layers)) and heads == list(range(record.n_heads)):
        return record, None
    return replace(record, weights=record.weights[layers][:, heads]), (layers, heads)


def model_view(
    attention=None,
    tokens=None,
    sentence_b_start=None,
    prettify_tokens=True,
    display_mode=None,  # BertViz's "dark" (its default) or "light"; None: the notebook's own theme
    encoder_attention=None,
    decoder_attention=None,
    cross_attention=None,
    encoder_tokens=None,
    decoder_tokens=None,
    include_layers=None,
    include_heads=None,
    html_action="view",
    lang="en",
    stacked=False,
):
    """Every layer and head as tiles; a click opens the head below, arrow keys step through them.
    ``lang="zh"``: titles, hover and captions in Chinese. With the encoder–decoder keywords, one
    attention at a time behind a selector, as in BertViz (``stacked=True``: all of them, one under
    another)."""
    cross = (encoder_attention, decoder_attention, cross_attention, encoder_tokens, decoder_tokens)
    mode = mode_of(display_mode)
    pairs = _records(attention, tokens, cross, prettify_tokens)
    view = build("model", pairs, sentence_b_start, include_layers, include_heads, lang=lang, verbatim=True)
    view.palette, view.choose = mode, len(pairs) > 1 and not stacked
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
    display_mode=None,
    stacked=False,
):
    """BertViz's head view: a layer selector, a colour box per head (a click switches its lines on
    or off, a double-click shows it alone) and the lines of the heads switched on (``heads``, else
    all; hover a token for its own). Below, the tiles (every layer's, or ``layer``'s row where it
    is given) and the first head's matrix: a tile or an arrow key opens another, and the lines
    follow its layer. ``layer`` and ``heads`` are the model's numbers, one of ``include_layers``
    where it is given. The encoder–decoder keywords: one attention at a time behind a selector
    (``stacked=True``: all)."""
    cross = (encoder_attention, decoder_attention, cross_attention, encoder_tokens, decoder_tokens)
    mode = mode_of(display_mode)
    pairs = _records(attention, tokens, cross, prettify_tokens)
    view = build("head", pairs, sentence_b_start, include_layers, None, layer, heads, lang=lang, verbatim=True)
    view.palette, view.choose = mode, len(pairs) > 1 and not stacked
    return finish(view, html_action)


CROSS_KEYWORDS = (
    "encoder_attention",
    "decoder_attention",
    "cross_attention",
    "encoder_tokens",
    "decoder_tokens",
)


def line_view(
    attention=None,
    tokens=None,
    layer=0,
    heads=None,
    html_action="view",
    lang="en",
    prettify_tokens=True,
    display_mode=None,
    **encoder_decoder,
):
    """Only the line view: ``layer``'s ``heads`` (at most eight, one colour each), queries on the
    left and keys on the right; hover a token to see only its lines."""
    unknown = sorted(set(encoder_decoder) - set(CROSS_KEYWORDS))
    if unknown:
        raise NotebookError(f"line_view takes no {unknown}")
    mode = mode_of(display_mode)
    cross = tuple(encoder_decoder.get(k) for k in CROSS_KEYWORDS)
    pairs = _records(attention, tokens, cross, prettify_tokens)
    view = build("line", pairs, layer=layer, heads=heads, lang=lang, verbatim=True)
    view.palette = mode
    return finish(view, html_action)


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
    verbatim=False,
) -> View:
    """The ``name`` view (``model``, ``head`` or ``line``) of each ``(title, record)``, its titles in
    ``lang``; ``verbatim``: tokens shown as the records have them (BertViz's calls), not cleaned
    as the app cleans them. ``layer`` and ``heads`` are the model's own numbers."""
    if name not in VIEWS:
        raise NotebookError(f"view is one of {', '.join(VIEWS)}, not {name!r}")
    lang = language_of(lang)
    sections = []
    for title, record in pairs:
        _sentence_b(record, sentence_b_start)
        layers = from_end(include_layers, record.n_layers, "include_layers")
        head_ids = from_end(include_heads, record.n_heads, "include_heads")
        shown, labels = _subset(record, layers, head_ids)
        first = 0 if verbatim else len(layers) // 2  # BertViz opens at layer 0; show() as the app does
        open_layer = first if layer is None else among(layer, layers, record.n_layers, "layer")[0]
        picked = among(heads, head_ids, record.n_heads, "heads")
        n = max(len(shown.query_tokens), len(shown.key_tokens))
        heads_drawn = picked if name == "head" else picked[: len(COLOURS)]  # the head view: a box per head
        lines = heads_drawn if name != "model" and n <= MAX_TOKENS else []
        if name == "line" and not lines:
            raise NotebookError(
                f"the line view draws up to {MAX_TOKENS} tokens; this input has {n}: use the model view"
            )
        model = name != "line"
        section = Section(shown, title, open_layer, picked[0], model, lines, labels, sentence_b_start)
        section.verbatim, section.every_head = verbatim, name == "head"  # BertViz's: a box per head
        section.row = section.every_head and layer is not None and len(layers) > 1  # layer= said: its row
        sections.append(section)
    return View(sections, f"{name} view", lang)


def among(values, kept: list[int], count: int, what: str) -> list[int]:
    """Where in ``kept`` (the model's layer or head numbers a view keeps, of ``count``) ``values``
    are: given by those numbers (an int or a list; negative: from the end; None: all kept)."""
    if values is None:
        return list(range(len(kept)))
    given = [values] if isinstance(values, int | np.integer) else list(values)
    ok = [isinstance(v, int | np.integer) and -count <= v < count and int(v) % count in kept for v in given]
    if not given or not all(ok):
        bad = [v for v, good in zip(given, ok, strict=True) if not good] or given
        if len(kept) == count:
            raise NotebookError(f"{what} must be in 0–{count - 1}, not {listed(bad)}")
        noun, keeper = ("layers", "include_layers") if what == "layer" else ("heads", "include_heads")
        shown = ", ".join(map(str, kept))
        raise NotebookError(f"{what} must be one of {shown}, the {noun} {keeper} keeps, not {listed(bad)}")
    return list(dict.fromkeys(kept.index(int(v) % count) for v in given))
