"""Atlas in the notebook (issue 25): BertViz's calls and ``show()`` draw the model's own numbers.

The weights a view carries are compared with transformers' ``outputs.attentions`` of an eager run
of the same model (minilm from its package, a tiny random GPT-2 built from its config); ``show()``
runs a model loaded with SDPA (which returns no weights) and must give the eager ones. The HTML
is read back: the 16-bit heads it carries decode to the same weights at display precision, and
no tag in it points at the network. Bad input is one line. Nothing is mocked.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
from html.parser import HTMLParser

import numpy as np
import pytest
import torch

from attention_atlas.models.adapters.minilm import model_folder
from attention_atlas.notebook import NotebookError, View, head_view, line_view, model_view, show
from attention_atlas.notebook.assets import plotly_js
from attention_atlas.viz_core.derive import ViewOptions
from tests.support import minilm_loaded, z_of

TEXT = "The cat sat on the mat because it was tired."
TOL = 1e-5


@pytest.fixture(scope="module")
def minilm():
    return minilm_loaded(TEXT)


def gpt2(implementation: str, vocab: int = 30522):
    """A tiny random GPT-2 (3 layers × 4 heads, seeded) with ``implementation`` as its attention."""
    from transformers import AutoModelForCausalLM, GPT2Config

    config = GPT2Config(
        vocab_size=vocab, n_embd=32, n_layer=3, n_head=4, n_positions=64, initializer_range=0.5
    )
    torch.manual_seed(0)
    return AutoModelForCausalLM.from_config(config, attn_implementation=implementation).eval()


def stacked(attentions) -> np.ndarray:
    return torch.cat([a.float() for a in attentions]).numpy()


# -- the weights a view carries -------------------------------------------------------------------


def unpack16(codes: np.ndarray) -> np.ndarray:
    """``viz_core.wire.pack16`` backwards, written here from its docstring (as ui/live_heads.js does)."""
    c = codes.astype(np.uint32)
    bits = np.where(c == 0, 0, (((c >> 10) + 64) << 23) | ((c & 1023) << 13)).astype(np.uint32)
    return bits.view(np.float32)


def carried(html: str) -> list[dict]:
    """The sections' data a file carries (the JSON its script reads)."""
    found = re.search(r'<script type="application/json" id="[^"]+-data">(.*?)</script>', html, re.S)
    return json.loads(found.group(1))["sections"]


def test_model_view_carries_outputs_attentions_of_minilm(minilm):
    expected = stacked(minilm["attentions"])
    view = model_view(minilm["attentions"], minilm["tokens"])
    assert isinstance(view, View)
    np.testing.assert_allclose(view.record.weights, expected, atol=TOL, rtol=0)
    assert view.record.query_tokens == minilm["tokens"]
    heads = carried(view.to_html())[0]["model"]["heads"]
    assert heads["shape"] == list(expected.shape)
    decoded = unpack16(np.frombuffer(base64.b64decode(heads["weights"]), dtype="<u2")).reshape(expected.shape)
    np.testing.assert_allclose(decoded, expected, rtol=2**-10, atol=2**-62)  # 10 mantissa bits, as drawn


def test_model_view_of_a_tiny_gpt2_and_of_an_array():
    model = gpt2("eager", vocab=64)
    ids = torch.tensor([[5, 17, 3, 40, 22, 9, 61, 12, 30, 7, 44]])
    with torch.no_grad():
        out = model(input_ids=ids, output_attentions=True)
    tokens = [f"t{i}" for i in ids[0].tolist()]
    expected = stacked(out.attentions)
    for attention in (out.attentions, expected, torch.from_numpy(expected)):
        view = model_view(attention, tokens)
        np.testing.assert_allclose(view.record.weights, expected, atol=TOL, rtol=0)
    assert np.all(view.record.weights[:, :, 0, 1:] == 0)  # causal: the first token sees only itself


def test_bf16_attention_is_taken_and_its_rows_rescaled(minilm):
    low = tuple(a.to(torch.bfloat16) for a in minilm["attentions"])
    view = model_view(low, minilm["tokens"])
    np.testing.assert_allclose(view.record.weights.sum(-1), 1, atol=1e-5)
    np.testing.assert_allclose(view.record.weights, stacked(minilm["attentions"]), atol=1e-2)


