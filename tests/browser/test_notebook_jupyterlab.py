"""The example notebook in a real JupyterLab, in chromium, offline (issue 25): JupyterLab on
loopback runs every cell of ``examples/atlas_in_a_notebook.ipynb``; each view is a live widget
that draws; a tile click and an arrow key open heads the kernel sends, equal to the model's own
``outputs.attentions``; the head view's layer selector brings that layer's lines from the kernel;
and no request leaves the machine."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from harness.jupyter import jupyterlab, loopback_only, run_notebook
from tests.support import SHOTS, assert_lines, click_tile, minilm_loaded

pytestmark = [pytest.mark.browser, pytest.mark.slow]

NOTEBOOK = "atlas_in_a_notebook.ipynb"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / NOTEBOOK
TEXT = "The cat sat on the mat because it was tired."  # the example's first text


def views_expected() -> int:
    """The example's cells whose output is a view: those ending in a call that returns one."""
    cells = json.loads(EXAMPLE.read_text(encoding="utf-8"))["cells"]
    last = ["".join(c["source"]).strip().splitlines()[-1] for c in cells if c["cell_type"] == "code"]
    return sum(line.startswith(("model_view(", "head_view(", "line_view(", "show(", "view")) for line in last)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("lab")
    shutil.copy(EXAMPLE, root / NOTEBOOK)
    with jupyterlab(root) as url:
        yield url, root


def head_title(view) -> str:
    return view.locator(".atlas-head-view .gtitle").text_content()


def drawn_z(page, index: int) -> np.ndarray:
    return np.array(
        page.evaluate(
            f"Array.from(document.querySelectorAll('.atlas-widget')[{index}]"
            ".querySelector('.atlas-head-view .js-plotly-plot')._fullData[0].z, r => Array.from(r))"
        )
    )


@contextlib.contextmanager
def lab_page(chromium, url: str):
    """A page of its own on JupyterLab at ``url``, every request off the machine aborted:
    ``(page, what was tried off the machine, the page's errors)``."""
    context = chromium.new_context(viewport={"width": 1400, "height": 1000})
    page, errors = context.new_page(), []
    tried = loopback_only(page, url)
    page.on("pageerror", lambda err: errors.append(str(err)))
    try:
        yield page, tried, errors
    finally:
        context.close()


def comm_picks(page) -> list[str]:
    """The heads the page asks its kernel for, as they leave on the kernel's websocket: a failed
    wait can then say whether the click was lost in the page or its answer in the kernel."""
    picks: list[str] = []

    def watch(ws):
        ws.on("framesent", lambda frame: picks.append(frame) if '"pick"' in str(frame) else None)

    page.on("websocket", watch)
    return picks


def wait_for_head(page, title: str, picks: list[str]) -> None:
    """Wait for the first widget's head view to be titled ``title`` (a kernel round trip: slow on
    a loaded machine); on a timeout, say what the page had asked its kernel for."""
    try:
        page.wait_for_function(
            f"document.querySelector('.atlas-widget .atlas-head-view .gtitle').textContent === {title!r}",
            timeout=90_000,
        )
    except Exception as err:
        page.screenshot(path=str(SHOTS / "jupyterlab_lost_click.png"))
        sent = [str(p)[-160:] for p in picks]  # each frame ends with its content
        raise AssertionError(f"{title!r} was not drawn in 90 s; picks sent to the kernel: {sent}") from err


def test_the_example_runs_in_jupyterlab_offline_and_its_widgets_answer(chromium, lab):
    url, root = lab
    with lab_page(chromium, url) as (page, tried, errors):
        picks = comm_picks(page)
        run_notebook(page, url, NOTEBOOK)
        widgets = page.locator(".atlas-widget")
        widgets.nth(views_expected() - 1).locator(".js-plotly-plot").first.wait_for(timeout=60_000)
        assert widgets.count() == views_expected()
        assert page.get_by_text("could not be drawn").count() == 0
        assert (root / "minilm_model_view.html").stat().st_size > 1e6  # view.save(...) in the example

        page.wait_for_function(  # every widget's opening head drawn: the kernel has answered them all
            "[...document.querySelectorAll('.atlas-widget .atlas-head-view')].every(h => h.querySelector('.gtitle'))",
            timeout=120_000,
        )
        first = widgets.nth(0)  # model_view(outputs.attentions, tokens): minilm, 6 × 12
        assert first.locator(".atlas-model-view .scatterlayer .point").count() == 6 * 12
        click_tile(page, 1, 5, chart=first.locator(".atlas-model-view .js-plotly-plot").first)
        wait_for_head(page, "layer 1, head 5", picks)
        weights = torch.cat(minilm_loaded(TEXT)["attentions"]).numpy()
        np.testing.assert_allclose(drawn_z(page, 0), weights[1, 5], rtol=2**-10, atol=1e-6)  # 16-bit, as sent
        first.locator(".atlas-head-view .js-plotly-plot").click()
        page.keyboard.press("ArrowDown")
        wait_for_head(page, "layer 2, head 5", picks)
        np.testing.assert_allclose(drawn_z(page, 0), weights[2, 5], rtol=2**-10, atol=1e-6)
        head = widgets.nth(1)  # head_view(outputs.attentions, tokens, layer=2, heads=[0, 3])
        assert_lines(head, weights, 2, [0, 3])
        head.locator("select.atlas-layer-select").select_option("4")  # layer 4's lines come from the kernel
        lines = head.locator(".atlas-line-view-box").element_handle()
        page.wait_for_function("box => box.style.opacity === ''", arg=lines, timeout=90_000)
        assert_lines(head, weights, 4, [0, 3])
        assert tried == [] and errors == []


