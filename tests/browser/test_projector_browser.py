"""Projector mode in chromium (issue 14): every page, opened with ``?present=1`` at 1280 × 720 and then
zoomed to 150 % (853 × 480 CSS px at a device scale of 1.5, on the open page as a browser's zoom
does), fits its width: neither the document nor Streamlit's own scrolling main area scrolls
sideways, the sidebar is collapsed, no button, tab, label or select box cuts its text, every
character of the default couplet is labelled in each Couplets chart, and on the pages whose figures
all pass through ``ui.widgets.chart`` every figure text is drawn at 20 px or more (Chinese ticks
24 px), and every table's text is zoomed to 20 px. Screenshots go to /tmp/atlas-projector/ (the visible screen; the whole page too with
``ATLAS_FULL_SHOTS=1``)."""

import base64
import os
import re
import weakref
from pathlib import Path

import pytest

from harness.browser import EXCEPTION_BOX, PLOT_DRAWN, open_sidebar, wait_still

pytestmark = pytest.mark.browser
SHOTS = Path("/tmp/atlas-projector")
PAGES = [
    "",
    "scoring",
    "positional",
    "pooling",
    "transformer",
    "long-input",
    "corpus",
    "prediction",
    "attribution",
    "couplets",
    "translation",
    "watch-learn",
    "checkpoint",
]
SCREENS = {"1280x720": ({"width": 1280, "height": 720}, 1), "zoom150": ({"width": 853, "height": 480}, 1.5)}
# The window's CSS size and device scale, set through the Chrome DevTools Protocol: Playwright sets a
# device scale only for a new context, and a browser's zoom changes both on the open page.
METRICS = "Emulation.setDeviceMetricsOverride"
DEVTOOLS = weakref.WeakKeyDictionary()  # page -> its session: an override lasts as long as the session that set it
HAN = re.compile(r"[\u4e00-\u9fff]")
IDLE = '[data-test-script-state="notRunning"]'  # Streamlit's app root once the script has run
NO_PLOTS = {"", "checkpoint", "watch-learn"}
# The pages whose every figure passes through ui.widgets.chart (the Transformer page's live views
# and the Checkpoint inspector's are drawn by ui.live_heads, which projector mode does not reach yet).
CHARTED = {"scoring", "positional", "pooling", "couplets", "translation", "corpus"}
FIGURE_TEXT = """() => [...document.querySelectorAll('.js-plotly-plot .main-svg text')]
    .filter(t => t.textContent.trim())
    .map(t => [parseFloat(getComputedStyle(t).fontSize), t.textContent, t.parentElement.getAttribute('class')])"""
# Controls whose text is cut: a button, tab, label or select box narrower than its text (Streamlit
# ends a cut label in "…", or squeezes it to no width at all; a row of tabs too long scrolls behind a
# "›"; a select box's value is an input).
CUT = """() => [...document.querySelectorAll('[data-testid="stMain"] :is(button, label, input, '
    + '[role="tablist"], [data-testid="stWidgetLabel"], [data-testid="stMetricLabel"])')]
  .flatMap(box => [box, ...box.querySelectorAll('*')])
  .filter(e => (e.value || e.textContent).trim() && e.getClientRects().length && e.scrollWidth > e.clientWidth + 1)
  .map(e => [(e.value || e.textContent).trim().slice(0, 40), e.scrollWidth, e.clientWidth])"""
# A slider's value or end drawn on more than one line (the attribution page's "32" was "3" over "2").
WRAPPED = """() => [...document.querySelectorAll('[data-testid="stMain"] :is([data-testid="stSliderThumbValue"], '
    + '[data-testid="stSliderTickBar"] > *)')]
  .filter(e => e.textContent.trim() && e.getBoundingClientRect().height > 2 * parseFloat(getComputedStyle(e).fontSize))
  .map(e => e.textContent.trim())"""
# The scale every table is drawn at, as the grid itself measures it (st.dataframe draws its cells on a
# canvas: its 14 px text is zoomed to 20 px).
TABLE_ZOOMS = """() => [...document.querySelectorAll('[data-testid="stMain"] [data-testid="stDataFrame"]')]
  .filter(t => t.offsetWidth).map(t => t.getBoundingClientRect().width / t.offsetWidth)"""  # shown: not in a closed tab
SIDEBAR_WIDTH = """() => document.querySelector('[data-testid="stSidebar"]').getBoundingClientRect().width"""
X_TICKS = """() => [...document.querySelectorAll('.js-plotly-plot')].map(plot =>
    [...plot.querySelectorAll('.xtick text')].map(t => t.textContent))"""