def test_include_layers_and_heads_pick_those_and_keep_their_numbers(minilm):
    expected = stacked(minilm["attentions"])[[1, 4]][:, [0, 7, 11]]
    view = model_view(minilm["attentions"], minilm["tokens"], include_layers=[1, 4], include_heads=[0, 7, 11])
    np.testing.assert_array_equal(view.record.weights, expected)
    model = carried(view.to_html())[0]["model"]
    assert model["heads"]["titles"][:3] == ["layer 1, head 0", "layer 1, head 7", "layer 1, head 11"]
    assert json.loads(model["figure"])["layout"]["xaxis"]["ticktext"] == ["0", "7", "11"]


def test_head_and_line_views_carry_the_layer_and_heads_asked_for(minilm):
    html = head_view(minilm["attentions"], minilm["tokens"], layer=2, heads=[3, 5], html_action="return")
    section = carried(html.data)[0]
    assert [h["head"] for h in section["line"]["heads"]] == list(range(12))  # a colour box each
    assert section["select"]["on"] == [3, 5] and section["select"]["layer"] == 2
    weights = stacked(minilm["attentions"])[2, 3]
    links = section["line"]["heads"][3]["links"]
    assert links and all(abs(w - weights[q, k]) < 1e-4 for q, k, w in links)
    assert section["head"]["shown"].endswith("|2|3")
    only = carried(line_view(minilm["attentions"], minilm["tokens"], layer=1, heads=0).to_html())[0]
    assert "model" not in only and [h["head"] for h in only["line"]["heads"]] == [0]


def test_sentence_b_start_divides_the_head_view_into_sentences(minilm):
    """BertViz's sentence_b_start: dotted lines half a cell before it across both axes of the head
    view (the redrawn heads keep them: they are the layout's); none without it."""
    start = len(minilm["tokens"]) // 2
    split = carried(head_view(minilm["attentions"], minilm["tokens"], start, html_action="return").data)[0]
    shapes = json.loads(split["head"]["figure"])["layout"]["shapes"]
    assert sorted((s.get("x0"), s.get("y0")) for s in shapes) == [(0, start - 0.5), (start - 0.5, 0)]
    whole = carried(model_view(minilm["attentions"], minilm["tokens"], html_action="return").data)[0]
    assert not json.loads(whole["head"]["figure"])["layout"].get("shapes")


def test_encoder_decoder_keywords_give_three_records():
    rng = np.random.default_rng(0)

    def rows(*shape):
        w = rng.random(shape).astype(np.float32)
        return w / w.sum(-1, keepdims=True)

    enc, dec = ["a", "b", "c"], ["x", "y"]
    view = model_view(
        encoder_attention=rows(2, 3, 3, 3),
        decoder_attention=rows(2, 3, 2, 2),
        cross_attention=rows(2, 3, 2, 3),
        encoder_tokens=enc,
        decoder_tokens=dec,
    )
    kinds = [(s.record.kind, s.record.query_tokens, s.record.key_tokens) for s in view.sections]
    assert kinds == [("encoder_self", enc, enc), ("decoder_self", dec, dec), ("cross", dec, enc)]
    assert len(carried(view.to_html())) == 3


# -- show(): the notebook's own model, whatever its attention implementation ------------------------


def test_show_on_an_sdpa_minilm_equals_its_eager_weights(minilm):
    view = show(minilm["sdpa"], minilm["tokenizer"], TEXT)
    np.testing.assert_allclose(view.record.weights, stacked(minilm["attentions"]), atol=TOL, rtol=0)
    assert view.record.query_tokens == minilm["tokens"]


def test_show_on_an_sdpa_gpt2_equals_its_eager_weights(minilm):
    tokenizer = minilm["tokenizer"]  # any tokenizer with ids inside the vocabulary
    ids = tokenizer(TEXT, return_tensors="pt")["input_ids"][:, :-1]  # a causal LM's text: no [SEP] appended
    with torch.no_grad():
        out = gpt2("eager")(input_ids=ids, output_attentions=True)
    view = show(gpt2("sdpa"), tokenizer, TEXT)
    np.testing.assert_allclose(view.record.weights, stacked(out.attentions), atol=TOL, rtol=0)
    assert np.all(view.record.weights[:, :, 0, 1:] == 0)


