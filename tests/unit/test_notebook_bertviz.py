"""BertViz's calls behave as in BertViz (issue 41, items 1–4 and 9): what ``html_action="return"``
gives, where a view draws, ``display_mode`` and ``prettify_tokens``, layer numbers under
``include_layers``, and what an empty ``outputs[-1]`` is said to be.

Drawing is tested in a real IPython shell (``InteractiveShell``, what a Jupyter kernel runs cells
in), its display messages collected where the kernel would send them: ``display_pub`` (what a call
displays) and the displayhook (a cell's last value, ``Out[n]``). Weights are small random rows
(numpy), except for item 9, which runs minilm as transformers 5 does.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from attention_atlas.notebook import NotebookError, View, display, head_view, line_view, model_view, show

TOKENS = ["[CLS]", "Ġthe", "Ġcat", "##s", "▁sat", "</w>"]


def rows(*shape, seed=0) -> np.ndarray:
    weights = np.random.default_rng(seed).random(shape).astype(np.float32)
    return weights / weights.sum(-1, keepdims=True)


ATT = rows(6, 2, len(TOKENS), len(TOKENS))  # 6 layers × 2 heads


def spec_of(html: str) -> dict:
    """The data a file or an HTML output carries (the JSON its script reads)."""
    found = re.search(r'<script type="application/json" id="[^"]+-data">(.*?)</script>', html, re.S)
    return json.loads(found.group(1))


def head_figure(section: dict) -> dict:
    return json.loads(section["head"]["figure"])


# -- 1. html_action="return": an IPython HTML object, as BertViz returns ---------------------------


def test_html_action_return_gives_an_ipython_html_whose_data_is_the_file(tmp_path):
    """BertViz's README: ``html = head_view(..., html_action="return")`` then
    ``file.write(html.data)``; the file written so is the self-contained view."""
    from IPython.display import HTML

    for call in (head_view, model_view, line_view):
        html = call(ATT, TOKENS, html_action="return")
        assert isinstance(html, HTML), type(html)
        path = tmp_path / f"{call.__name__}.html"
        path.write_text(html.data, encoding="utf-8")
        text = path.read_text(encoding="utf-8")
        assert text.startswith("<!DOCTYPE html>") and "atlasNotebook(" in text
        assert spec_of(text)["sections"][0]["line" if call is line_view else "model"]
    view = head_view(ATT, TOKENS)  # "view": our own object, which saves
    assert isinstance(view, View) and view.save(tmp_path / "v.html").read_text().startswith("<!DOCTYPE html>")


# -- 2. a call draws where it is called, once ---------------------------------------------------------


@pytest.fixture
def ipython(tmp_path, monkeypatch):
    """A real IPython shell, its outputs collected: ``(run, drawn, echoed)``: ``run(code)`` runs a
    cell (raising its error), ``drawn`` what cells displayed, ``echoed`` their last values' output."""
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    monkeypatch.setenv("IPYTHONDIR", str(tmp_path))
    config = Config()
    config.HistoryManager.enabled = False
    shell = InteractiveShell.instance(config=config)
    drawn: list[dict] = []
    echoed: list[dict] = []
    monkeypatch.setattr(shell.display_pub, "publish", lambda data, metadata=None, **_: drawn.append(data))
    monkeypatch.setattr(shell.displayhook, "write_format_data", lambda data, md=None: echoed.append(data))
    shell.user_ns.update(att=ATT, tokens=TOKENS, head_view=head_view, model_view=model_view)

    def run(code: str):
        result = shell.run_cell(code, store_history=True)
        result.raise_error()
        return result.result

    try:
        yield run, drawn, echoed
    finally:
        InteractiveShell.clear_instance()


def views_in(outputs: list[dict]) -> int:
    return sum("atlasNotebook(" in out.get("text/html", "") for out in outputs)


