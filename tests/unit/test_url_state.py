"""ui.url_state on a tiny page (AppTest.from_function) and viz_core.layout's projector figures."""

import plotly.graph_objects as go
import pytest
from streamlit.testing.v1 import AppTest

from attention_atlas.ui.url_state import notice
from attention_atlas.viz_core.figures import heatmap, heatmap_row, lines
from attention_atlas.viz_core.layout import (
    HIGH_CONTRAST,
    MIN_FONT,
    PROJECTOR_CJK,
    PROJECTOR_FONT,
    PROJECTOR_GAP,
    fit_ticks,
    high_contrast,
    projector,
)
from tests.support import font_sizes


def tiny_page():
    import streamlit as st

    from attention_atlas.ui.url_state import Link

    link = Link("tiny")
    models = ["alpha", "beta"]
    model = st.selectbox("model", models, key=link.choice("model", "t_model", models, "alpha"))
    top = 3 if model == "alpha" else 7
    st.slider("layer", 0, top, key=link.number("layer", "t_layer", 0, top, 1))
    st.slider("h", 0.1, 2.0, step=0.1, key=link.number("h", "t_h", 0.1, 2.0, 0.5, 0.1))
    st.text_input("text", key=link.text("text", "t_text", 10, "hello"))
    st.toggle("on", key=link.flag("on", "t_on"))
    st.multiselect("cols", list(range(6)), key=link.choices("cols", "t_cols", range(6), [1, 2]))
    link.done()


def run(params: dict | None = None, at: AppTest | None = None) -> AppTest:
    if at is None:
        at = AppTest.from_function(tiny_page, default_timeout=30)
        at.query_params.update(params or {})
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def test_a_link_sets_every_widget_and_the_url_keeps_only_what_differs_from_defaults():
    at = run({"model": "beta", "layer": "6", "h": "1.3", "text": "你好", "on": "1", "cols": "0,5"})
    assert at.selectbox(key="t_model").value == "beta"
    assert at.slider(key="t_layer").value == 6
    assert at.slider(key="t_h").value == pytest.approx(1.3)
    assert at.text_input(key="t_text").value == "你好"
    assert at.toggle(key="t_on").value is True
    assert at.multiselect(key="t_cols").value == [0, 5]
    assert not at.warning
    assert dict(at.query_params) == {
        "model": "beta",
        "layer": "6",
        "h": "1.3",
        "text": "你好",
        "on": "1",
        "cols": "0,5",
    }


def test_a_moved_widget_updates_the_url_and_a_default_leaves_it():
    at = run({"layer": "2"})
    at.slider(key="t_layer").set_value(3)
    at = run(at=at)
    assert at.query_params["layer"] == "3" and at.slider(key="t_layer").value == 3
    at.slider(key="t_layer").set_value(1)  # the default
    at = run(at=at)
    assert "layer" not in at.query_params and at.slider(key="t_layer").value == 1
    at.toggle(key="t_on").set_value(True)
    at = run(at=at)
    assert at.query_params["on"] == "1" and at.slider(key="t_layer").value == 1


def test_a_typed_text_the_link_cannot_hold_stays_in_the_session_and_out_of_the_url():
    """Found by the fuzz: a text past its link limit went into the URL anyway, and a typed page
    of 100,000 characters made a query string Streamlit ignores: the page forgot every setting (the
    Checkpoint inspector its demo upload). The text stays typed; the URL keeps the rest."""
    at = run({"layer": "2"})
    at.text_input(key="t_text").set_value("长" * 11)  # the limit is 10
    at = run(at=at)
    assert at.text_input(key="t_text").value == "长" * 11 and "text" not in at.query_params
    assert at.query_params["layer"] == "2" and not at.warning
    at.toggle(key="t_on").set_value(True)
    at = run(at=at)
    assert at.text_input(key="t_text").value == "长" * 11 and at.query_params["on"] == "1"
    at.text_input(key="t_text").set_value("短")
    at = run(at=at)
    assert at.query_params["text"] == "短"


def timed_page():
    import streamlit as st

    from attention_atlas.ui.url_state import rerun_page
    from tests.unit.test_url_state import tiny_page

    if st.session_state.pop("timer", False):  # stands for a timer's fragment run that ends the polling
        rerun_page()
    tiny_page()


def test_a_rerun_from_a_timed_run_keeps_the_settings_written_since_the_browser_asked():
    """Found in CI: a click on the Long inputs page's model view opened layer 5, head 1, and the full
    rerun that ends the page's polling drew layer 15, head 0 again. That rerun came from a timed run
    the browser had asked for with its URL of before the click, and the page took that URL for a link
    that speaks."""
    at = AppTest.from_function(timed_page, default_timeout=30)
    at.query_params["layer"] = "2"
    at = run(at=at)
    at.slider(key="t_layer").set_value(3)
    at.toggle(key="t_on").set_value(True)
    at = run(at=at)
    assert dict(at.query_params) == {"layer": "3", "on": "1"}
    at.query_params.clear()
    at.query_params["layer"] = "2"  # the URL the browser had when its timer fired
    at.session_state["timer"] = True
    at = run(at=at)
    assert at.slider(key="t_layer").value == 3 and at.toggle(key="t_on").value is True
    assert dict(at.query_params) == {"layer": "3", "on": "1"} and not at.warning


