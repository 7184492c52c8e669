"""The notebook's live widget in a real JupyterLab (issue 25: bytes sent to the notebook and time
from cell run to first paint, beside BertViz 1.4.1 on the same tokens and model).

JupyterLab runs on loopback with a notebook of our making; chromium (every request off the
machine aborted) runs its cells one by one. For minilm (6 × 12) and SmolLM2 (30 × 9) at 32, 128
and 512 tokens of the long-context sample, a cell computes ``outputs.attentions`` (eager) and the
next shows ``model_view(outputs.attentions, tokens)``; that second cell is measured:

- **bytes to the notebook**: every websocket frame the page received from the cell's run to its
  view drawn (the widget's state, the kernel's status and reply messages), but those of
  JupyterLab's debugger, which inspects the kernel's variables after each cell whatever it showed;
- **first paint**: from the run command to the model view's tiles drawn (as ``bench_notebook``
  times a saved file), and to its head view drawn too (the page asks for it once the tiles are
  on their way); the view cell runs three times, each with its own output, and the medians count;
- **a click**: a tile clicked to its head drawn (a message to the kernel, the head's figure back).

Plotly.js (1.5 MB gzipped, a model every view refers to) goes to the page once, at the first widget (a warm-up cell here), and is
reported apart. BertViz's bytes are its own HTML for the same ``outputs.attentions`` and tokens
(its ``model_view(..., html_action="return")``; past 150 MB run on layer 0 and multiplied, as in
``bench_notebook``), computed by ``bench_notebook.bertviz`` when bertviz is installed in ``--bertviz``.

Run: python -m bench.bench_notebook_live [--bertviz /tmp/bertviz_t] [--sizes 32 128 512]
"""

from __future__ import annotations

import argparse
import re
import statistics
import tempfile
import time
from pathlib import Path

import nbformat
import torch

from attention_atlas.models.registry import load
from bench.bench_notebook import MODELS, attentions, bertviz
from bench.results import machine, write_section
from harness.browser import chromium_browser
from harness.jupyter import READY, jupyterlab, loopback_only

REPEAT = 3  # runs of each view cell: the paints reported are their medians
SETUP = f"""import torch
from attention_atlas.models.registry import load
from attention_atlas.notebook import model_view
from bench.bench_notebook import attentions
adapters = {{m: load(m, torch.device("cpu")) for m in {list(MODELS)!r}}}
model_view(*attentions(adapters["minilm"], 8))  # the page's first widget: Plotly.js comes with it"""

# Run cell `index` (not awaited); the milliseconds from the run command until the newest widget's
# model view has drawn its `points` tiles (first paint), and until its head view has a title too.
RUN_AND_PAINT = """async ([index, points]) => {
  const app = window.jupyterapp, panel = app.shell.currentWidget;
  const before = document.querySelectorAll('.atlas-widget').length;
  panel.content.activeCellIndex = index;
  const t0 = performance.now();
  let tiles = null;
  app.commands.execute('notebook:run-cell');
  for (;;) {
    const all = document.querySelectorAll('.atlas-widget');
    const w = all.length > before ? all[all.length - 1] : null;
    if (tiles === null && w && w.querySelectorAll('.atlas-model-view .scatterlayer .point').length === points) {
      tiles = performance.now() - t0;
    }
    if (tiles !== null && w.querySelector('.atlas-head-view .gtitle')) return [tiles, performance.now() - t0];
    await new Promise((r) => requestAnimationFrame(r));
  }
}"""
RUN = """async (index) => {
  const app = window.jupyterapp;
  app.shell.currentWidget.content.activeCellIndex = index;
  await app.commands.execute('notebook:run-cell');
}"""


def notebook(sizes: list[int]) -> nbformat.NotebookNode:
    cells = [nbformat.v4.new_code_cell(SETUP)]
    for model_id in MODELS:
        for n in sizes:
            cells.append(nbformat.v4.new_code_cell(f"att, tokens = attentions(adapters[{model_id!r}], {n})"))
            cells.extend(nbformat.v4.new_code_cell("model_view(att, tokens)") for _ in range(REPEAT))
    kernel = {"name": "python3", "display_name": "Python 3", "language": "python"}  # no kernel dialog
    return nbformat.v4.new_notebook(cells=cells, metadata={"kernelspec": kernel})


class Frames:
    """Bytes of every websocket frame the page receives, but JupyterLab's debugger's: after each cell
    its sidebar asks the kernel to inspect the variables (``debug_reply``, 0.5–0.9 MB here whatever
    the cell showed), counted apart in ``debugger``."""

    def __init__(self, page):
        self.bytes = self.debugger = 0
        page.on("websocket", lambda ws: ws.on("framereceived", self._add))

    def _add(self, payload) -> None:
        data = payload.encode() if isinstance(payload, str) else payload
        kind = re.search(rb'"msg_type":\s*"(\w+)"', data[:4096])
        if kind and kind.group(1) == b"debug_reply":
            self.debugger += len(data)
        else:
            self.bytes += len(data)