OVERFLOW = """() => [document.scrollingElement, ...document.querySelectorAll(
    '[data-testid="stMain"], [data-testid="stAppViewContainer"], [data-testid="stMainBlockContainer"]')]
  .map(e => [e.getAttribute('data-testid') || 'document', e.scrollWidth, e.clientWidth])
  .filter(([, scroll, client]) => scroll > client)"""


# A Chinese page (``&lang=zh``) shows no English word of the interface. What it may still show in Latin
# letters: the tokens (the words of its text inputs, of its charts' tick labels and of the data drawn
# inside a plot), the models' ids and example inputs, code spans, quoted tokens ('…'), file names and
# extensions, snake_case names (the CSV files'), units, an English term the glossary keeps in
# parentheses after its Chinese one (注意力展开（rollout）), Streamlit's own chrome (the file uploader's
# button and size line, the icons' ligatures: Streamlit does not translate them), and ``ALLOWED``:
ALLOWED = {
    # names and abbreviations a Chinese text keeps as they are (docs/GLOSSARY-zh.md)
    *("BERT", "GPT", "RNN", "CNN", "GRU", "LSTM", "BLEU", "CSV", "URL", "UTF"),
    *("CPU", "GPU", "CUDA", "MPS", "Transformer", "Bahdanau", "Nadaraya", "Watson"),
    *("logit", "Logit", "lens", "Ray", "Adam", "ALiBi", "JSON", "TXT", "SHA", "AOPC"),
    # the math's functions and a dtype
    *("softmax", "argmax", "tanh", "exp", "max", "min", "log", "sin", "cos", "float"),
    "English",  # the language switch names each language in itself
}
NAMES = ["Attention Atlas", "Hugging Face", "SmolLM2"]  # the app's name, a company's, a model's
UNITS = {"ms", "MB", "GB", "KB", "kB", "px", "GiB", "MiB", "KiB"}
LATIN_WORD = re.compile(r"[A-Za-z]{2,}")
NOT_WORDS = [  # removed from a line before its words are counted
    re.compile(r"（[^（）]*）"),  # a term the glossary keeps in parentheses
    re.compile(r"'[^'\n]*'|‘[^’\n]*’|“[^”\n]*”|「[^」\n]*」"),  # a quoted token
    re.compile(r"[\w.-]*_[\w.-]*"),  # a snake_case name: a file's, a column's
    re.compile(r"(?<![\w])\.[A-Za-z]\w*"),  # a file extension: .txt, .safetensors
]
# The visible text of a page (main area and sidebar, select boxes' values), its figures' texts outside
# the plot area and the ticks (titles, axis titles, legend, colour-bar titles), and what it may show
# in Latin letters: tokens, code, and Streamlit's untranslated chrome.
SHOWN_TEXT = """() => {
  const roots = ['stMain', 'stSidebar'].map(id => document.querySelector(`[data-testid="${id}"]`)).filter(Boolean);
  const texts = [...document.querySelectorAll('.js-plotly-plot .main-svg text')];
  const data = t => !!t.closest('g[class*="tick"], g.overplot, g.plot, g.trace');
  const inside = selector => roots.flatMap(r => [...r.querySelectorAll(selector)]);
  return {
    shown: [...roots.map(r => r.innerText), ...texts.filter(t => !data(t)).map(t => t.textContent),
            ...inside('[data-testid="stSelectbox"] input').map(e => e.value)],
    tokens: [...texts.filter(data).map(t => t.textContent),
             ...inside('[data-testid="stTextInput"] input, [data-testid="stTextArea"] textarea').map(e => e.value)],
    code: inside('code, pre').map(e => e.textContent),
    chrome: inside('[data-testid="stIconMaterial"], [data-testid="stFileUploaderDropzoneInstructions"] *, '
      + '[data-testid="stFileUploaderDropzone"] button').flatMap(e => e.innerText.split('\\n')).map(t => t.trim()).filter(Boolean),
  };
}"""


def english_left(page) -> list[str]:
    """The lines of a Chinese page that still hold a Latin word of two letters or more that is none of
    the page's tokens, code or chrome, the models' ids and examples, units or ``ALLOWED``: English
    the interface forgot to translate."""
    from attention_atlas.models.corpus.inputs import SAMPLES
    from attention_atlas.models.registry import available
    from attention_atlas.ui.translation_views import SEED_SENTENCES

    found = page.evaluate(SHOWN_TEXT)
    # the models' ids and example inputs, the Bahdanau tutorial's sentences, the corpus samples' ids
    # (a corpus store is named by its sample: english-100)
    inputs = [m.id for m in available()] + [m.example for m in available()] + [*SEED_SENTENCES, *SAMPLES]
    allowed = ALLOWED | UNITS
    for text in found["tokens"] + inputs:
        allowed |= set(LATIN_WORD.findall(text))
    cut = sorted(found["code"] + found["chrome"] + NAMES, key=len, reverse=True)
    left = []
    for text in found["shown"]:
        for line in text.splitlines():
            rest = line
            for piece in cut:
                rest = rest.replace(piece, " ")
            for pattern in NOT_WORDS:
                rest = pattern.sub(" ", rest)
            if any(w not in allowed for w in LATIN_WORD.findall(rest)):
                left.append(line.strip()[:160])
    return sorted(set(left))