@pytest.mark.parametrize(
    ("cell", "views"),
    [
        ("head_view(att, tokens)", 1),  # the cell's last line: drawn by the call, not echoed again
        ("head_view(att, tokens)\nprint('after')", 1),
        ("head_view(att, tokens);", 1),
        ("for layer in range(3):\n    head_view(att, tokens, layer=layer)", 3),
        ("model_view(att, tokens)\nhead_view(att, tokens)", 2),
        ("v = head_view(att, tokens)\nv", 1),  # the same view again in its cell: once
        ("from IPython.display import display\nv = head_view(att, tokens)\ndisplay(v)", 1),
    ],
)
def test_a_call_draws_where_it_is_called_once(ipython, cell, views):
    run, drawn, echoed = ipython
    run(cell)
    assert views_in(drawn) == views and views_in(echoed) == 0, (len(drawn), len(echoed))
    assert all(set(out) == {"text/html", "text/plain"} for out in drawn)


def test_a_view_shown_in_a_later_cell_draws_again_and_return_draws_nothing(ipython):
    run, drawn, echoed = ipython
    run("v = head_view(att, tokens)")
    run("v")
    assert views_in(drawn) == 2 and views_in(echoed) == 0
    run("html = head_view(att, tokens, html_action='return')")
    assert views_in(drawn) == 2  # BertViz's "return" draws nothing
    run("html")  # IPython's HTML object, echoed as any value is
    assert views_in(echoed) == 1


def test_a_live_widget_is_drawn_alone_without_the_html_beside_it(ipython):
    """In widget mode IPython sends the widget only: an HTML beside it would carry Plotly.js and
    every head."""
    run, drawn, _ = ipython
    try:
        display("widget")
        view = run("head_view(att, tokens, layer=2, heads=[0, 1])")
        assert len(drawn) == 1 and set(drawn[0]) == {"text/plain", "application/vnd.jupyter.widget-view+json"}
        assert drawn[0]["application/vnd.jupyter.widget-view+json"]["model_id"] == view.widget().model_id
    finally:
        display("auto")


def test_outside_ipython_a_call_draws_nothing_and_returns_its_view(capsys):
    view = model_view(ATT, TOKENS)
    assert isinstance(view, View) and capsys.readouterr().out == ""


# -- 3. display_mode and prettify_tokens -------------------------------------------------------------


def test_display_mode_gives_bertviz_palettes_and_none_follows_the_notebook():
    def palette(**kw):
        return spec_of(model_view(ATT, TOKENS, html_action="return", **kw).data)["palette"]

    assert palette(display_mode="dark") == {"background": "black", "color": "#ccc"}  # BertViz's dark
    assert palette(display_mode="light") == {"background": "white", "color": "black"}
    assert palette() is None  # not said: transparent, the notebook's own text colour
    assert spec_of(head_view(ATT, TOKENS, display_mode="light", html_action="return").data)["palette"]["color"] == "black"
    widget = model_view(ATT, TOKENS, display_mode="dark").widget()
    assert widget.spec["palette"] == {"background": "black", "color": "#ccc"}
    with pytest.raises(NotebookError, match=r"^display_mode is 'dark' or 'light', not 'blue'$"):
        model_view(ATT, TOKENS, display_mode="blue")
    with pytest.raises(NotebookError, match="display_mode"):
        head_view(ATT, TOKENS, display_mode=1)


def token_labels(section: dict) -> tuple[list[str], list[str], list[str]]:
    """The head view's key tick labels and query hover names, and the line view's query column."""
    fig = head_figure(section)
    return fig["layout"]["xaxis"]["ticktext"], fig["data"][0]["y"], section["line"]["queries"]


def test_prettify_tokens_false_keeps_them_as_the_tokenizer_wrote_them():
    section = spec_of(head_view(ATT, TOKENS, prettify_tokens=False, html_action="return").data)["sections"][0]
    ticks, hover, line = token_labels(section)
    assert ticks == ["[CLS]", "Ġthe", "Ġcat", "##s", "▁sat", "&lt;/w&gt;"]  # Plotly reads < as a tag: escaped
    assert hover[2] == "2 · Ġcat" and line == TOKENS


def test_prettify_tokens_true_cleans_as_bertviz_and_keeps_wordpiece_marks():
    """BertViz's format_special_chars: Ġ and ▁ become a space, </w> goes, ## stays."""
    cleaned = ["[CLS]", " the", " cat", "##s", " sat", ""]
    for view in (head_view(ATT, TOKENS, html_action="return"), model_view(ATT, TOKENS, html_action="return")):
        section = spec_of(view.data)["sections"][0]
        assert head_figure(section)["layout"]["xaxis"]["ticktext"] == cleaned
        assert head_figure(section)["data"][0]["x"][3] == "3 · ##s"
    assert token_labels(spec_of(head_view(ATT, TOKENS, html_action="return").data)["sections"][0])[2] == cleaned
    assert model_view(ATT, TOKENS).record.query_tokens == cleaned