def test_the_sidebar_shows_the_link_to_this_view():
    at = run({"layer": "2", "text": "a b"})
    code = [c.value for c in at.sidebar.code]
    assert code == ["/tiny?layer=2&text=a+b"]


def test_a_bad_link_opens_with_defaults_and_one_notice_line():
    bad = {
        "model": "gamma",
        "layer": "9",
        "h": "x",
        "text": "x" * 11,
        "on": "maybe",
        "cols": "1,9",
        "zz": "1",
    }
    at = run(bad)
    assert at.selectbox(key="t_model").value == "alpha"
    assert at.slider(key="t_layer").value == 1
    assert at.slider(key="t_h").value == pytest.approx(0.5)
    assert at.text_input(key="t_text").value == "hello"
    assert at.toggle(key="t_on").value is False
    assert at.multiselect(key="t_cols").value == [1, 2]
    assert len(at.warning) == 1
    line = at.warning[0].value
    assert (
        "\n" not in line and line.startswith("This link's ") and line.endswith("showing defaults for them.")
    )
    for part in ("“gamma” is unknown", "layer 9 is out of range (0–3)", "h “x” is not a number",
                 "text is longer than 10 characters", "“maybe” is not 1 or 0", "“1,9” has entries",
                 "“zz” does not apply here"):  # fmt: skip
        assert part in line, part
    assert dict(at.query_params) == {}


def test_a_range_that_depends_on_an_earlier_setting_is_checked_after_it():
    assert run({"model": "beta", "layer": "7"}).slider(key="t_layer").value == 7
    at = run({"model": "alpha", "layer": "7"})
    assert at.slider(key="t_layer").value == 1 and "layer 7 is out of range (0–3)" in at.warning[0].value


def test_a_range_that_shrinks_under_a_value_resets_it_to_the_default():
    at = run({"model": "beta", "layer": "6"})
    at.selectbox(key="t_model").set_value("alpha")
    at = run(at=at)
    assert at.slider(key="t_layer").value == 1 and not at.warning


@pytest.mark.slow
def test_garbage_values_never_raise():
    for raw in ("", " ", "%", "1e999", "-0", "NaN", "\x00", "[]", "💥" * 40):
        run({"layer": raw, "h": raw, "text": raw, "cols": raw, "model": raw, "on": raw})


def test_notice_lists_one_or_several_problems_in_one_sentence():
    assert notice(["layer 9 is out of range (0–5)"]) == (
        "This link's layer 9 is out of range (0–5); showing defaults for it."
    )
    assert notice(["a", "b", "c"]) == "This link's a, its b and its c; showing defaults for them."


# -- projector figures ------------------------------------------------------------------------------


def fonts(fig: go.Figure) -> list[float]:
    """Every font size set anywhere in the figure."""
    return font_sizes(fig.to_dict())


def test_projector_raises_every_font_and_token_ticks_and_thickens_gaps():
    tokens = ["the", "cat", "sat", "on", "the", "mat"]
    plain = heatmap([[1 / 6] * 6] * 6, tokens, tokens, title="t")
    shown = projector(plain)
    assert min(fonts(shown)) >= PROJECTOR_FONT and min(fonts(plain)) < PROJECTOR_FONT
    assert shown.layout.xaxis.tickfont.size == PROJECTOR_FONT
    assert shown.data[0].xgap == PROJECTOR_GAP and plain.data[0].xgap == 1
    assert plain.layout.font.size < PROJECTOR_FONT  # the original is left as it was


def test_projector_gives_chinese_ticks_24_px_and_thins_them_rather_than_shrink():
    upper = list("两个黄鹂鸣翠柳") * 6  # 42 characters: too many for 24 px each in one row
    fig = projector(heatmap([[1 / 42] * 42] * 3, upper[:3], upper))
    assert fig.layout.xaxis.tickfont.size == PROJECTOR_CJK
    assert len(fig.layout.xaxis.tickvals) < len(upper)  # every other (or so) label


def test_projector_fonts_reach_subplot_titles_colour_bars_and_lines():
    row = heatmap_row({"a": [[1.0]], "b": [[1.0]]}, ["x"], ["y"])
    assert all(
        a.font.size is None or a.font.size >= PROJECTOR_FONT for a in projector(row).layout.annotations
    )
    curve = projector(lines([1, 2], {"loss": [1.0, 0.5]}, "step", "loss"))
    assert curve.layout.font.size == PROJECTOR_FONT and curve.data[0].line.width >= 3


