"""``show(model, tokenizer, text)``: the model a notebook has already loaded, drawn as the app draws it.

The model runs where it is, in its own dtype, with whatever attention implementation it was
loaded with (eager, SDPA, flash): its weights are not asked of it (``output_attentions`` gives
none under SDPA or flash) but computed from the queries and keys captured during a forward of
its capture twin (``models.adapters.capture``: the same parameters, transformers' attention
interface reporting each layer's queries and keys), every head ``softmax(q kᵀ · scaling)`` with
the causal mask where the model has one (``viz_core.blockwise``). Models the capture refuses (an
encoder–decoder, a sliding window, a bias outside q·k) run an eager twin with
``output_attentions``, as the app's adapter does. Tokens are labelled as in the app (byte-level
pieces decoded), and the Transformer page's options apply: word pieces merged, special tokens
hidden, weights weighted by value norms.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import plotly.io as pio

from attention_atlas.i18n import language
from attention_atlas.notebook.inputs import NotebookError, language_of, pick
from attention_atlas.notebook.page import Figures, View
from attention_atlas.notebook.views import build, finish, mode_of
from attention_atlas.viz_core.derive import ViewOptions

FULL_TOKENS = 1024  # every head's full matrix up to this many tokens (SmolLM2 at 1,024: 1.1 GB float32)


def _family(model) -> str | None:
    """The adapter's family from the model's class where its config does not name it."""
    if getattr(model.config, "is_encoder_decoder", False):
        return "seq2seq"
    name = type(model).__name__
    return "causal" if "CausalLM" in name or "LMHead" in name else None


def adapter_of(model, tokenizer):
    from attention_atlas.models.adapters.hf import HFAdapter

    model_id = getattr(model.config, "name_or_path", "") or type(model).__name__
    return HFAdapter.loaded(model, tokenizer, model_id, _family(model))


def captured_record(adapter, text: str):
    """Self-attention of an encoder or causal LM from its captured queries and keys, every head."""
    from attention_atlas.models.adapters import capture as cp
    from attention_atlas.viz_core.blockwise import head_weights

    src = cp.encode_long(adapter, text)
    n = src.ids.shape[1]
    if n > FULL_TOKENS:
        raise NotebookError(
            f"the text is {n:,} tokens; the notebook draws every head's full matrix up to {FULL_TOKENS:,}: shorten it"
        )
    cap = cp.capture(adapter, text)
    weights = np.stack(
        [np.stack([head_weights(cap, layer, h) for h in range(cap.n_heads)]) for layer in range(cap.n_layers)]
    )
    record = adapter._record(weights, src, src, "self")
    return {"self": record}, [*src.notices, *cap.notices]


def eager_records(adapter, text: str):
    """Every record from an eager twin of the model (sharing its parameters) with ``output_attentions``."""
    from attention_atlas.models.adapters.capture import _twin

    twin = _twin(adapter.model, adapter.device, "eager")
    eager = type(adapter).loaded(twin, adapter.tokenizer, adapter.model_id, adapter.family)
    result = eager.run(text)
    return result.records, result.notices


def records_of(adapter, text: str):
    """``({kind: record}, notices)`` for ``text``: captured where the capture reads the model."""
    from attention_atlas.models.adapters.capture import supports

    try:
        if supports(adapter) is None:
            return captured_record(adapter, text)
        return eager_records(adapter, text)
    except NotebookError:
        raise
    except ValueError as err:  # the adapter's and the capture's one-line refusals
        raise NotebookError(str(err)) from None


TITLES = {
    "self": "",
    "encoder_self": "encoder self-attention",
    "decoder_self": "decoder self-attention",
    "cross": "cross-attention",
}


def show(
    model,
    tokenizer,
    text: str,
    view: str = "model",
    *,
    merge: bool = False,
    hide_special: bool = False,
    value_norms: bool = False,
    layer: int | None = None,
    heads=None,
    html_action: str = "view",
    lang: str = "en",
    display_mode: str | None = None,
):
    """Run ``model`` on ``text`` and draw the ``view`` (``"model"``, ``"head"`` or ``"line"``) where
    it is called, as the BertViz calls do (``views.finish``), its titles, hover and captions in
    ``lang`` ("en" or "zh"), in BertViz's ``display_mode`` palette ("dark", "light") if given.

    ``merge`` sums word pieces into words, ``hide_special`` drops [CLS], [SEP], <s>… and
    renormalises the rows, ``value_norms`` weights each weight by the norm of its key's value
    vector through the head's output slice (BERT- and Llama-style models), as on the app's
    Transformer page. What the input needed (cut, characters fixed) is printed as notices."""
    if view not in ("model", "head", "line"):
        raise NotebookError(f"view is one of model, head, line, not {view!r}")
    lang = language_of(lang)
    palette = mode_of(display_mode)
    with language(lang):  # the long-input view's figures are made here, not when shown
        drawn = _show(model, tokenizer, text, view, merge, hide_special, value_norms, layer, heads)
    drawn.lang, drawn.palette = lang, palette
    return finish(drawn, html_action)


def _show(model, tokenizer, text, view, merge, hide_special, value_norms, layer, heads) -> View:
    if not isinstance(text, str) or not text.strip():
        raise NotebookError("the text is empty: pass a sentence")
    adapter = adapter_of(model, tokenizer)
    if _long(adapter, text):
        if view != "model" or merge or hide_special or value_norms:
            raise NotebookError(
                f"past {FULL_TOKENS:,} tokens show() draws the long-input view alone: call it with the "
                "text and view='model', without merge, hide_special or value_norms"
            )
        return long_view(adapter, text, layer, heads)
    records, notices = records_of(adapter, text)
    options = ViewOptions(merge=merge, hide=hide_special)
    pairs = []
    for kind, record in records.items():
        if value_norms:
            record = _value_weighted(adapter, text, record)
        pairs.append((TITLES[kind], options.apply(record)))
    for notice in dict.fromkeys(notices):
        print(f"note: {notice}")
    return build(view, pairs, layer=layer, heads=heads)


def _long(adapter, text: str) -> bool:
    """Whether ``text`` is past ``FULL_TOKENS`` for a model the capture reads (else the usual path,
    which refuses it in one line)."""
    from attention_atlas.models.adapters import capture as cp

    if cp.supports(adapter) is not None:
        return False
    try:
        return len(adapter.tokenizer(text)["input_ids"]) > FULL_TOKENS
    except (TypeError, ValueError):
        return False


def long_view(adapter, text: str, layer: int | None = None, head=None) -> View:
    """The app's long-input view of ``text``: every head's max-pooled thumbnail and one head's
    overview (``layer``, ``head``: the middle layer's first by default), from the queries and keys
    captured as on the long-input page (in mapped files from 2,048 tokens); a box drawn on the
    overview zooms into its cells."""
    from attention_atlas.models.adapters import capture as cp
    from attention_atlas.viz_core import blockwise as bw
    from attention_atlas.viz_core import every_head as eh
    from attention_atlas.viz_core import long_figures as lf

    try:
        cap = cp.capture(adapter, text)
    except ValueError as err:
        raise NotebookError(str(err)) from None
    layer = pick(cap.n_layers // 2 if layer is None else layer, cap.n_layers, "layer")[0]
    head = pick(0 if head is None else head, cap.n_heads, "heads")[0]
    bar = _bar(cap.n_layers * cap.n_heads, "every head, block-wise")
    thumbs, _ = eh.all_heads(cap, progress=bar and (lambda *_: bar.update()))
    if bar:
        bar.close()
    red = bw.reduce_head(cap, layer, head)
    cells = red.values.shape[0]
    overview = lf.overview_figure(
        red,
        cap.tokens,
        f"layer {layer}, head {head}: {cap.n_tokens:,} tokens, max-pooled to {cells:,}²",
        ticks=8,
    )
    lf.sqrt_colours(overview.update_layout(height=720))  # as the app: faint weights beside a sink show
    caption = (
        f"{cap.n_tokens:,} tokens: every head max-pooled to a tile (a cell shows its strongest weight), and one "
        "head's overview, coloured by the square root of the weight (the hover and colour bar keep the weights); "
        "drag a box on it to zoom into its cells (double-click: back). As a live widget, the box also opens the "
        "tokens under it at full resolution below (at most 512 a side), as the app's Long inputs page does."
    )
    for notice in dict.fromkeys(cap.notices):
        print(f"note: {notice}")
    figures = Figures([lf.long_model_view(thumbs), overview], "", caption, zoom=_zoom(cap, layer, head, red))
    return View([figures], "long-input view")


def _zoom(cap, layer: int, head: int, red):
    """The live widget's zoom: a box drawn on the overview (cell positions) → the window of tokens
    under it at full resolution, cut to 512 a side from its top-left corner, as on the app's page."""
    from attention_atlas.viz_core import blockwise as bw
    from attention_atlas.viz_core import long_figures as lf

    def zoom(xs: list, ys: list) -> dict:
        (queries, keys), cut = bw.box_window(red, xs, ys)
        weights = bw.window(cap, layer, head, queries, keys)
        fig = lf.window_figure(weights, cap.tokens, queries[0], keys[0], lf.window_title(layer, head, queries, keys))
        note = f"The box was larger than {bw.MAX_WINDOW} tokens a side: its top-left corner is shown." if cut else ""
        return {"figure": pio.to_json(lf.sqrt_colours(fig), validate=False), "note": note}

    return zoom


def _bar(total: int, what: str):
    """A tqdm progress bar where tqdm is installed (transformers brings it), else None."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=what, leave=False)


def _value_weighted(adapter, text: str, record):
    from attention_atlas.models.adapters.value_norms import supports, value_norms, weighted

    if record.kind != "self" or not supports(adapter):
        raise NotebookError(
            f"{adapter.model_id}: value norms are read from BERT- and Llama-style self-attention only"
        )
    norms = value_norms(adapter, text)
    if norms.shape[-1] != record.weights.shape[-1]:
        raise NotebookError(f"value norms are read up to {adapter.max_tokens} tokens; this text has more")
    return replace(record, weights=weighted(record.weights, norms))