# -- 4. the model's own layer numbers under include_layers -------------------------------------------


def test_layer_with_include_layers_is_the_models_own_number():
    view = head_view(ATT, TOKENS, include_layers=[4, 5], layer=5, html_action="return")
    section = spec_of(view.data)["sections"][0]
    assert head_figure(section)["layout"]["title"]["text"] == "layer 5, head 0"
    tiles = json.loads(section["model"]["figure"])["data"][1]
    assert tiles["text"] == ["4", "4", "5", "5"] and tiles["hovertext"] == ["0", "1", "0", "1"]
    assert "%{text}" in tiles["hovertemplate"] and "customdata[0]" not in tiles["hovertemplate"]
    assert section["model"]["heads"]["titles"] == ["layer 4, head 0", "layer 4, head 1", "layer 5, head 0", "layer 5, head 1"]
    line = head_view(ATT, TOKENS, include_layers=[4, 5], layer=4, heads=[1], html_action="return")
    links = spec_of(line.data)["sections"][0]["line"]["heads"][1]["links"]  # head 1 (a box per head)
    assert links and all(abs(w - ATT[4, 1, q, k]) < 1e-4 for q, k, w in links)  # layer 4's, not 5's
    with pytest.raises(NotebookError) as caught:
        head_view(ATT, TOKENS, include_layers=[4, 5], layer=1)
    message = str(caught.value)
    assert message.startswith("layer must be one of 4, 5") and "\n" not in message, message


def test_negative_include_layers_count_from_the_end_as_in_bertviz():
    view = model_view(ATT, TOKENS, include_layers=[-2, -1])
    np.testing.assert_array_equal(view.record.weights, ATT[[4, 5]])
    assert view.sections[0].labels[0] == [4, 5]
    assert head_view(ATT, TOKENS, include_layers=[-1], layer=-1).sections[0].layer == 0  # layer 5
    with pytest.raises(NotebookError, match=r"include_layers must be in 0–5"):
        model_view(ATT, TOKENS, include_layers=[-7])


# -- 9. outputs[-1] of a transformers-5 BertModel -------------------------------------------------


def test_an_empty_outputs_last_item_is_named_and_the_right_one_said():
    """With transformers 5 a BertModel run with output_attentions=True ends its outputs with the
    empty cross_attentions tuple; the message says so and what to pass."""
    import torch

    from tests.support import minilm_loaded

    minilm = minilm_loaded("The cat sat.")
    inputs = minilm["tokenizer"]("The cat sat.", return_tensors="pt")
    with torch.no_grad():
        outputs = minilm["eager"](**inputs, output_attentions=True)
    assert outputs[-1] == ()  # what a BertViz example passes as attention
    with pytest.raises(NotebookError) as caught:
        head_view(outputs[-1], minilm["tokens"])
    message = str(caught.value)
    assert "empty tuple" in message and "cross_attentions" in message and "outputs.attentions" in message
    assert "output_attentions=True" not in message and "\n" not in message
    assert head_view(outputs.attentions, minilm["tokens"]).record.n_layers == 6  # what it says to pass


def test_show_takes_display_mode_too():
    with pytest.raises(NotebookError, match="display_mode"):
        show(None, None, "text", display_mode="sepia")


def test_a_layer_out_of_range_is_said_as_a_reader_writes_it():
    """Issue 40, item 20: "layer must be in 0–1, not [7]" printed a Python list."""
    with pytest.raises(NotebookError) as refused:
        head_view(ATT, TOKENS, layer=7)
    assert str(refused.value).endswith(", not 7") and "[" not in str(refused.value)


def test_bertvizs_calls_open_at_layer_0():
    """Issue 41 item 5 (part): BertViz's views open at layer 0 unless layer= says (they opened at the
    middle layer, as the app's own show() still does)."""
    assert model_view(ATT, TOKENS).sections[0].layer == 0
    assert head_view(ATT, TOKENS).sections[0].layer == 0
    assert head_view(ATT, TOKENS, layer=4).sections[0].layer == 4