def test_show_on_an_sdpa_encoder_decoder_equals_its_eager_weights(minilm):
    """What the capture refuses (an encoder–decoder) runs an eager twin: all three records equal an
    eager copy's ``outputs.*_attentions`` for the same input and the decoder ids ``show()`` generated."""
    from transformers import AutoModelForSeq2SeqLM, BartConfig

    tokenizer = minilm["tokenizer"]
    sizes = dict(encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32)
    config = BartConfig(
        vocab_size=tokenizer.vocab_size,
        d_model=16,
        encoder_layers=2,
        decoder_layers=3,
        max_position_embeddings=64,
        pad_token_id=0,
        bos_token_id=101,
        eos_token_id=102,
        decoder_start_token_id=101,
        **sizes,
    )

    def bart(implementation):
        torch.manual_seed(0)
        return AutoModelForSeq2SeqLM.from_config(config, attn_implementation=implementation).eval()

    view = show(bart("sdpa"), tokenizer, TEXT)
    encoder, decoder, cross = (s.record for s in view.sections)
    assert (encoder.kind, decoder.kind, cross.kind) == ("encoder_self", "decoder_self", "cross")
    ids = tokenizer(TEXT, return_tensors="pt")["input_ids"]
    decoder_ids = torch.tensor([tokenizer.convert_tokens_to_ids(decoder.query_tokens)])
    with torch.no_grad():
        out = bart("eager")(input_ids=ids, decoder_input_ids=decoder_ids, output_attentions=True)
    for record, expected in (
        (encoder, out.encoder_attentions),
        (decoder, out.decoder_attentions),
        (cross, out.cross_attentions),
    ):
        np.testing.assert_allclose(record.weights, stacked(expected), atol=TOL, rtol=0)


def test_show_merges_and_hides_as_the_app_does(minilm):
    from attention_atlas.models.adapters.hf import HFAdapter

    app = HFAdapter("minilm", model_folder(), torch.device("cpu")).run(TEXT).records["self"]
    options = ViewOptions(merge=True, hide=True)
    expected = options.apply(app)
    view = show(minilm["sdpa"], minilm["tokenizer"], TEXT, merge=True, hide_special=True)
    assert view.record.query_tokens == expected.query_tokens and "[CLS]" not in expected.query_tokens
    np.testing.assert_allclose(view.record.weights, expected.weights, atol=TOL, rtol=0)


def test_show_weights_by_value_norms_as_the_app_does(minilm):
    from dataclasses import replace

    from attention_atlas.models.adapters.hf import HFAdapter
    from attention_atlas.models.adapters.value_norms import value_norms, weighted

    app = HFAdapter("minilm", model_folder(), torch.device("cpu"))
    record = app.run(TEXT).records["self"]
    expected = replace(record, weights=weighted(record.weights, value_norms(app, TEXT)))
    view = show(minilm["sdpa"], minilm["tokenizer"], TEXT, view="head", value_norms=True)
    np.testing.assert_allclose(view.record.weights, expected.weights, atol=TOL, rtol=0)
    assert not np.allclose(view.record.weights, record.weights, atol=1e-3)


# -- the file: nothing fetched ----------------------------------------------------------------------


class Links(HTMLParser):
    """Every src and href of a tag (script text is not parsed as tags)."""

    def __init__(self):
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.found += [value for name, value in attrs if name in ("src", "href") and value]


def test_the_file_points_at_nothing_on_the_network(minilm, tmp_path):
    html = model_view(minilm["attentions"], minilm["tokens"]).save(tmp_path / "v.html").read_text()
    parser = Links()
    parser.feed(html)
    assert not [link for link in parser.found if re.match(r"\s*(https?:)?//", link)], parser.found
    assert html.count("<script") == 5  # the data, the scripts' text, Plotly's guard, Plotly, the driver
    assert not re.search(r"""<script[^>]*\bsrc=""", html)
    assert not re.search(r"""(import\(|require\()\s*["'](https?:)?//""", html)


def test_the_network_check_sees_a_cdn_script():
    """The check above can fail: a page with BertViz's kind of script tag is caught."""
    parser = Links()
    parser.feed(
        '<script src="https://cdnjs.cloudflare.com/ajax/libs/require.js/2.3.6/require.min.js"></script>'
    )
    assert parser.found == ["https://cdnjs.cloudflare.com/ajax/libs/require.js/2.3.6/require.min.js"]


