"""The Transformer heads page under AppTest: default view, options, other models, bad input."""

import json

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from tests.support import PACKAGE, charts, page_runner

PAGE = "app_pages/transformer.py"


run = page_runner(PAGE, 300)
STATS, FLOW = "Head statistics", "Rollout & flow"


def opened(tab: str) -> AppTest:
    """The page with tab ``tab`` open, as a link opens it: every tab but the first draws only when open."""
    at = AppTest.from_file(PACKAGE / PAGE, default_timeout=300)
    at.query_params["tab"] = tab
    return run(at)


def components(at: AppTest) -> list[dict]:
    return [json.loads(c.proto.json) for c in at.get("bidi_component")]


def live_data(at: AppTest) -> list[dict]:
    """The model view's and the head view's data (``ui/live_heads``), in that order."""
    return [c for c in components(at) if "role" in c]


def line_data(at: AppTest) -> dict:
    """The line view's data (``ui/line_view``)."""
    return next(c for c in components(at) if "queries" in c)


@pytest.fixture(scope="module")
def first_load():
    return run()


def test_first_load_shows_model_view_and_head_view(first_load):
    figs = charts(first_load)
    model_view = figs[0]
    assert [t["type"] for t in model_view["data"]] == ["heatmap", "scatter"]
    assert len(model_view["data"][1]["customdata"]["shape"].split(",")) == 2 or model_view["data"][1]["x"]
    head = figs[1]
    assert "layer 3, head 0" in head["layout"]["title"]["text"]
    assert "[CLS]" in head["data"][0]["x"][0]


def test_first_load_builds_no_figure_of_a_closed_tab(first_load):
    """Statistics, rollout and positions are drawn when their tab opens, not on every rerun."""
    titles = [str(f["layout"].get("title", {}).get("text", "")) for f in charts(first_load)]
    assert not first_load.dataframe and not any("rollout" in t or "offset" in t for t in titles)


def test_statistics_tab_lists_every_head():
    table = opened(STATS).dataframe[0].value
    assert len(table) == 6 * 12 and set(table["pattern"]) <= {
        "previous token",
        "diagonal",
        "first token / sink",
        "broad",
        "mixed",
    }


def test_changing_head_rerenders_without_rerunning_the_model(first_load):
    at = first_load
    at.selectbox(key="tf_head").set_value("5").run()
    assert not at.exception
    assert "layer 3, head 5" in charts(at)[1]["layout"]["title"]["text"]
    model, head = live_data(at)
    assert model["heads"]["shape"][:2] == [6, 12] and head["single"]  # the browser can redraw any head
    at.selectbox(key="tf_head").set_value("all side by side").run()
    assert len(charts(at)[1]["data"]) == 12
    assert not live_data(at)[1]["single"]  # twelve panels: a click waits for Python's figure


def test_merge_and_hide_special_tokens(first_load):
    at = first_load
    at.text_input(key="tf_text").set_value("Tokenization is unbelievably subtle").run()
    pieces = charts(at)[1]["data"][0]["x"]
    at.toggle(key="tf_merge").set_value(True)
    at.toggle(key="tf_hide").set_value(True).run()
    assert not at.exception
    merged = charts(at)[1]["data"][0]["x"]
    assert len(merged) < len(pieces) and not any("[CLS]" in label for label in merged)
    assert any(label.endswith("tokenization") for label in merged)


def test_empty_text_prompts_instead_of_failing():
    at = run()
    at.text_input(key="tf_text").set_value("   ").run()
    assert not at.exception and any("Type a sentence" in i.value for i in at.info)


def test_html_and_odd_scripts_are_plain_labels():
    at = run()
    at.text_input(key="tf_text").set_value('<img src=x onerror="alert(1)"> مرحبا 😀\x07 风').run()
    assert not at.exception
    labels = charts(at)[1]["data"][0]["x"]
    assert any("&lt;" in label for label in labels)  # shown as "<" by Plotly, never read as markup
    assert not any("<" in label for label in labels)


@pytest.mark.slow
def test_smollm2_shows_induction_heads():
    at = opened(STATS)
    at.selectbox(key="tf_model").set_value("smollm2").run()
    assert not at.exception
    assert any("Strongest: layer" in c.value for c in at.caption)
    assert charts(at)[0]["data"][1]["x"]  # 30 × 9 tiles