LONG = "long_view.ipynb"
LONG_CELL = """from transformers import AutoTokenizer
from attention_atlas.models.adapters.minilm import model_folder
from attention_atlas.notebook import show
from harness.tiny_variants import tiny_variant
model = tiny_variant("qwen2_no_window", num_hidden_layers=2, max_position_embeddings=4096)
tokenizer = AutoTokenizer.from_pretrained(model_folder(), model_max_length=4096)
show(model, tokenizer, " ".join(["the cat sat on the mat ."] * 300), layer=1, heads=2)"""


def test_a_box_on_the_long_view_widget_opens_its_tokens_at_full_resolution(chromium, lab):
    """show() past 1,024 tokens as a live widget: a box dragged on the overview gets the window
    of tokens under it from the kernel, drawn below with its token ranges in the title."""
    import nbformat

    url, root = lab
    kernel = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(LONG_CELL)], metadata={"kernelspec": kernel})
    nbformat.write(notebook, root / LONG)
    with lab_page(chromium, url) as (page, tried, errors):
        run_notebook(page, url, LONG)
        overview = page.locator(".atlas-widget .js-plotly-plot").nth(1)
        overview.wait_for(timeout=60_000)
        overview.scroll_into_view_if_needed()
        area = overview.locator(".nsewdrag").first.bounding_box()
        x, y = area["x"] + area["width"] * 0.4, area["y"] + area["height"] * 0.4
        page.mouse.move(x, y)
        page.mouse.down()
        page.mouse.move(x + area["width"] * 0.05, y + area["height"] * 0.05, steps=5)
        page.mouse.up()
        title = page.locator(".atlas-window .gtitle")
        title.wait_for(timeout=60_000)
        assert title.text_content().startswith("layer 1, head 2: queries ")
        assert "every token" in title.text_content()
        assert tried == [] and errors == []


# -- a notebook saved with its views, reopened before anything runs (issue 41, item 10) -------------

SAVED = "saved_views.ipynb"
SAVED_CELLS = [
    """import numpy as np
from attention_atlas.notebook import head_view, model_view
scores = np.random.default_rng(0).normal(size=(2, 3, 6, 6))
weights = (np.exp(scores) / np.exp(scores).sum(-1, keepdims=True)).astype(np.float32)
tokens = ["the", "cat", "sat", "on", "the", "mat"]
model_view(weights, tokens)""",
    "head_view(weights, tokens, layer=1, heads=[0, 2])",
]
# What each view has drawn: its charts, the title of its head view, its line view's lines, and
# whether a widget said it could not be displayed.
DRAWN = """() => {
  const node = window.jupyterapp.shell.currentWidget.node;
  const views = [...node.querySelectorAll('.atlas-widget')].map((w) => ({
    charts: w.querySelectorAll('.js-plotly-plot').length,
    tiles: w.querySelectorAll('.atlas-model-view .scatterlayer .point').length,
    head: w.querySelector('.atlas-head-view .gtitle')?.textContent ?? null,
    lines: w.querySelectorAll('.atlas-line-view-box svg line, .atlas-line-view-box svg path').length,
  }));
  return {views, failed: /Error displaying widget|Loading widget/.test(node.textContent)};
}"""
# The widgets the kernel holds: none, when every view on the page came from the saved state.
IN_KERNEL = (
    "window.jupyterapp.shell.currentWidget.sessionContext.session.kernel"
    ".requestCommInfo({target_name: 'jupyter.widget'}).then(r => Object.keys(r.content.comms).length)"
)
KERNEL = "!!window.jupyterapp.shell.currentWidget.sessionContext.session?.kernel"
EVERY_HEAD = "[...document.querySelectorAll('.atlas-widget .atlas-head-view .gtitle')].length === 2"


