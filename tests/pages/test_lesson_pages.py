"""Every page under streamlit's AppTest: renders without exception, shows its charts, reacts to a widget."""


import pytest
from streamlit.testing.v1 import AppTest

from tests.support import PACKAGE, charts, page_runner

TIMEOUT = 120


def run(page: str) -> AppTest:
    return page_runner(page, TIMEOUT)()


def test_app_shell_shows_home_and_device():
    at = run("app.py")
    assert "Attention Atlas" in at.title[0].value
    assert any("Device:" in m.value for m in at.sidebar.markdown)


def test_scoring_page_draws_all_six_functions_on_one_scale():
    at = run("app_pages/scoring.py")
    figs = charts(at)
    assert len(figs) == 3
    heat = figs[0]
    assert [t["type"] for t in heat["data"]] == ["heatmap"] * 6
    assert {a["text"] for a in heat["layout"]["annotations"]} == {
        "dot",
        "scaled_dot",
        "additive",
        "general",
        "cosine",
        "gaussian",
    }


@pytest.mark.parametrize("mask", ["causal", "local window", "strided", "padding"])
def test_scoring_page_applies_each_mask(mask):
    at = run("app_pages/scoring.py")
    at.selectbox(key="scoring_mask").set_value(mask).run()
    assert not at.exception
    assert len(charts(at)) == 3


def test_identical_keys_toggle_shows_uniform_message():
    at = run("app_pages/scoring.py")
    at.toggle(key="scoring_same").set_value(True).run()
    assert not at.exception
    assert any("largest spread in a row: 0" in s.value for s in at.success)


def test_relative_position_bias_changes_the_weights():
    at = run("app_pages/scoring.py")
    before = charts(at)[0]["data"][0]["z"]
    at.toggle(key="scoring_relbias").set_value(True).run()
    assert not at.exception and charts(at)[0]["data"][0]["z"] != before


def test_shrinking_count_below_other_sliders_does_not_break():
    at = run("app_pages/scoring.py")
    at.selectbox(key="scoring_mask").set_value("strided").run()
    at.slider(key="scoring_n").set_value(2).run()
    assert not at.exception and len(charts(at)) == 3


def test_positional_page_defaults_to_columns_6_to_9_and_reacts_to_d():
    at = run("app_pages/positional.py")
    assert at.multiselect(key="pe_cols").value == [6, 7, 8, 9]
    assert [t["name"] for t in charts(at)[0]["data"]] == ["col 6", "col 7", "col 8", "col 9"]
    at.select_slider(key="pe_dim").set_value(8).run()
    assert not at.exception
    assert len(charts(at)) == 4


def test_positional_page_with_no_columns_says_so():
    at = run("app_pages/positional.py")
    at.multiselect(key="pe_cols").set_value([]).run()
    assert not at.exception and any("at least one column" in i.value for i in at.info)


def test_pooling_page_trains_and_adds_the_learned_curve():
    at = run("app_pages/pooling.py")
    assert len(charts(at)) == 2
    at.slider(key="pool_epochs").set_value(5)
    at.button(key="pool_train").click().run()
    assert not at.exception
    figs = charts(at)
    assert len(figs) == 4  # fit, weights, loss curve, learned weights
    assert any(t.get("name", "").startswith("learned Gaussian") for t in figs[0]["data"])


def test_pooling_page_warns_when_a_narrow_boxcar_leaves_gaps():
    at = run("app_pages/pooling.py")
    at.selectbox(key="pool_kernel").set_value("boxcar")
    at.slider(key="pool_h").set_value(0.05).run()
    assert not at.exception
    assert any("undefined" in w.value for w in at.warning)


def test_pooling_page_disables_the_bandwidth_of_the_constant_kernel_and_says_why():
    at = run("app_pages/pooling.py")
    assert not at.slider(key="pool_h").disabled
    assert any("Wider bandwidth, wider band" in c.value for c in at.caption)
    at.selectbox(key="pool_kernel").set_value("constant").run()
    assert not at.exception
    h = at.slider(key="pool_h")
    assert h.disabled and "whatever the bandwidth" in h.help
    captions = " ".join(c.value for c in at.caption)
    assert "No band here" in captions and "Wider bandwidth" not in captions


def test_positional_page_compares_minilm_learned_positions():
    at = run("app_pages/positional.py")
    at.toggle(key="pe_learned").set_value(True).run()
    assert not at.exception
    fig = charts(at)[-1]
    assert [a["text"] for a in fig["layout"]["annotations"]][1].startswith("minilm, learned (384 dims)")