def test_high_contrast_replaces_sequential_scales_and_keeps_diverging_ones():
    tokens = ["a", "b"]
    seq = high_contrast(heatmap([[0.5, 0.5], [0.2, 0.8]], tokens, tokens))
    assert seq.data[0].colorscale == go.Figure(go.Heatmap(colorscale=HIGH_CONTRAST)).data[0].colorscale
    diff = heatmap_row({"d": [[0.5, -0.5], [0, 0]]}, tokens, tokens, zmin=-1, zmax=1, colorscale="RdBu_r")
    before = diff.layout.coloraxis.colorscale
    assert high_contrast(diff).layout.coloraxis.colorscale == before


def test_fit_ticks_keeps_its_old_smallest_font_by_default():
    assert fit_ticks(["x"] * 400, 820).size == MIN_FONT
    assert fit_ticks(["x"] * 400, 820, largest=20, smallest=20).size == 20


def tabs_page():
    import streamlit as st

    from attention_atlas.ui.url_state import Link

    link = Link("tabs")
    names = ["Heads", "Statistics", "Positions"]
    tabs = st.tabs(names, key=link.choice("tab", "t_tab", names, names[0]), on_change="rerun")
    link.done()
    for name, tab in zip(names, tabs, strict=True):
        if tab.open:
            tab.write("open: " + name)


def test_a_link_opens_a_tab_and_the_open_tab_goes_into_the_url():
    at = AppTest.from_function(tabs_page, default_timeout=30)
    at.query_params["tab"] = "Positions"
    at.run()
    assert [m.value for m in at.markdown] == ["open: Positions"] and at.query_params["tab"] == "Positions"
    at.session_state["t_tab"] = "Statistics"  # as a click on the tab does
    at.run()
    assert [m.value for m in at.markdown] == ["open: Statistics"] and at.query_params["tab"] == "Statistics"


def translated_tabs_page():
    import streamlit as st

    import attention_atlas.ui.language  # noqa: F401  (the session's language, as the app reads it)
    from attention_atlas.ui.url_state import Link, Unlinked

    sources = ["Heads", "Head statistics", "Positions"]  # marked N_ in the pages; in the catalog
    link = Unlinked() if st.session_state.get("unlinked") else Link("tabs")
    labels, key = link.tabs("tab", "t_tab", sources)
    tabs = st.tabs(labels, key=key, on_change="rerun")
    if isinstance(link, Link):
        link.done()
    for label, tab in zip(labels, tabs, strict=True):
        if tab.open:
            tab.write("open: " + label)


def opened(at: AppTest) -> list[str]:
    return [m.value for m in at.markdown]


def test_a_tab_chosen_in_english_stays_open_in_chinese_and_the_url_keeps_its_english_label():
    at = AppTest.from_function(translated_tabs_page, default_timeout=30)
    at.run()
    assert [t.label for t in at.tabs] == ["Heads", "Head statistics", "Positions"]
    at.session_state["t_tab"] = "Positions"  # as a click on the tab does
    at.run()
    assert opened(at) == ["open: Positions"] and at.query_params["tab"] == "Positions"
    at.session_state["lang"] = "zh"  # the sidebar's language switch
    at.run()
    assert not at.exception
    assert [t.label for t in at.tabs] == ["注意力头", "头的统计", "位置"]
    assert opened(at) == ["open: 位置"] and at.session_state["t_tab"] == "位置"
    assert at.query_params["tab"] == "Positions"  # a link made now opens the same tab in either language
    at.session_state["t_tab"] = "头的统计"  # a click in Chinese
    at.run()
    assert opened(at) == ["open: 头的统计"] and at.query_params["tab"] == "Head statistics"
    at.session_state["lang"] = "en"
    at.run()
    assert opened(at) == ["open: Head statistics"] and at.query_params["tab"] == "Head statistics"


def test_a_link_with_an_english_tab_opens_it_in_chinese():
    at = AppTest.from_function(translated_tabs_page, default_timeout=30)
    at.session_state["lang"] = "zh"
    at.query_params["tab"] = "Positions"
    at.run()
    assert not at.exception and not at.warning
    assert opened(at) == ["open: 位置"] and at.query_params["tab"] == "Positions"
    at.session_state["t_tab"] = "注意力头"  # the first tab, the default: left out of the URL
    at.run()
    assert opened(at) == ["open: 注意力头"] and "tab" not in at.query_params


def test_tabs_without_a_link_keep_the_open_tab_across_a_language_switch():
    at = AppTest.from_function(translated_tabs_page, default_timeout=30)
    at.session_state["unlinked"] = True
    at.run()
    at.session_state["t_tab"] = "Head statistics"
    at.run()
    at.session_state["lang"] = "zh"
    at.run()
    assert opened(at) == ["open: 头的统计"] and dict(at.query_params) == {}