def saved_notebook(root: Path) -> None:
    import nbformat

    kernel = {"name": "python3", "display_name": "Python 3", "language": "python"}
    cells = [nbformat.v4.new_code_cell(source) for source in SAVED_CELLS]
    nbformat.write(nbformat.v4.new_notebook(cells=cells, metadata={"kernelspec": kernel}), root / SAVED)


def save_and_shut_down(page) -> None:
    """Save the open notebook (JupyterLab writes the widget state into it), then shut its kernel down."""
    page.evaluate(
        "async () => { const app = window.jupyterapp; await app.commands.execute('docmanager:save');"
        " await app.shell.currentWidget.sessionContext.shutdown(); }"
    )


def reopen(page, url: str, kernel: bool) -> None:
    """Open the saved notebook on a fresh page: with the kernel JupyterLab starts for it (nothing
    runs), or with none (as "No Kernel" in its kernel picker: the notebook factory told not to start one)."""
    page.goto(f"{url}/lab?reset")
    page.wait_for_function("window.jupyterapp?.started !== undefined", timeout=60_000)
    page.evaluate(
        "async ({path, kernel}) => { const app = window.jupyterapp; await app.started; await app.restored;"
        " if (!kernel) app.docRegistry.getWidgetFactory('Notebook')._preferKernel = false;"
        " await app.commands.execute('docmanager:open', {path}); }",
        {"path": SAVED, "kernel": kernel},
    )


STATE = "application/vnd.jupyter.widget-state+json"


def models_saved(root: Path) -> int:
    """How many widget models the saved notebook holds."""
    metadata = json.loads((root / SAVED).read_text(encoding="utf-8"))["metadata"]
    state = metadata.get("widgets", {}).get(STATE, {})
    return len(state.get("state", {}))


def exported_views_carry_their_state(path: Path) -> None:
    """nbconvert's HTML of the saved notebook: each view's output names a model whose state (its
    spec, the head it showed, Plotly.js by reference) is in the page, for the widgets' HTML manager
    (which nbconvert's page loads from a CDN) to draw."""
    from nbconvert import HTMLExporter

    html, _ = HTMLExporter().from_filename(str(path))

    def scripts(mime: str) -> list[str]:
        return re.findall(f'<script type="{re.escape(mime)}">(.*?)</script>', html, re.S)

    state, outputs = json.loads(scripts(STATE)[0])["state"], scripts("application/vnd.jupyter.widget-view+json")
    assert len(outputs) == len(SAVED_CELLS)
    for output in outputs:
        view = state[json.loads(output)["model_id"]]["state"]
        assert view["spec"]["sections"] and view["drawn"]
        assert view["plotly"].removeprefix("anywidget:") in state


def test_a_saved_notebook_shows_its_views_when_reopened_before_anything_runs(chromium, lab):
    """Run, save, shut the kernel down; reopened (JupyterLab starts a kernel, nothing runs) the
    views draw as they were, and still after that reopened notebook is saved again (an autosave
    would: restoring marks it changed). With no kernel at all JupyterLab draws no widget."""
    url, root = lab
    saved_notebook(root)
    with lab_page(chromium, url) as (page, tried, errors):
        run_notebook(page, url, SAVED)
        page.wait_for_function(EVERY_HEAD, timeout=120_000)
        drawn = page.evaluate(DRAWN)
        save_and_shut_down(page)
    assert drawn["views"][0]["tiles"] == 2 * 3 and drawn["views"][1]["lines"] > 0, drawn
    assert not drawn["failed"]
    assert models_saved(root) >= 3  # two views and Plotly.js (and their layouts)
    exported_views_carry_their_state(root / SAVED)
    for shot in ("reopened", "saved_again"):
        with lab_page(chromium, url) as (page, tried_again, errors_again):
            reopen(page, url, kernel=True)
            page.wait_for_function(EVERY_HEAD, timeout=60_000)
            page.screenshot(path=str(SHOTS / f"jupyterlab_{shot}.png"))
            assert page.evaluate(DRAWN) == drawn, shot
            assert page.evaluate(IN_KERNEL) == 0
            save_and_shut_down(page)
            assert tried_again == [] and errors_again == []
        assert models_saved(root) >= 3, shot
    with lab_page(chromium, url) as (page, _, _):
        # jupyterlab_widgets 3.0.17 keeps one widget manager per kernel (plugin.ts:
        # getWidgetManagerOwner reads session.kernel.id): with none, every widget stays "Loading widget..."
        reopen(page, url, kernel=False)
        page.wait_for_timeout(10_000)
        assert page.evaluate(KERNEL) is False and page.evaluate(DRAWN) == {"views": [], "failed": True}
    assert tried == [] and errors == []
