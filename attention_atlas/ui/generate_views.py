"""The "Inside a prediction" page's Generate tab (``app_pages/prediction.py``): a causal LM continues
the page's text token by token on the page (``models.analysis.generate``: greedy, or sampled with a
temperature, top-p and a seed), and each new token's attention over everything before it is kept,
every layer and head. Pick a new token to see what it looked at: every layer's heads averaged, and
one layer's heads. The prompt and its continuation can become the page's text, so the logit lens
(and every other tab) reads them.

Stop: any click reruns the page, which ends the loop between two tokens; what was generated so far
is kept (the session holds the ``Generation`` itself, not a copy made at the end).
Widget keys start with ``gen_``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st

from attention_atlas.i18n import _, ngettext
from attention_atlas.ui import cached
from attention_atlas.ui.compare import pill_labels
from attention_atlas.ui.line_view import line_view_block
from attention_atlas.ui.live_heads import HINT, model_view_chart
from attention_atlas.ui.views import head_view_block
from attention_atlas.ui.widgets import chart, fact, plain
from attention_atlas.viz_core.export import record_frame
from attention_atlas.viz_core.figures import heatmap
from attention_atlas.viz_core.model_view import model_view
from attention_atlas.viz_core.record import AttentionRecord
from attention_atlas.viz_core.tokens import clean_token
from attention_atlas.viz_core.wire import all_heads, record_id

K = "gen_"
MAX_NEW = 64  # new tokens a request may ask for: the attention kept grows as layers × heads × new × all
DEFAULT_NEW = 20


@dataclass(frozen=True)
class Request:
    key: str  # the model's cache key
    text: str
    max_new: int
    sampling: tuple[float, float, int] | None  # temperature, top-p, seed; None: greedy


def generate_tab(source: cached.Source, text: str, text_key: str) -> None:
    """Controls, the Generate and Stop buttons, then the continuation and its attention."""
    if not text.strip():
        st.info(_("Type a prompt for the model to continue."))
        return
    request = _controls(source.key, text)
    if st.button(_("Generate"), type="primary", key=K + "go"):
        _run(request, source)
    held = st.session_state.get(K + "held")
    if held is None or held[0] != request:
        st.info(_("Press **Generate**: the model continues the text above, one token at a time."))
        return
    gen = held[1]
    if not gen.new_ids:
        return
    result = gen.result()
    _show(result, text, text_key)
    _every_head(result, source.name)


def _controls(key: str, text: str) -> Request:
    c1, c2 = st.columns(2)
    max_new = c1.slider(_("new tokens at most"), 1, MAX_NEW, DEFAULT_NEW, key=K + "max")
    sampled = c2.toggle(
        _("sample"),
        key=K + "sample",
        help=_(
            "Draw each token at random from the model's probabilities, "
            "instead of taking the most likely one (greedy)."
        ),
    )
    sampling = None
    if sampled:
        c1, c2, c3 = st.columns(3)
        temperature = c1.slider(_("temperature"), 0.1, 2.0, 0.8, 0.1, key=K + "temperature")
        top_p = c2.slider(_("top-p"), 0.05, 1.0, 0.9, 0.05, key=K + "top_p")
        seed = int(c3.number_input(_("seed"), 0, 2**31 - 1, 0, key=K + "seed"))
        sampling = (temperature, top_p, seed)
    return Request(key, text, max_new, sampling)


def _run(request: Request, source: cached.Source) -> None:
    """Step the generation here, each new token shown as it comes; the session keeps it as it grows."""
    from attention_atlas.models.analysis.generate import Sampling, start

    try:
        source.ready()
        adapter = source.adapter
        sampling = Sampling(*request.sampling) if request.sampling else None
        gen = start(adapter, request.text, request.max_new, sampling)
    except ValueError as err:  # GenerateError, InputError: one line
        st.warning(plain(err))
        return
    except (OSError, RuntimeError) as err:  # missing weights or package
        st.error(_("{model} cannot run here: {error}", model=source.name, error=plain(err)))
        return
    st.session_state[K + "held"] = (request, gen)
    stop = st.empty()
    stop.button(_("Stop"), key=K + "stop", help=_("Stop between two tokens; what was generated is kept."))
    out, bar = st.empty(), st.progress(0.0)
    said = ""
    with cached.lane_for(request.key, request.text).turn():
        for token in gen:
            said += token.text
            out.code(said, language=None, wrap_lines=True)
            done = token.index + 1
            bar.progress(
                done / request.max_new,
                text=_("{done} of at most {n} new tokens", done=done, n=request.max_new),
            )
    for place in (stop, out, bar):
        place.empty()


def _show(result, text: str, text_key: str) -> None:
    new = len(result.ids) - result.prompt_len
    st.markdown(_("**The continuation** (the prompt is the text above)"))
    st.code(result.text, language=None, wrap_lines=True)  # as written: spaces and line breaks kept
    fact(
        _(
            "{new}; the prompt is {prompt}.",
            new=ngettext("{count:,} new token", "{count:,} new tokens", new, count=new),
            prompt=ngettext(
                "{count:,} token", "{count:,} tokens", result.prompt_len, count=result.prompt_len
            ),
        )
    )
    st.button(
        _("Use the prompt and its continuation as the text"),
        key=K + "use",
        on_click=lambda: st.session_state.update({text_key: text + result.text}),
        help=_("The other tabs then read the whole text, the continuation included."),
    )
    positions = list(range(new))
    labels = pill_labels(result.tokens[result.prompt_len :], positions)
    k = st.pills(_("new token (click one)"), positions, format_func=labels.get, key=K + "token", default=0)
    if k is None:
        st.info(_("Click a new token above to see what it looked at."))
        return
    _attention(result, k)


def _attention(result, k: int) -> None:
    """New token ``k``'s step: every layer (heads averaged), then one layer's heads, over the keys it saw."""
    seen = result.prompt_len + k  # the query at position seen - 1 read keys 0 … seen - 1
    keys = result.tokens[:seen]
    rows = result.attention[:, :, k, :seen]  # [layers, heads, keys]
    made = plain(clean_token(result.tokens[seen]))
    st.subheader(_("What produced “{made}”: the query at position {position}", made=made, position=seen - 1))
    layers = [_("layer {i}", i=i) for i in range(rows.shape[0])]
    _matrix(rows.mean(1), (layers, keys), _("every layer, heads averaged"), K + "layers", f"token{k}_layers")
    layer = st.slider(_("layer"), 0, rows.shape[0] - 1, rows.shape[0] - 1, key=K + "layer")
    heads = [_("head {h}", h=h) for h in range(rows.shape[1])]
    title = _("layer {layer}, each head", layer=layer)
    _matrix(rows[layer], (heads, keys), title, K + "heads", f"token{k}_layer{layer}")


def _matrix(m: np.ndarray, labels: tuple[list[str], list[str]], title: str, key: str, name: str) -> None:
    """``m`` ``[rows, keys]`` as a heatmap with its CSV (``name``: the file's name)."""
    rows, keys = labels
    fig = heatmap(m, rows, keys, title=title, x_title=_("earlier token (key)"), y_title="", label=_("weight"))
    frame = pd.DataFrame(m, index=rows, columns=[f"{i} · {t}" for i, t in enumerate(keys)])
    chart(fig, frame.rename_axis("row").reset_index(), key, f"generate_{name}")


@st.fragment
def _every_head(result, name: str) -> None:
    """Every new token's attention as the Transformer page shows a text's: the model view (a tile per
    head; a click opens it), the head view and the line view, the new tokens as queries over every
    token. A fragment: a click or another head reruns only this."""
    record = generation_record(result, name)
    L, H = record.n_layers, record.n_heads
    st.subheader(_("Every head: the new tokens' attention"))
    st.caption(_(HINT))
    layer_key, head_key = K + "every_layer", K + "every_head"
    rid = record_id(name, result.ids.tolist())
    csv = (lambda: record_frame(record), f"{name}_generated_every_head", _("every head"))
    model_view_chart(
        model_view(record), K + "all", (L, H), (layer_key, head_key), heads=all_heads(record, rid), csv=csv
    )
    c1, c2 = st.columns(2)
    layer = c1.slider(_("layer"), 0, L - 1, L - 1, key=layer_key)
    head = c2.selectbox(
        _("head"),
        [str(h) for h in range(H)] + ["average"],
        format_func=lambda h: _("average") if h == "average" else h,
        key=head_key,
    )
    head_view_block(
        record, K + "all", rid, layer, head, (K + "all_csv", f"{name}_generated_layer{layer}_{head}")
    )
    st.subheader(_("Line view"))
    line_view_block(record, layer, head, K + "line")


def generation_record(result, name: str) -> AttentionRecord:
    """The new tokens (queries) over every token (keys), ``[layers, heads, new, all]``."""
    tokens = [clean_token(t) for t in result.tokens]
    return AttentionRecord(result.attention, tokens[result.prompt_len :], tokens, "self", name)