def settle(page, plots: bool = False) -> None:
    """Wait until the script has run (its figures drawn, when it has some) and the page is still."""
    page.wait_for_selector("h1", timeout=120_000)
    if plots:
        page.wait_for_selector(PLOT_DRAWN, timeout=180_000)
    page.wait_for_selector(IDLE, timeout=180_000)
    page.wait_for_load_state("networkidle")
    wait_still(page)  # plotly's resize after the last delta


def resize(page, screen: str, height: int | None = None) -> None:
    """The window as ``SCREENS[screen]`` (``height``: that many CSS px tall instead)."""
    viewport, scale = SCREENS[screen]
    size = {"width": viewport["width"], "height": height or viewport["height"]}
    devtools(page).send(METRICS, {**size, "deviceScaleFactor": scale, "mobile": False})
    page.wait_for_function(
        "([w, h, s]) => innerWidth === w && innerHeight === h && devicePixelRatio === s",
        arg=[*size.values(), scale],
    )
    wait_still(page)  # plotly's resize to the new width


def shoot(page, name: str, screen: str) -> None:
    """The visible screen, then with ``ATLAS_FULL_SHOTS=1`` the whole page: Streamlit scrolls its main
    area, not the document, so the window is made as tall as the content (the width, and so the
    layout, stays; two more redraws of every figure, a second a page)."""
    SHOTS.mkdir(exist_ok=True)
    capture(page, SHOTS / f"{name}.png")
    if not os.environ.get("ATLAS_FULL_SHOTS"):
        return
    tall = page.evaluate("document.querySelector('[data-testid=\"stMain\"]').scrollHeight")
    resize(page, screen, height=min(max(tall, SCREENS[screen][0]["height"]), 8000))
    capture(page, SHOTS / f"{name}-full.png")
    resize(page, screen)


def devtools(page):
    """The page's DevTools session (one a page: an override lasts as long as the session that set it)."""
    if page not in DEVTOOLS:
        DEVTOOLS[page] = page.context.new_cdp_session(page)
    return DEVTOOLS[page]


def capture(page, path: Path) -> None:
    """The window as drawn now. Playwright's own screenshot sets the context's viewport first, which
    undoes ``resize``: the "150 %" shots showed the 1280 × 720 layout."""
    path.write_bytes(base64.b64decode(devtools(page).send("Page.captureScreenshot", {"format": "png"})["data"]))


def check_figure_text(page, chinese: bool) -> None:
    """Every text drawn in the page's figures is 20 px or more; Chinese tick labels 24 px."""
    texts = page.evaluate(FIGURE_TEXT)
    assert texts
    small = [t for t in texts if t[0] < 20]
    assert not small, small[:5]
    if chinese:
        han = [size for size, text, where in texts if where in ("xtick", "ytick") and HAN.search(text)]
        assert han and set(han) == {24}


PLACEHOLDER = re.compile(r"%\{[^}]*\}|<[^>]*>")  # a hover template's fields and tags
HOVER = """() => [...document.querySelectorAll('.js-plotly-plot')].flatMap(p => p.data || [])
    .map(trace => trace.hovertemplate).filter(Boolean)"""


def check_projected(page, path: str, chinese: bool) -> None:
    """The checks of a page in projector mode, in either language."""
    assert page.locator(EXCEPTION_BOX).count() == 0
    assert page.evaluate(OVERFLOW) == []
    assert page.evaluate(SIDEBAR_WIDTH) == 0  # collapsed: the page gets the whole width
    assert page.evaluate(CUT) == []
    assert page.evaluate(WRAPPED) == []
    zooms = page.evaluate(TABLE_ZOOMS)
    assert all(z * 14 >= 19.9 for z in zooms), zooms
    if path == "attribution":  # its faithfulness table is on the first screen
        assert zooms
    if path == "couplets":  # 两个黄鹂鸣翠柳 in each chart along x, none thinned away
        assert all(ticks == list("两个黄鹂鸣翠柳") for ticks in page.evaluate(X_TICKS))
    if path in CHARTED:
        check_figure_text(page, chinese=path == "couplets")
    if path == "transformer":  # the line view's tokens too (issue 40 item 6: 14 px)
        sizes = page.evaluate("() => [...document.querySelectorAll('svg.atlas-line-view')].map(s => s.style.fontSize)")
        assert sizes and all(float(size.removesuffix("px")) >= 20 for size in sizes), sizes