def test_scoring_page_takes_real_queries_and_keys_from_minilm():
    at = run("app_pages/scoring.py")
    at.radio(key="scoring_source").set_value("real: minilm").run()
    assert not at.exception
    heat = charts(at)[0]
    assert heat["data"][0]["x"][0].endswith("[CLS]")
    at.selectbox(key="scoring_mask").set_value("causal").run()
    assert not at.exception


@pytest.mark.parametrize(("model_id", "layer", "head"), [pytest.param("smollm2", 29, 8, marks=pytest.mark.slow), ("couplet-transformer", 2, 3)])
def test_scoring_pages_scaled_dot_panel_is_the_real_heads_own_weights(model_id, layer, head):
    """A causal model opens with the causal mask; its scaled-dot panel, and the couplet
    Transformer's (its encoder over the upper line), are that head's weights as the model runs."""
    import numpy as np

    from attention_atlas.models.registry import info
    from attention_atlas.ui.cached import adapter
    from tests.support import z_of

    page = PACKAGE / "app_pages" / "scoring.py"
    at = AppTest.from_file(str(page), default_timeout=TIMEOUT)
    at.query_params.update({"source": model_id, "layer": str(layer), "head": str(head)})
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    causal = info(model_id).family == "causal"
    assert at.selectbox(key="scoring_mask").value == ("causal" if causal else "none")
    assert ("causal mask" in at.caption[0].value) == causal
    fig = charts(at)[0]
    panel = [a["text"] for a in fig["layout"]["annotations"]].index("scaled_dot")
    record = next(iter(adapter(model_id).run(info(model_id).example).records.values()))
    drawn = z_of(fig["data"][panel])  # sent as float16
    np.testing.assert_allclose(drawn, record.head(layer, head), atol=1e-3)


@pytest.mark.slow  # about 3 s
def test_switching_the_source_to_a_causal_model_switches_the_mask_with_the_caption():
    """Picking smollm2 after minilm shows its causal mask, as its caption says; leaving it drops it."""
    at = run("app_pages/scoring.py")
    at.radio(key="scoring_source").set_value("real: minilm").run()
    assert at.selectbox(key="scoring_mask").value == "none"
    at.radio(key="scoring_source").set_value("real: smollm2").run()
    assert not at.exception, [e.message for e in at.exception]
    assert "causal mask" in at.caption[0].value and at.selectbox(key="scoring_mask").value == "causal"
    at.radio(key="scoring_source").set_value("random").run()
    assert at.selectbox(key="scoring_mask").value == "none"


def test_switching_to_a_model_with_fewer_heads_brings_the_head_into_range_silently():
    """Issue 40, item 9: head 5 of minilm (or smollm2), then the couplet Transformer (heads 0–3) said
    "head 5 is outside 0–3", a number the visitor never typed; it is 3, without a word."""
    at = run("app_pages/scoring.py")
    at.radio(key="scoring_source").set_value("real: minilm").run()
    assert at.number_input(key="scoring_head").value == 5 and at.number_input(key="scoring_layer").value == 2
    at.number_input(key="scoring_layer").set_value(4).run()
    at.radio(key="scoring_source").set_value("real: couplet-transformer").run()
    assert not at.exception, [e.message for e in at.exception]
    assert not at.warning, [w.value for w in at.warning]
    assert at.number_input(key="scoring_head").value == 3 and at.number_input(key="scoring_layer").value == 2
    assert any("layer 2, head 3" in c.value for c in at.caption)


# -- what an input cuts or refuses is said on the page, and what is drawn is what is kept ----------

scoring = page_runner("app_pages/scoring.py", 300)
pooling = page_runner("app_pages/pooling.py", 120)


def test_a_long_paste_into_scorings_box_is_cut_said_and_used():
    at = scoring()
    at.radio(key="scoring_source").set_value("real: minilm")
    at = scoring(at)
    before = charts(at)[0]["data"][0]["x"]
    at.text_input(key="scoring_text").set_value("the cat sat on the mat " * 130)  # 2,990 characters
    at = scoring(at)
    box = at.text_input(key="scoring_text")
    assert len(box.value) == 200 and "2,990 characters" in at.warning[0].value
    assert "first 200" in at.warning[0].value
    assert charts(at)[0]["data"][0]["x"] != before  # the cut sentence is what is drawn