# -- 5. the head view: BertViz's layer selector, a colour box per head, the lines of every head -----

TWELVE = rows(4, 12, len(TOKENS), len(TOKENS), seed=1)  # 4 layers × 12 heads, as BERT's


def first(html) -> dict:
    """The first section's data of what ``html_action="return"`` gave."""
    return spec_of(html.data)["sections"][0]


def lines_of(section: dict) -> dict[int, set]:
    """Each head's links in a section's line view, ``head → {(query, key)}``."""
    return {h["head"]: {(q, k) for q, k, _ in h["links"]} for h in section["line"]["heads"]}


def links_above(weights: np.ndarray) -> set:
    q, k = np.nonzero(weights >= 0.01)
    return set(zip(q.tolist(), k.tolist(), strict=True))


def test_the_head_view_draws_that_layers_head_view_with_every_head_and_the_asked_ones_on():
    """``head_view(…, layer=2, heads=[0, 3])``: layer 2's lines of every head (a box each, each its
    own colour), heads 0 and 3 switched on, the tiles of layer 2 alone, head 0's matrix."""
    section = first(head_view(TWELVE, TOKENS, layer=2, heads=[0, 3], html_action="return"))
    assert section["select"] == {
        "label": "layer", "layers": ["0", "1", "2", "3"], "layer": 2, "on": [0, 3], "threshold": 0.01, "row": True,
    }  # fmt: skip
    assert lines_of(section) == {h: links_above(TWELVE[2, h]) for h in range(12)}
    assert len({h["colour"] for h in section["line"]["heads"]}) == 12
    tiles = json.loads(section["model"]["figure"])
    tq = tiles["layout"]["meta"]["tile"][0]
    assert tiles["layout"]["yaxis"]["range"] == [2 * (tq + 1) + tq - 0.5, 2 * (tq + 1) - 0.5]  # layer 2's row
    whole = json.loads(first(head_view(TWELVE, TOKENS, html_action="return"))["model"]["figure"])
    assert tiles["layout"]["height"] < whole["layout"]["height"] / 2
    assert head_figure(section)["layout"]["title"]["text"] == "layer 2, head 0"


def test_without_layer_the_head_view_opens_layer_0_with_every_head_on_over_the_whole_grid():
    section = first(head_view(TWELVE, TOKENS, html_action="return"))
    assert section["select"]["layer"] == 0 and section["select"]["on"] == list(range(12))
    assert not section["select"]["row"]
    assert lines_of(section) == {h: links_above(TWELVE[0, h]) for h in range(12)}
    assert first(model_view(TWELVE, TOKENS, html_action="return")).get("select") is None


def test_the_head_views_layers_are_the_models_own_numbers_under_include_layers():
    section = first(head_view(ATT, TOKENS, include_layers=[3, 5], layer=5, html_action="return"))
    assert section["select"]["layers"] == ["3", "5"] and section["select"]["layer"] == 1
    assert lines_of(section) == {h: links_above(ATT[5, h]) for h in range(2)}


def test_the_widget_sends_the_lines_of_a_layer_the_head_view_opens():
    """The live head view carries its opening layer's lines; another layer's come from the kernel."""
    view = head_view(TWELVE, TOKENS, layer=2, heads=[0, 3])
    widget = view.widget()
    sent: list[dict] = []
    widget.send = lambda content, buffers=None: sent.append(content)
    widget._answer(widget, {"lines": {"section": 0, "layer": 3}}, [])
    reply = sent[-1]["lines"]
    assert (reply["section"], reply["layer"]) == (0, 3)
    assert lines_of({"line": reply["data"]}) == {h: links_above(TWELVE[3, h]) for h in range(12)}
    assert reply["data"]["queries"] == view.record.query_tokens  # as BertViz's prettify_tokens cleans them
    for bad, says in [
        ({"section": 0, "layer": 4}, "outside this view's 4 layers"),
        ({"section": 1, "layer": 0}, "no line view 1"),
        ({"section": 0, "layer": "1"}, "two whole numbers"),
    ]:
        widget._answer(widget, {"lines": bad}, [])
        assert says in sent[-1]["error"] and "\n" not in sent[-1]["error"]
