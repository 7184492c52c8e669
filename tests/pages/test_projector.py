"""Projector mode and high-contrast colours (issue 14) under AppTest: the sidebar's toggles and
``?present=1`` / ``?contrast=1`` change every figure the page sends (read from its JSON), fold the
introduction away, and stay on across pages."""

import pytest
from streamlit.testing.v1 import AppTest

from attention_atlas.viz_core.layout import HIGH_CONTRAST, PROJECTOR_CJK, PROJECTOR_FONT, PROJECTOR_GAP
from tests.support import PACKAGE, charts, font_sizes

TIMEOUT = 120


def app(params: dict | None = None, page: str | None = None) -> AppTest:
    """The whole app (sidebar included) opened with ``params``, on ``page`` if given."""
    at = AppTest.from_file(PACKAGE / "app.py", default_timeout=TIMEOUT)
    at.query_params.update(params or {})
    at.run()
    if page:
        at.switch_page(f"app_pages/{page}.py").run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def tick_sizes(spec: dict) -> list[float]:
    layout = spec["layout"]
    return [layout[a]["tickfont"]["size"] for a in layout if a[1:5] == "axis" and "tickfont" in layout[a]]


def quick(pages, slow: set[str]) -> list:
    """``pages`` to parametrize with, those in ``slow`` (3 to 5 s each here) left to make test."""
    return [pytest.param(p, marks=pytest.mark.slow) if p in slow else p for p in pages]


@pytest.mark.parametrize(
    "page", quick(["scoring", "positional", "pooling", "couplets", "transformer", "translation"], {"transformer"})
)
def test_present_1_gives_every_figure_text_of_20_px_or_more(page):
    shown = charts(app({"present": "1"}, page))
    assert shown
    for spec in shown:
        assert spec["layout"]["font"]["size"] >= PROJECTOR_FONT
        assert min(font_sizes(spec)) >= PROJECTOR_FONT


def test_projector_mode_changes_the_couplet_figures_fonts_and_gaps():
    before, after = charts(app(page="couplets")), charts(app({"present": "1"}, page="couplets"))
    assert len(before) == len(after)
    heat_before, heat_after = before[0], after[0]
    assert heat_before["layout"]["font"]["size"] < PROJECTOR_FONT
    assert set(tick_sizes(heat_after)) == {PROJECTOR_CJK}  # Chinese characters: 24 px
    assert heat_after["data"][0]["xgap"] == PROJECTOR_GAP > heat_before["data"][0]["xgap"]


def test_projector_mode_folds_the_introduction_and_hides_captions():
    plain, shown = app(page="scoring"), app({"present": "1"}, page="scoring")
    assert "About this page" not in [e.label for e in plain.expander]
    assert "About this page" in [e.label for e in shown.expander]
    css = [h.proto.body for h in shown.get("html")]
    assert any("stCaptionContainer" in body and "display: none" in body for body in css)
    assert not any("stCaptionContainer" in h.proto.body for h in plain.get("html"))


EVERY_PAGE = sorted(p.stem for p in (PACKAGE / "app_pages").glob("*.py"))  # home, scoring, …


@pytest.mark.parametrize("page", quick(EVERY_PAGE, {"watch_learn", "prediction", "long_input", "attribution", "transformer", "complexity"}))
def test_every_page_folds_its_introduction_in_projector_mode(page):
    at = app({"present": "1"}, None if page == "home" else page)
    assert at.expander and at.expander[0].label == "About this page"
    assert at.expander[0].markdown  # the introduction is inside it


def test_every_character_of_the_couplet_has_its_tick_in_projector_mode():
    """Each character of the upper line is labelled in every couplet figure (the heatmap, and the bars
    of where the decoder looked), none thinned away: a projector at 150 % has the width for 7."""
    shown = charts(app({"present": "1"}, "couplets"))
    upper = list("两个黄鹂鸣翠柳")
    titled = {spec["layout"].get("title", {}).get("text", ""): spec for spec in shown}
    assert "where the decoder looked" in titled
    for spec in shown:
        axis = spec["layout"]["xaxis"]
        assert axis["ticktext"] == upper and len(axis["tickvals"]) == len(upper)


def test_the_sidebar_toggle_turns_it_on_writes_present_1_and_it_stays_across_pages():
    at = app(page="scoring")
    assert "present" not in at.query_params
    at.sidebar.toggle(key="present").set_value(True).run()
    assert at.query_params["present"] == "1"
    assert charts(at)[0]["layout"]["font"]["size"] == PROJECTOR_FONT
    at.switch_page("app_pages/pooling.py").run()
    assert at.sidebar.toggle(key="present").value is True and at.query_params["present"] == "1"
    assert charts(at)[0]["layout"]["font"]["size"] == PROJECTOR_FONT
    at.sidebar.toggle(key="present").set_value(False).run()
    assert "present" not in at.query_params and charts(at)[0]["layout"]["font"]["size"] < PROJECTOR_FONT


def test_present_0_in_a_link_turns_it_off():
    at = app({"present": "1"}, page="scoring")
    at.query_params["present"] = "0"
    at.run()
    assert at.sidebar.toggle(key="present").value is False


def test_high_contrast_colours_give_the_attention_heatmaps_cividis():
    plain, contrast = charts(app(page="scoring"))[0], charts(app({"contrast": "1"}, page="scoring"))[0]
    cividis = [c[1].lower() for c in contrast["layout"]["coloraxis"]["colorscale"]]
    assert cividis != [c[1].lower() for c in plain["layout"]["coloraxis"]["colorscale"]]
    assert HIGH_CONTRAST == "Cividis" and cividis[0] == "#00224e"  # cividis' darkest blue
    assert contrast["layout"]["font"]["size"] < PROJECTOR_FONT  # colours only, without projector mode


def test_lesson_links_on_home_keep_projector_mode():
    at = app({"present": "1"})
    lessons = [p.proto for p in at.get("page_link") if p.proto.icon == "📖"]
    assert lessons and all("present=1" in p.query_string for p in lessons)


@pytest.mark.parametrize("present", [False, True])
def test_a_models_terms_stay_on_screen_in_projector_mode(present):
    """Gemma's notice is a caption, and plain text where projector mode hides the captions."""

    def page(present: bool):
        import streamlit as st

        from attention_atlas.models.registry import info
        from attention_atlas.ui.views import show_terms
        from attention_atlas.ui.widgets import PRESENT

        st.session_state[PRESENT] = present
        show_terms(info("gemma3-270m"), st.columns(2)[0])
        show_terms(info("minilm"))  # no terms: nothing

    at = AppTest.from_function(page, args=(present,), default_timeout=TIMEOUT).run()
    assert not at.exception
    shown = [m.value for m in at.markdown] if present else [c.value for c in at.caption]
    hidden = at.caption if present else at.markdown
    assert len(shown) == 1 and shown[0].startswith("⚖️ ") and "Gemma Terms of Use" in shown[0]
    assert not hidden