def test_couplet_transformer_shows_three_kinds_of_attention():
    """By readable names (issue 40, item 15: the radio showed the ids ``encoder_self``, …); the ids
    stay the values, in the URL too."""
    from attention_atlas.i18n import language

    at = opened(FLOW)
    at.selectbox(key="tf_model").set_value("couplet-transformer").run()
    assert not at.exception
    radio = at.radio(key="tf_kind")
    assert radio.options == ["encoder self-attention", "decoder self-attention", "cross-attention"]
    assert radio.value == "encoder_self"
    with language("zh"):
        assert [radio.format_func(k) for k in ("encoder_self", "decoder_self", "cross")] == [
            "编码器自注意力",
            "解码器自注意力",
            "交叉注意力",
        ]
    radio.set_value("cross").run()
    assert not at.exception and any("follow one stream of tokens" in i.value for i in at.info)
    assert at.radio(key="tf_kind").value == "cross" and at.query_params["kind"] == "cross"


def test_exact_flow_on_request_for_a_short_input():
    at = opened(FLOW)
    n_before = len(charts(at))
    at.toggle(key="tf_flow").set_value(True).run()
    assert not at.exception
    titles = [f["layout"].get("title", {}).get("text", "") for f in charts(at)]
    assert len(titles) == n_before + 1 and any("attention flow" in t for t in titles)


def test_line_view_draws_the_open_head_and_overlays_others():
    at = run()
    at.text_input(key="tf_text").set_value("The cat sat on the mat.").run()
    at.selectbox(key="tf_head").set_value("2").run()
    data = line_data(at)
    from attention_atlas.models.registry import load

    record = load("minilm").run("The cat sat on the mat.").records["self"]
    weights = record.head(3, 2)
    assert data["queries"][0] == "[CLS]" and len(data["keys"]) == weights.shape[1]
    (only,) = data["heads"]
    assert only["head"] == 2
    assert len(only["links"]) == int((weights >= 0.01).sum())  # every visible weight, nothing else
    for q, k, w in only["links"]:
        assert abs(w - weights[q, k]) < 1e-3
    at.multiselect(key="tf_line_heads").set_value([7, 2]).run()
    assert [h["head"] for h in line_data(at)["heads"]] == [2, 7]  # the open head first, no repeat
    assert len({h["colour"] for h in line_data(at)["heads"]}) == 2
    at.selectbox(key="tf_head").set_value("average").run()
    assert [h["head"] for h in line_data(at)["heads"]] == [7, 2]


def test_value_norm_weighting_changes_every_view_to_alpha_times_value_norms():
    from attention_atlas.models.adapters.value_norms import value_norms, weighted
    from attention_atlas.models.registry import load
    from tests.support import z_of

    at = opened(FLOW)
    text = at.text_input(key="tf_text").value
    raw = z_of(charts(at)[1]["data"][0])
    at.toggle(key="tf_value_norms").set_value(True).run()
    assert not at.exception
    adapter = load("minilm")
    expected = weighted(adapter.run(text).records["self"].weights, value_norms(adapter, text))[3, 0]
    shown = z_of(charts(at)[1]["data"][0])
    assert np.allclose(shown, expected, atol=2e-3) and not np.allclose(shown, raw, atol=2e-3)
    assert any("‖α f(x)‖" in c.value for c in at.caption)
    rollout = next(f for f in charts(at) if "rollout" in str(f["layout"].get("title", {}).get("text", "")))
    from attention_atlas.viz_core.stats import rollout as roll

    assert np.allclose(
        z_of(rollout["data"][0]),
        roll(weighted(adapter.run(text).records["self"].weights, value_norms(adapter, text))),
        atol=2e-3,
    )
    at.selectbox(key="tf_model").set_value("couplet-transformer").run()
    assert not at.exception
    assert all(t.key != "tf_value_norms" for t in at.toggle)  # not offered where values cannot be read