# -- bad input: one line ------------------------------------------------------------------------------


def bad_inputs(minilm):
    att, tokens = minilm["attentions"], minilm["tokens"]
    nan = stacked(att).copy()
    nan[1, 2, 3] = np.nan
    return [
        (lambda: model_view(att, tokens[:-1]), "13 positions but 12 tokens"),
        (lambda: model_view((), tokens), "empty"),
        (lambda: model_view(stacked(att)[0], tokens), "4 axes"),
        (lambda: model_view(nan, tokens), "finite"),
        (lambda: model_view(np.zeros((1, 1, 0, 0)), []), "empty"),
        (lambda: model_view(att, "the cat"), "list of token strings"),
        (lambda: model_view(tuple(torch.cat([a, a]) for a in att), tokens), "batch of 2"),
        (lambda: model_view(att, tokens, include_layers=[9]), "include_layers must be in 0–5"),
        (lambda: head_view(att, tokens, layer=6), "layer must be in 0–5"),
        (lambda: model_view(att, tokens, html_action="show"), "html_action"),
        (lambda: show(minilm["sdpa"], minilm["tokenizer"], TEXT, view="neuron"), "view is one of"),
        (lambda: show(minilm["sdpa"], minilm["tokenizer"], "   "), "the text is empty"),
        (lambda: model_view(), "no attention given"),
    ]


def test_bad_input_is_one_line(minilm):
    for call, words in bad_inputs(minilm):
        with pytest.raises(NotebookError) as caught:
            call()
        message = str(caught.value)
        assert words in message and "\n" not in message, message
        assert caught.value.__suppress_context__ or caught.value.__context__ is None  # no chained traceback


# -- the example notebook runs top to bottom --------------------------------------------------------


@pytest.mark.slow  # loads SmolLM2
def test_the_example_notebook_runs_top_to_bottom(tmp_path, monkeypatch):
    """Every code cell of examples/atlas_in_a_notebook.ipynb in order, in one namespace, as a kernel
    would; each cell that ends in a view gives its HTML (what Jupyter would display)."""
    import ast
    from pathlib import Path

    notebook = json.loads(Path("examples/atlas_in_a_notebook.ipynb").read_text(encoding="utf-8"))
    monkeypatch.chdir(tmp_path)
    space: dict = {}
    shown = []
    for cell in notebook["cells"]:
        if cell["cell_type"] != "code":
            continue
        tree = ast.parse("".join(cell["source"]))
        last = tree.body.pop() if isinstance(tree.body[-1], ast.Expr) else None
        exec(compile(tree, "cell", "exec"), space)
        if last is not None:
            value = eval(compile(ast.Expression(last.value), "cell", "eval"), space)
            if isinstance(value, View):
                shown.append(value._repr_mimebundle_()["text/html"])
    assert len(shown) == 6 and all("atlasNotebook(" in html for html in shown)
    assert (tmp_path / "minilm_model_view.html").stat().st_size > 1_000_000


def test_a_file_too_big_for_every_head_says_so(monkeypatch, minilm):
    from attention_atlas.notebook import page

    monkeypatch.setattr(page, "HEADS_BYTES", 1000)
    section = carried(model_view(minilm["attentions"], minilm["tokens"]).to_html())[0]
    assert section["model"]["heads"] is None and "over the file's" in section["note"]
    monkeypatch.undo()
    assert "note" not in carried(model_view(minilm["attentions"], minilm["tokens"]).to_html())[0]


@pytest.fixture(scope="module")
def long_text_model():
    """A tiny random Qwen2 with a 4,096-token context and minilm's WordPiece (one token a word)."""
    from transformers import AutoTokenizer

    from harness.tiny_variants import tiny_variant

    model = tiny_variant("qwen2_no_window", num_hidden_layers=2, max_position_embeddings=4096)
    tokenizer = AutoTokenizer.from_pretrained(model_folder(), model_max_length=4096)
    return model, tokenizer, " ".join(["the cat sat on the mat ."] * 300)  # 2,101 tokens: [CLS], no [SEP]


