"""Links that reproduce a view (issue 14), under AppTest: on every page that keeps its settings in
the URL a link sets the widgets, a moved widget updates the URL, a stale or bad link opens with
defaults and one notice line, and Home's lesson links open their pages in the lesson's state."""

from urllib.parse import parse_qsl

import pytest
from streamlit.testing.v1 import AppTest

from tests.support import PACKAGE, charts

TIMEOUT = 120


def open_link(page: str, params: dict) -> AppTest:
    """A fresh session opening ``app_pages/<page>.py?<params>``."""
    at = AppTest.from_file(PACKAGE / "app_pages" / f"{page}.py", default_timeout=TIMEOUT)
    at.query_params.update(params)
    return rerun(at)


def rerun(at: AppTest) -> AppTest:
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def widget(at: AppTest, key: str):
    """The widget of ``key``, whatever its kind."""
    for kind in (
        "selectbox",
        "slider",
        "select_slider",
        "text_input",
        "toggle",
        "multiselect",
        "radio",
        "number_input",
    ):
        found = [w for w in getattr(at, kind) if w.key == key]
        if found:
            return found[0]
    raise AssertionError(f"no widget {key}")


# page, link, {widget key: value it must show}, (key to move, new value, (name, text) in the URL after)
ROUND_TRIPS = [
    (
        "scoring",
        {"mask": "strided", "n": "10", "stride": "4", "temp": "0.5", "sigma": "3.5", "same": "1", "d": "64"},
        {"scoring_mask": "strided", "scoring_n": 10, "scoring_stride": 4, "scoring_temp": 0.5,
         "scoring_sigma": 3.5, "scoring_same": True, "scoring_d": 64},
        ("scoring_n", 12, ("n", "12")),
    ),
    (
        "scoring",
        {"source": "minilm", "text": "The dog barked at the cat.", "layer": "3", "head": "1", "mask": "causal"},
        {"scoring_source": "real: minilm", "scoring_text": "The dog barked at the cat.", "scoring_layer": 3,
         "scoring_head": 1, "scoring_mask": "causal"},
        ("scoring_relbias", True, ("relbias", "1")),
    ),
    (
        "positional",
        {"len": "100", "d": "16", "cols": "1,2", "learned": "1"},
        {"pe_len": 100, "pe_dim": 16, "pe_cols": [1, 2], "pe_learned": True},
        ("pe_cols", [3], ("cols", "3")),
    ),
    (
        "pooling",
        {"kernel": "boxcar", "h": "1.2", "n": "80", "noise": "0.3", "seed": "7", "epochs": "20", "lr": "0.1"},
        {"pool_kernel": "boxcar", "pool_h": 1.2, "pool_n": 80, "pool_noise": 0.3, "pool_seed": 7,
         "pool_epochs": 20, "pool_lr": 0.1},
        ("pool_h", 2.0, ("h", "2")),
    ),
    (
        "couplets",
        {"text": "白日依山尽", "model": "couplet-rnn-dot", "beam": "3", "step": "4"},
        {"couplet_upper": "白日依山尽", "couplet_model": "couplet-rnn-dot", "couplet_beam": 3, "couplet_step": 4},
        ("couplet_step", 2, ("step", "2")),
    ),
    (
        "couplets",
        {"text": "白日依山尽", "target": "黄河入海流", "both": "1"},
        {"couplet_upper": "白日依山尽", "couplet_target": "黄河入海流", "couplet_both": True},
        ("couplet_both", False, ("target", "黄河入海流")),
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("page", "link", "shown", "move"), ROUND_TRIPS, ids=lambda v: v if isinstance(v, str) else ""
)
def test_a_link_round_trips(page, link, shown, move):
    at = open_link(page, link)
    for key, value in shown.items():
        assert widget(at, key).value == (pytest.approx(value) if isinstance(value, float) else value), key
    assert not at.warning, [w.value for w in at.warning]
    assert dict(at.query_params) == link  # the URL keeps what differs from the defaults, as it came
    assert charts(at)
    key, value, (name, text) = move
    widget(at, key).set_value(value)
    at = rerun(at)
    assert at.query_params[name] == text
    assert widget(at, key).value == value
    others = {k: v for k, v in link.items() if k != name and not (key == "couplet_both" and k == "both")}
    assert {k: at.query_params.get(k) for k in others} == others  # the rest of the view stays
    assert next(c.value for c in at.sidebar.code).startswith(f"/{page}?")


# page, a bad link, {widget key: the default it must show instead}, words the notice must hold
BAD_LINKS = [
    ("scoring", {"source": "gpt-9", "mask": "sideways", "n": "99"},
     {"scoring_source": "random", "scoring_mask": "none", "scoring_n": 8}, ["“gpt-9” is unknown", "n 99 is out of range (2–24)"]),
    ("scoring", {"source": "minilm", "layer": "9", "head": "x"},
     {"scoring_layer": 2, "scoring_head": 5}, ["layer 9 is out of range (0–5)", "head “x” is not a whole number"]),
    ("scoring", {"source": "minilm", "text": "a" * 201}, {"scoring_text": None}, ["text is longer than 200 characters"]),
    ("positional", {"len": "1e9", "d": "7", "cols": "a,b", "learned": "yes please"},
     {"pe_len": 60, "pe_dim": 32, "pe_cols": [6, 7, 8, 9], "pe_learned": False}, ["len “1e9” is not a whole number", "“7” is not on offer"]),
    ("pooling", {"kernel": "<script>", "h": "-1", "seed": "99999999"},
     {"pool_kernel": "gaussian", "pool_h": 0.5, "pool_seed": 0}, ["is unknown", "h -1 is out of range", "seed 99999999"]),
    ("couplets", {"model": "couplet-gpt", "text": "白" * 33, "beam": "0"},
     {"couplet_model": "couplet-rnn-additive", "couplet_upper": "两个黄鹂鸣翠柳", "couplet_beam": 1},
     ["model “couplet-gpt” is unknown", "text is longer than 32 characters", "beam 0 is out of range (1–8)"]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("page", "link", "defaults", "words"), BAD_LINKS, ids=lambda v: v if isinstance(v, str) else ""
)
def test_a_bad_link_opens_with_defaults_and_one_notice_line(page, link, defaults, words):
    at = open_link(page, link)
    for key, value in defaults.items():
        if value is None:  # the model's own example
            assert widget(at, key).value != link.get(key.split("_")[-1]), key
        else:
            assert widget(at, key).value == value, key
    notices = [w.value for w in at.warning if w.value.startswith("This link's")]
    assert len(notices) == 1 and "\n" not in notices[0], notices
    shown = notices[0].replace("\\", "")  # as Markdown renders it: "\\-1" is "-1"
    for word in words:
        assert word in shown, (word, notices[0])
    assert "<script>" not in notices[0]  # escaped, shown as text
    assert charts(at)


# -- Home's lessons ---------------------------------------------------------------------------------


def lesson_links() -> list[tuple[str, dict]]:
    at = AppTest.from_file(PACKAGE / "app.py", default_timeout=TIMEOUT)
    rerun(at)
    links = [p.proto for p in at.get("page_link") if p.proto.icon == "📖"]
    return [(p.page, dict(parse_qsl(p.query_string))) for p in links]


# the page's widgets as each lesson discusses it
LESSON_STATE = {
    ("scoring", "d"): {"scoring_source": "random", "scoring_d": 128, "scoring_n": 12},
    ("positional", "cols"): {"pe_len": 60, "pe_dim": 32, "pe_cols": [6, 7, 8, 9]},
    ("pooling", "kernel"): {"pool_kernel": "gaussian", "pool_h": 0.5, "pool_n": 50, "pool_noise": 0.5},
    ("scoring", "mask"): {"scoring_mask": "local window", "scoring_window": 2, "scoring_relbias": True},
    ("couplets", "model"): {"couplet_model": "couplet-rnn-additive", "couplet_upper": "两个黄鹂鸣翠柳", "couplet_step": 3},
    ("attribution", "position"): {"attribution_model": "couplet-rnn-additive", "attribution_target": "一行白鹭上青天", "attribution_position": 6},
}  # fmt: skip


def test_home_has_one_link_per_tutorial_lesson():
    pages = [page for page, _ in lesson_links()]
    assert pages[:7] == ["scoring", "positional", "pooling", "scoring", "couplets", "translation", "attribution"]
    assert pages[7:] in ([], ["attribution"])  # the SmolLM2 sentence, where a causal LM is installed
    translation = dict(lesson_links())["translation"]
    assert set(translation) == {"model", "text"} and translation["model"] == "translate-gru-additive"


@pytest.mark.parametrize("which", list(LESSON_STATE), ids=lambda w: f"{w[0]}-{w[1]}")
def test_a_lesson_link_opens_its_page_in_the_lessons_state(which):
    page, marker = which
    params = next(p for name, p in lesson_links() if name == page and marker in p)
    at = open_link(page, params)
    assert not at.warning, [w.value for w in at.warning]
    for key, value in LESSON_STATE[which].items():
        assert widget(at, key).value == value, key
    assert charts(at)