@pytest.mark.slow  # loads the bundled couplet Transformer
def test_switching_the_model_keeps_the_typed_text_and_swaps_untouched_examples():
    from attention_atlas.models.registry import info

    def box(at: AppTest):  # by its label: the key was per model before
        return next(t for t in at.text_input if t.label == "text")

    at = run()
    assert box(at).value == info("minilm").example
    at.selectbox(key="tf_model").set_value("couplet-transformer")
    at = run(at)
    assert box(at).value == info("couplet-transformer").example  # not typed: the examples swap
    box(at).set_value("春风又绿江南岸")
    at = run(at)
    at.selectbox(key="tf_model").set_value("minilm")
    at = run(at)
    assert box(at).value == "春风又绿江南岸"  # typed: kept
    at.selectbox(key="tf_model").set_value("couplet-transformer")
    at = run(at)
    assert box(at).value == "春风又绿江南岸"


def test_the_page_in_chinese():
    """The page in Chinese (issue 37): titles, tabs, captions, the figures and the browser's views in
    Chinese; the tab in the URL by its English label; the neuron view drawn for a clicked query."""
    import attention_atlas.ui.language  # noqa: F401  (the session's language, as the app reads it)
    from attention_atlas.i18n import language

    at = AppTest.from_file(PACKAGE / PAGE, default_timeout=300)
    at.session_state["lang"] = "zh"
    at.query_params["tab"] = "Neuron view"
    with language("zh"):  # AppTest applies format_func=_ here too, outside the script run
        at = run(at)
    assert at.title[0].value == "🧠 Transformer 的注意力头"
    assert [t.label for t in at.tabs][:3] == ["注意力头", "头的统计", "展开与流"]
    assert "模型视图：6 层 × 12 个头" in [s.value for s in at.subheader]
    assert at.query_params["tab"] == "Neuron view" and at.session_state["tf_tab"] == "神经元视图"
    model = charts(at)[0]  # the view the English tests above cached: its words are this run's
    axes = model["layout"]["xaxis"]["title"]["text"], model["layout"]["yaxis"]["title"]["text"]
    assert axes == ("头", "层")
    assert "个头<br>点击打开" in model["data"][1]["hovertemplate"]
    assert live_data(at)[0]["notes"]["drawing"] == "正在绘制图表…"
    assert [h["label"] for h in line_data(at)["heads"]] == ["头 0"]
    assert any("点击上方的一个查询词元" in i.value for i in at.info)
    pills = next(b for b in at.get("button_group") if b.key == "tf_neuron_query_self")
    pills.set_value(2)
    with language("zh"):  # AppTest applies format_func=_ here too, outside the script run
        at = run(at)
    assert any(s.value.startswith("第 0 层第 0 个头：查询 2") for s in at.subheader)
    neuron = charts(at)[-1]
    assert {"键 K", "分数", "权重"} <= {a["text"] for a in neuron["layout"]["annotations"]}


def test_a_view_cached_in_english_is_shown_to_a_chinese_visitor_in_chinese():
    """The page's view is cached for every visitor (``cached._transformer_view``): built for an English
    visitor, it reaches a Chinese one with its words in Chinese — the model view's axes and every
    head's title the browser draws from (``wire.all_heads``), not the first visitor's English."""
    import attention_atlas.ui.language  # noqa: F401  (the session's language, as the app reads it)
    from attention_atlas.i18n import language

    text = "Cached views speak the visitor's language."
    english = AppTest.from_file(PACKAGE / PAGE, default_timeout=300)
    english.query_params["text"] = text
    english = run(english)
    assert live_data(english)[0]["heads"]["titles"][:2] == ["layer 0, head 0", "layer 0, head 1"]
    chinese = AppTest.from_file(PACKAGE / PAGE, default_timeout=300)
    chinese.session_state["lang"] = "zh"
    chinese.query_params["text"] = text
    with language("zh"):  # AppTest applies format_func=_ here too, outside the script run
        chinese = run(chinese)
    model = live_data(chinese)[0]
    assert model["heads"]["id"] == live_data(english)[0]["heads"]["id"]  # the same cached view
    assert model["heads"]["titles"][:2] == ["第 0 层第 0 个头", "第 0 层第 1 个头"]
    layout = json.loads(model["figure"])["layout"]
    assert (layout["xaxis"]["title"]["text"], layout["yaxis"]["title"]["text"]) == ("头", "层")