@pytest.mark.slow
def test_show_past_1024_tokens_draws_the_long_input_view(long_text_model, tmp_path, monkeypatch):
    """Past 1,024 tokens show() draws what the app's long-input page draws: every head's max-pooled
    tile and one head's overview, from the captured queries and keys (in mapped files)."""
    from attention_atlas.models.adapters import capture as cp
    from attention_atlas.notebook.run import adapter_of
    from attention_atlas.viz_core import blockwise as bw

    monkeypatch.setenv("ATLAS_CACHE", str(tmp_path))
    model, tokenizer, text = long_text_model
    section = carried(show(model, tokenizer, text, layer=1, heads=2).to_html())[0]
    tiles, overview = (json.loads(f) for f in section["figures"])
    cap = cp.capture(adapter_of(model, tokenizer), text)
    assert cap.n_tokens == 2101 and cap.mapped  # a causal LM reads no appended [SEP]
    red = bw.reduce_head(cap, 1, 2)
    np.testing.assert_allclose(z_of(overview["data"][0]).astype(float), red.values, rtol=2e-3, atol=1e-6)
    assert overview["layout"]["title"]["text"].startswith("layer 1, head 2: 2,101 tokens")
    assert len(tiles["data"]) >= 1 and "drag a box" in section["note"]
    with pytest.raises(NotebookError, match="long-input view alone"):
        show(model, tokenizer, text, view="head")


@pytest.mark.slow
def test_a_box_on_the_live_long_view_opens_its_tokens_at_full_resolution(long_text_model, tmp_path, monkeypatch):
    """The long-input view as a live widget: a box drawn over overview cells 20–25 (queries) ×
    10–12 (keys) gets those cells' tokens at full resolution; bad boxes get one line back."""
    from attention_atlas.models.adapters import capture as cp
    from attention_atlas.notebook.run import adapter_of
    from attention_atlas.viz_core import blockwise as bw

    monkeypatch.setenv("ATLAS_CACHE", str(tmp_path))
    model, tokenizer, text = long_text_model
    widget, sent = live_widget(show(model, tokenizer, text, layer=1, heads=2))
    assert widget.spec["sections"][0]["zoom"] == 1  # the overview, after the tiles
    widget._answer(widget, {"zoom": {"section": 0, "x": [9.6, 12.4], "y": [25.2, 19.8]}}, [])
    reply = sent[-1]["window"]
    cap = cp.capture(adapter_of(model, tokenizer), text)
    red = bw.reduce_head(cap, 1, 2)
    queries = (int(red.row_edges[20]), int(red.row_edges[26]))
    keys = (int(red.col_edges[10]), int(red.col_edges[13]))
    fig = json.loads(reply["figure"])
    assert fig["layout"]["title"]["text"].startswith(
        f"layer 1, head 2: queries {queries[0]:,}–{queries[1] - 1:,} × keys {keys[0]:,}–{keys[1] - 1:,}"
    )
    z = np.array(fig["data"][0]["z"]) if isinstance(fig["data"][0]["z"], list) else z_of(fig["data"][0])
    assert z.shape == (queries[1] - queries[0], keys[1] - keys[0]) and reply["note"] == ""
    np.testing.assert_allclose(z, bw.window(cap, 1, 2, queries, keys), rtol=1e-6, atol=1e-7)
    widget._answer(widget, {"zoom": {"section": 0, "x": [0, 1e9], "y": [0, 1e9]}}, [])
    assert "top-left corner" in sent[-1]["window"]["note"]  # cut to 512 a side
    for box in ({"section": 0, "x": [1, "a"], "y": [0, 1]}, {"section": 0, "x": [1], "y": [0, 1]},
                {"section": 3, "x": [0, 1], "y": [0, 1]}, {"section": 0, "x": [0, float("nan")], "y": [0, 1]}):
        widget._answer(widget, {"zoom": box}, [])
        assert set(sent[-1]) == {"error"} and "\n" not in sent[-1]["error"]


# -- the live widget (anywidget): the kernel sends each head a click opens ------------------------


def live_widget(view: View):
    """The view's widget, with what it sends to the front end collected instead of sent."""
    widget = view.widget()
    sent: list[dict] = []
    widget.send = lambda content, buffers=None: sent.append(content)
    return widget, sent