def test_an_out_of_range_layer_is_refused_with_a_message_and_the_chart_follows():
    at = scoring()
    at.radio(key="scoring_source").set_value("real: minilm")
    at = scoring(at)
    layer = at.number_input(key="scoring_layer")
    assert "(0–5)" in layer.label
    at = scoring(layer.set_value(9))
    assert any("9 is outside 0–5" in w.value for w in at.warning)
    assert at.number_input(key="scoring_layer").value == 5
    assert any("layer 5" in c.value for c in at.caption)
    at = scoring(at)
    assert not at.warning  # said once, for the number that was refused


def test_a_negative_seed_is_refused_with_a_message():
    for page, key in ((scoring, "scoring_seed"), (pooling, "pool_seed")):
        at = page()
        at = page(at.number_input(key=key).set_value(-5))
        assert any("-5 is outside 0–99,999" in w.value for w in at.warning), page
        assert at.number_input(key=key).value == 0


# -- the pages in Chinese (?lang=zh): every word of them in the catalog's Chinese, the values behind the
# widgets and the URL still the English ones ----------------------------------------------------------


def in_chinese(page: str | None, params: dict | None = None, timeout: float = TIMEOUT) -> AppTest:
    """The whole app opened with ``?lang=zh`` (and ``params``) on ``page`` (Home when None). The test
    thread formats the options of a ``format_func=_`` widget too, to read its state: in Chinese here,
    as the page's own run did."""
    from attention_atlas import i18n

    at = AppTest.from_file(PACKAGE / "app.py", default_timeout=timeout)
    at.query_params.update({"lang": "zh", **(params or {})})
    with i18n.language("zh"):
        at.run()
        if page:
            at.switch_page(f"app_pages/{page}.py").run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def test_home_in_chinese():
    at = in_chinese(None)
    assert [s.value for s in at.subheader] == ["页面", "课程"]
    links = [p.proto.label for p in at.get("page_link")]
    assert any(label.startswith("**注意力评分函数**") for label in links)
    assert any(label.startswith("**Bahdanau 翻译**") for label in links)
    assert "热力图" in at.caption[0].value
    assert any("设备" in m.value for m in at.sidebar.markdown)


def test_a_device_that_is_not_here_is_said_in_chinese(monkeypatch):
    """ATLAS_DEVICE asks for a device the server lacks: the sidebar's one line, shared by every
    visitor (made once), is in the visitor's language."""
    from attention_atlas.ui.widgets import _device_line

    monkeypatch.setenv("ATLAS_DEVICE", "tpu-9")
    _device_line.clear()
    try:
        warned = [w.value for w in in_chinese(None).sidebar.warning]
    finally:
        _device_line.clear()
    assert warned == ["ATLAS_DEVICE='tpu-9' 不是设备名（可用 cpu、cuda、mps）"], warned


def test_scoring_page_in_chinese():
    at = in_chinese("scoring", {"mask": "causal"})
    assert at.title[0].value == "🎯 注意力评分函数"
    mask = at.selectbox(key="scoring_mask")
    assert mask.value == "causal" and "因果" in mask.options and at.query_params["mask"] == "causal"
    assert at.radio(key="scoring_source").options[0] == "随机"
    heat, bars, curves = charts(at)
    assert {a["text"] for a in heat["layout"]["annotations"]} >= {"点积", "缩放点积", "余弦", "高斯"}
    assert heat["data"][0]["hovertemplate"].startswith("查询 %{y}<br>键 %{x}<br>权重 %{z:.3g}")
    assert bars["layout"]["xaxis"]["title"]["text"] == "查询"
    assert [t["name"] for t in curves["data"]] == ["点积（不缩放）", "缩放点积（÷√d）"]
    assert "（0–99,999）" in at.number_input(key="scoring_seed").label


def test_positional_page_in_chinese():
    at = in_chinese("positional")
    assert at.title[0].value == "🌊 位置编码"
    assert [t["name"] for t in charts(at)[0]["data"]] == ["第 6 列", "第 7 列", "第 8 列", "第 9 列"]
    assert "整个矩阵 P" in [s.value for s in at.subheader]


def test_pooling_page_in_chinese():
    at = in_chinese("pooling", {"kernel": "boxcar", "h": "0.05"})
    kernel = at.selectbox(key="pool_kernel")
    assert kernel.value == "boxcar" and kernel.options == ["高斯", "矩形（boxcar）", "Epanechnikov", "常数"]
    names = [t.get("name") for t in charts(at)[0]["data"]]
    assert names[:3] == ["训练数据（键，值）", "真实函数", "矩形（boxcar）核，h = 0.05"]
    assert any("没有训练点" in w.value for w in at.warning)
    assert at.button(key="pool_train").label == "训练"