def click_seconds(page, grid: tuple[int, int]) -> float:
    """A tile of the newest widget clicked (the middle layer's last head) to its head drawn."""
    layers, heads = grid
    layer, head = layers // 2, heads - 1
    widget = page.locator(".atlas-widget").last
    tile = widget.locator(".atlas-model-view .scatterlayer .point").nth(layer * heads + head)
    tile.scroll_into_view_if_needed()
    box = tile.bounding_box()
    t = time.perf_counter()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    widget.locator(".atlas-head-view .gtitle", has_text=f"layer {layer}, head {head}").wait_for(timeout=60_000)
    return time.perf_counter() - t


def measure(page, frames: Frames, sizes: list[int]) -> list[dict]:
    """Each view cell run ``REPEAT`` times (one output each): the median paints, the first run's
    bytes, the last view's click."""
    rows, index = [], 1
    grids = {"minilm": (6, 12), "smollm2": (30, 9)}
    for model_id in MODELS:
        points = grids[model_id][0] * grids[model_id][1]
        for n in sizes:
            page.evaluate(RUN, index)
            runs = []
            for i in range(REPEAT):
                start = frames.bytes
                runs.append([t / 1000 for t in page.evaluate(RUN_AND_PAINT, [index + 1 + i, points])])
                page.wait_for_timeout(300)  # the reply and status messages after the output
                runs[-1].append(frames.bytes - start)
            tiles, head = (statistics.median(r[k] for r in runs) for k in (0, 1))
            row = {"model": model_id, "n": n, "bytes": runs[0][2], "paint": tiles, "head": head}
            row["paints"] = [r[0] for r in runs]
            row["click"] = click_seconds(page, grids[model_id])
            rows.append(row)
            print(row, flush=True)
            index += 1 + REPEAT
    return rows


def run_lab(sizes: list[int]) -> tuple[list[dict], dict]:
    root = Path(tempfile.mkdtemp(prefix="bench_notebook_live_"))
    nbformat.write(notebook(sizes), root / "live.ipynb")
    with jupyterlab(root) as url, chromium_browser() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        tried = loopback_only(page, url)
        frames = Frames(page)
        page.goto(f"{url}/lab/tree/live.ipynb")
        page.wait_for_function(READY, timeout=120_000, polling=500)
        before = frames.bytes
        t = time.perf_counter()
        page.evaluate(RUN, 0)
        page.locator(".atlas-widget .atlas-head-view .gtitle").first.wait_for(timeout=300_000)
        setup = {"bytes": frames.bytes - before, "seconds": time.perf_counter() - t}
        rows = measure(page, frames, sizes)
        setup["tried"] = tried
    return rows, setup


def theirs(sizes: list[int], folder: str) -> dict:
    """BertViz's HTML bytes for the same attentions and tokens, by (model, n)."""
    if not Path(folder, "bertviz").is_dir():
        return {}
    out = {}
    for model_id in MODELS:
        adapter = load(model_id, torch.device("cpu"))
        for n in sizes:
            att, tokens = attentions(adapter, n)
            out[model_id, n] = bertviz(att, tokens, len(att), 1, folder)
            out[model_id, n].pop("html")
    return out


def report(rows: list[dict], setup: dict, bv: dict) -> str:
    mb = lambda b: f"{b / 1e6:.2f} MB"  # noqa: E731
    lines = [
        "## The notebook's live widget in JupyterLab, beside BertViz 1.4.1 (`python -m bench.bench_notebook_live`)",
        "",
        f"{machine()}. JupyterLab {__import__('jupyterlab').__version__} on loopback, chromium with every request "
        f"off the machine aborted ({len(setup['tried'])} tried). Bytes: every websocket frame the page received "
        "from the cell's run until its view was drawn, but JupyterLab's debugger's variable inspection after each "
        "cell (`debug_reply`, the same whatever the cell shows). First paint: from the run command to the model view's "
        f"tiles drawn, the median of {REPEAT} runs of the cell (each run's in brackets); then its head view (median), "
        "which the page asks the kernel for once the tiles are on their way. Click: a tile to its head drawn, the kernel sending the head. The page's first widget "
        f"(a warm-up cell, with loading both models) brought Plotly.js: {mb(setup['bytes'])} in all, "
        f"{setup['seconds']:.1f} s. BertViz: its own HTML for the same `outputs.attentions` and tokens "
        "(×L: layer 0 multiplied by the layers); offline it draws nothing (require.js from cdnjs).",
        "",
        "| model | tokens | ours: bytes to the notebook | first paint (tiles) | head view drawn | click → head | BertViz: HTML | BertViz ÷ ours |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        b = bv.get((r["model"], r["n"]))
        theirs_cell = f"{mb(b['bytes'])}{' (×L)' if b['scaled'] else ''}" if b else "not installed"
        ratio = f"{b['bytes'] / r['bytes']:,.0f}×" if b else ""
        lines.append(
            f"| {r['model']} | {r['n']} | {mb(r['bytes'])} | {r['paint']:.2f} s ({', '.join(f'{p:.2f}' for p in r['paints'])}) | {r['head']:.2f} s | {r['click']:.2f} s "
            f"| {theirs_cell} | {ratio} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bertviz", default="/tmp/bertviz_t", help="folder where bertviz==1.4.1 is installed")
    parser.add_argument("--sizes", type=int, nargs="+", default=[32, 128, 512])
    args = parser.parse_args()
    rows, setup = run_lab(args.sizes)
    bv = theirs(args.sizes, args.bertviz)
    text = report(rows, setup, bv)
    print(text)
    write_section("notebook_live", text)


if __name__ == "__main__":
    main()