def test_the_widget_carries_the_tiles_and_sends_each_picked_head_as_the_model_computed_it(minilm):
    weights = torch.cat(minilm["attentions"]).numpy()
    view = model_view(minilm["attentions"], minilm["tokens"])
    widget, sent = live_widget(view)
    section = widget.spec["sections"][0]
    assert section["model"]["heads"] is None  # every head's weights stay in the kernel
    assert "figure" not in section["head"] and len(section["head"]["open"]) == 2  # the page asks for it
    assert len(json.dumps(widget.spec)) < len(view.to_html()) / 10
    for layer, head in [(0, 0), (3, 7), (5, 11)]:
        widget._answer(widget, {"pick": {"section": 0, "layer": layer, "head": head}}, [])
        reply = sent[-1]["head"]
        fig = json.loads(reply["figure"])
        assert fig["layout"]["title"]["text"] == f"layer {layer}, head {head}"
        assert reply["shown"].endswith(f"|{layer}|{head}") and reply["section"] == 0
        np.testing.assert_allclose(z_of(fig["data"][0]), weights[layer, head], rtol=2**-10, atol=1e-6)
    plotly = gzip.decompress(widget.plotly.source).decode()  # Plotly.js, a model of its own, gzipped
    assert plotly == plotly_js() and len(widget.plotly.source) < len(plotly) / 3
    assert view.widget() is widget  # made once
    assert model_view(minilm["attentions"], minilm["tokens"]).widget().plotly is widget.plotly  # one a kernel


def test_a_subset_widget_titles_heads_by_the_models_own_numbers(minilm):
    view = model_view(minilm["attentions"], minilm["tokens"], include_layers=[1, 4], include_heads=[2, 9])
    widget, sent = live_widget(view)
    widget._answer(widget, {"pick": {"section": 0, "layer": 1, "head": 1}}, [])
    assert json.loads(sent[-1]["head"]["figure"])["layout"]["title"]["text"] == "layer 4, head 9"


@pytest.mark.parametrize(
    ("message", "says"),
    [
        ({"pick": {"section": 0, "layer": 6, "head": 0}}, "outside this view's 6 × 12 heads"),
        ({"pick": {"section": 0, "layer": -1, "head": 0}}, "outside"),
        ({"pick": {"section": 3, "layer": 0, "head": 0}}, "no model view 3"),
        ({"pick": {"section": 0, "layer": "0", "head": 0}}, "three whole numbers"),
        ({"pick": {"section": 0, "layer": True, "head": 0}}, "three whole numbers"),
        ({"pick": {}}, "three whole numbers"),
    ],
)
def test_a_malformed_pick_gets_one_line_back(minilm, message, says):
    widget, sent = live_widget(model_view(minilm["attentions"], minilm["tokens"]))
    widget._answer(widget, message, [])
    assert says in sent[-1]["error"] and "\n" not in sent[-1]["error"]


def test_messages_the_widget_does_not_know_are_ignored(minilm):
    widget, sent = live_widget(model_view(minilm["attentions"], minilm["tokens"]))
    for message in (["pick"], "plotly", {"need": "weights"}, {"pick": "0,0"}):
        widget._answer(widget, message, [])
    assert sent == []


def test_display_chooses_widget_or_html(minilm):
    """What a view shows as: the widget alone, or the HTML (what IPython sends of each:
    ``test_notebook_bertviz``)."""
    from attention_atlas.notebook import display
    from attention_atlas.notebook.page import live

    view = head_view(minilm["attentions"], minilm["tokens"], layer=2, heads=[0, 3])
    assert not live()  # no kernel here: auto means HTML
    assert "text/html" in view._repr_mimebundle_()
    try:
        display("widget")
        bundle, _ = view._repr_mimebundle_()
        assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == view.widget().model_id
        assert "text/html" not in bundle
        assert view.widget().spec["sections"][0]["line"]["heads"]  # the line view rides along
    finally:
        display("auto")
    with pytest.raises(ValueError, match="one of auto, widget, html"):
        display("svg")


def test_a_view_in_chinese_and_an_unknown_language_in_one_line():
    weights = np.full((2, 3, 4, 4), 0.25, dtype=np.float32)
    tokens = ["两", "个", "黄", "鹂"]
    assert model_view(weights, tokens).lang == "en"
    view = model_view(weights, tokens, lang="zh-CN")
    assert view.lang == "zh" and head_view(weights, tokens, lang="zh").lang == "zh"
    with pytest.raises(NotebookError, match=r"^lang must be one of en, zh, not 'fr'$"):
        line_view(weights, tokens, lang="fr")