def check_language(page, path: str, screen: str, chinese: bool) -> None:
    """The page as it is now, in one language: projected, and in Chinese with no English left."""
    assert page.get_by_role("switch", name="投影模式" if chinese else "Projector mode").is_checked()
    check_projected(page, path, chinese=chinese)
    if chinese:
        left = english_left(page)
        assert left == [], "English left on the Chinese page:\n" + "\n".join(left)
        if path == "couplets":  # the hover's words too (the tokens it names are data)
            words = [PLACEHOLDER.sub(" ", h) for h in page.evaluate(HOVER)]  # less %{y}, <br>
            assert words and all(HAN.search(w) and not LATIN_WORD.search(w) for w in words), words
    shoot(page, f"{path or 'home'}-{screen}" + ("-zh" if chinese else ""), screen)


def visit(page, url: str, path: str, screen: str, chinese: bool) -> None:
    page.goto(f"{url}/{path}?present=1" + ("&lang=zh" if chinese else ""), timeout=120_000)
    settle(page, plots=path not in NO_PLOTS)
    resize(page, screen)  # the size holds across a page load; this waits until it does
    check_language(page, path, screen, chinese)


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p or "home")
def test_every_page_fits_its_width_in_projector_mode(app_url, new_page, path):
    """At 1280 × 720 in English, then zoomed to 150 % on the open page; then in Chinese at 150 % (the
    same path with ``&lang=zh``: the server's caches are warm), where no English word of the interface
    may be left either, and back at 1280 × 720 on the open Chinese page. Two page loads, both
    languages at both sizes: a page load is what a browser test costs most."""
    with new_page(*SCREENS["1280x720"][0].values()) as page:
        visit(page, app_url, path, "1280x720", chinese=False)
        resize(page, "zoom150")
        check_language(page, path, "zoom150", chinese=False)
        visit(page, app_url, path, "zoom150", chinese=True)
        resize(page, "1280x720")
        check_language(page, path, "1280x720", chinese=True)


def test_the_long_input_head_views_controls_are_whole_at_150_percent_with_the_sidebar_open(app_url, new_page):
    """Without projector mode the sidebar stays open at 150 %: the head view's row (layer, head, cells,
    the "√ colours" toggle, clipped to "√ col…" before) still shows every label and value whole."""
    viewport, scale = SCREENS["zoom150"]
    with new_page(viewport["width"], viewport["height"], device_scale_factor=scale) as page:
        page.goto(f"{app_url}/long-input", timeout=120_000)
        settle(page, plots=True)
        assert page.evaluate(SIDEBAR_WIDTH) > 200
        assert page.get_by_text("√ colours").is_visible()
        assert page.evaluate(CUT) == []
        shoot(page, "long-input-zoom150-sidebar", "zoom150")


# Every chart's right edge, and the main area's content's (issue 40 item 4: the live views kept their width)
RIGHT_EDGES = """() => [Math.round(document.querySelector('[data-testid="stMainBlockContainer"]').getBoundingClientRect().right),
    [...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')].map(p => Math.round(p.getBoundingClientRect().right))]"""


def test_the_live_views_refit_when_the_sidebar_is_opened_in_projector_mode(app_url, new_page):
    """Transformer heads in projector mode starts with the sidebar collapsed; opened, it narrows the
    main area, and the live model and head views narrow with it (they kept their width and shifted
    right by the sidebar's, heads 10–11 and the colour bar off the screen)."""
    with new_page(*SCREENS["1280x720"][0].values()) as page:
        page.goto(f"{app_url}/transformer?present=1", timeout=120_000)
        settle(page, plots=True)
        right, charts = page.evaluate(RIGHT_EDGES)
        assert len(charts) >= 2 and max(charts) <= right + 1, (right, charts)
        open_sidebar(page)
        # the sidebar slides in: wait until the charts are inside the narrowed main area, nothing scrolling sideways
        page.wait_for_function(
            f"() => ({RIGHT_EDGES})()[1].every(r => r <= ({RIGHT_EDGES})()[0] + 1) && ({OVERFLOW})().length === 0",
            timeout=15_000,
        )
        assert page.evaluate(SIDEBAR_WIDTH) > 200
        shoot(page, "transformer-1280x720-sidebar", "1280x720")
