"""Atlas in the notebook beside BertViz 1.4.1 (issue 25): bytes of the HTML a model view sends to the
notebook, time from the call to that HTML, and (ours) time from opening the saved file in chromium
to the first paint of the model view, at 32, 128 and 512 tokens of minilm (6 × 12 heads) and
SmolLM2 (30 × 9), the same ``outputs.attentions`` and tokens handed to both.

BertViz is not a dependency: it is installed for this run only into a folder of its own
(``pip install --no-deps --target DIR bertviz==1.4.1``; IPython, which it imports, comes with the
dev requirements), and measured in a child process that has that folder on its ``PYTHONPATH``
(``bertviz``: this process imports only the venv's packages). Its HTML is what its own ``model_view(..., html_action="return")``
builds. Where that would be hundreds of megabytes (the 512-token rows) its own code is run on
layer 0 alone (``include_layers=[0]``, every head) and bytes and time are multiplied by the layers
(its JSON is one list per layer): those cells say "×L". Its page loads require.js from a CDN, so it
cannot draw offline at all; that is checked once here (its 32-token minilm file in chromium with
every request aborted).

    python -m bench.bench_notebook [--bertviz DIR] [--sizes 32 128 512] [--no-browser]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from attention_atlas.models.registry import load
from attention_atlas.notebook import model_view
from attention_atlas.notebook.assets import PLOTLY_JS
from attention_atlas.notebook.page import HEADS_BYTES
from attention_atlas.paths import DATA
from bench.results import machine, write_section

CHECKOUT = Path(__file__).resolve().parents[1]
BIG = 150_000_000  # BertViz bytes above which its own code runs on one layer and is scaled
MODELS = ("minilm", "smollm2")


def attentions(adapter, n: int):
    """``outputs.attentions`` and tokens of the first ``n`` tokens of the long-context sample."""
    text = (DATA / "long_context" / "tatoeba_en.txt").read_text(encoding="utf-8")[:20_000]
    ids = adapter.tokenizer(text, return_tensors="pt")["input_ids"][:, :n]
    with torch.no_grad():
        out = adapter.model(input_ids=ids, output_attentions=True)
    return out.attentions, adapter.tokenizer.convert_ids_to_tokens(ids[0].tolist())


def timed(fn, repeat: int):
    times, result = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), result


def ours(att, tokens, repeat: int) -> dict:
    seconds, html = timed(lambda: model_view(att, tokens, html_action="return").data, repeat)
    plotly = PLOTLY_JS.stat().st_size
    data = len(html.encode()) - plotly
    return {"seconds": seconds, "bytes": len(html.encode()), "data": data, "html": html}


def bertviz(att, tokens, layers: int, repeat: int, folder: str) -> dict:
    """``bertviz_run`` in a child process that finds bertviz in ``folder`` (its ``PYTHONPATH``): the
    attentions and tokens go to it in a file, its result comes back in another."""
    with tempfile.TemporaryDirectory(prefix="bench_bertviz_") as tmp:
        job, result = Path(tmp, "job.pt"), Path(tmp, "result.json")
        torch.save({"att": att, "tokens": tokens, "layers": layers, "repeat": repeat}, job)
        given = os.environ.get("PYTHONPATH")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([*([given] if given else []), folder])}
        cmd = [sys.executable, "-m", "bench.bench_notebook", "--bertviz-job", str(job), str(result)]
        subprocess.run(cmd, cwd=CHECKOUT, env=env, check=True)
        return json.loads(result.read_text(encoding="utf-8"))


def bertviz_job(job: Path, result: Path) -> None:
    """The child's side of ``bertviz``."""
    given = torch.load(job)
    out = bertviz_run(given["att"], given["tokens"], given["layers"], given["repeat"])
    result.write_text(json.dumps(out), encoding="utf-8")


def bertviz_run(att, tokens, layers: int, repeat: int) -> dict:
    """BertViz's own model view of ``att`` and ``tokens``: its HTML, bytes and seconds (those of layer
    0 multiplied by ``layers`` where the whole would pass ``BIG``)."""
    from bertviz import model_view as bv_model_view

    one = bv_model_view(att, tokens, include_layers=[0], html_action="return").data
    scale = layers if len(one.encode()) * layers > BIG else 1
    include = [0] if scale > 1 else None
    seconds, html = timed(
        lambda: bv_model_view(att, tokens, include_layers=include, html_action="return").data, repeat
    )
    return {
        "seconds": seconds * scale,
        "bytes": len(html.encode()) * scale,
        "scaled": scale > 1,
        "html": html,
    }


def first_paint(page, path: Path) -> float:
    """Seconds from opening the saved file (network aborted) to the model view's tiles drawn."""
    page.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:") else r.abort())
    t = time.perf_counter()
    page.goto(path.as_uri())
    page.wait_for_selector(".atlas-model-view .scatterlayer .point", state="attached", timeout=120_000)
    return time.perf_counter() - t


def plotly_alone(browser, folder: Path) -> float:
    """Median seconds, of 3, from opening a file holding only Plotly.js inline to its load event: the
    floor under any first paint of a self-contained Plotly file on this machine."""
    path = folder / "plotly_only.html"
    path.write_text(
        f"<!DOCTYPE html><html><body><script>{PLOTLY_JS.read_text(encoding='utf-8')}</script></body></html>"
    )
    times = []
    for _ in range(3):
        page = browser.new_page()
        t = time.perf_counter()
        page.goto(path.as_uri())
        times.append(time.perf_counter() - t)
        page.close()
    return statistics.median(times)


def bertviz_offline(page, html: str, folder: Path) -> bool:
    """Whether BertViz's page draws anything (an SVG) within 10 s with every request aborted."""
    path = folder / "bertviz.html"
    path.write_text(f"<!DOCTYPE html><html><body>{html}</body></html>", encoding="utf-8")
    page.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:") else r.abort())
    page.goto(path.as_uri())
    try:
        page.wait_for_selector("svg", state="attached", timeout=10_000)
        return True
    except Exception:  # Playwright's timeout: nothing drawn
        return False


def mb(n: float) -> str:
    return f"{n / 1e6:,.2f} MB" if n < 1e9 else f"{n / 1e9:,.2f} GB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--bertviz", default="/tmp/bertviz_t", help="folder where bertviz==1.4.1 is installed"
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[32, 128, 512])
    parser.add_argument("--no-browser", action="store_true")
    parser.add_argument("--bertviz-job", nargs=2, type=Path, help=argparse.SUPPRESS)  # bertviz's child
    args = parser.parse_args()
    if args.bertviz_job:
        return bertviz_job(*args.bertviz_job)
    setup = machine()
    have_bertviz = Path(args.bertviz, "bertviz").is_dir()
    rows, offline_note = [], "not checked"
    folder = Path(tempfile.mkdtemp(prefix="bench_notebook_"))
    browser_cm = None
    if not args.no_browser:
        from harness.browser import chromium_browser

        browser_cm = chromium_browser()
        browser = browser_cm.__enter__()
        floor = plotly_alone(browser, folder)
        offline_note += (
            f"; Plotly.js alone, inline in a file of its own, takes {floor:.2f} s to load here (median of 3)"
        )
    try:
        for model_id in MODELS:
            adapter = load(model_id, torch.device("cpu"))
            for n in args.sizes:
                att, tokens = attentions(adapter, n)
                repeat = 3 if n <= 128 else 1
                mine = ours(att, tokens, repeat)
                row = {"model": model_id, "n": len(tokens), "grid": f"{len(att)} × {att[0].shape[1]}", **mine}
                if browser_cm:
                    path = folder / f"{model_id}_{n}.html"
                    path.write_text(mine["html"], encoding="utf-8")
                    page = browser.new_page(viewport={"width": 1400, "height": 1000})
                    row["paint"] = first_paint(page, path)
                    page.close()
                if have_bertviz:
                    theirs = bertviz(att, tokens, len(att), repeat, args.bertviz)
                    row["bv"] = theirs
                    if browser_cm and offline_note.startswith("not checked"):
                        page = browser.new_page()
                        drew = bertviz_offline(page, theirs["html"], folder)
                        page.close()
                        said = "drew an SVG" if drew else "drew nothing in 10 s (require.js comes from cdnjs)"
                        offline_note = offline_note.replace("not checked", said)
                    theirs.pop("html")
                row.pop("html")
                rows.append(row)
                print({k: v for k, v in row.items()}, flush=True)
            del adapter
    finally:
        if browser_cm:
            browser_cm.__exit__(None, None, None)
    write_section("notebook", report(rows, setup, have_bertviz, offline_note))


def report(rows: list[dict], setup: str, have_bertviz: bool, offline_note: str) -> str:
    lines = [
        "## Atlas in the notebook beside BertViz 1.4.1 (`python -m bench.bench_notebook`)",
        "",
        f"Machine: {setup}. The same `outputs.attentions` (eager, float32, CPU) and tokens to both; "
        '`model_view(..., html_action="return")` timed from the call to the HTML string (median of 3 '
        "up to 128 tokens, 1 run at 512). Ours: one self-contained file, Plotly.js "
        f"({mb(PLOTLY_JS.stat().st_size)}) inline, so 'data' is the file less Plotly.js; first paint is "
        "chromium opening the saved file from disk with every other request aborted, until the model "
        "view's tiles are drawn (including parsing the 4.8 MB of Plotly.js). Every head rides in the file "
        f"(16 bits each) up to {HEADS_BYTES / 1e6:.0f} MB of them; past that (SmolLM2 at 512) the file holds the tiles "
        "and the one head it opens with, so its ratio is not like for like. BertViz: its own code's HTML; "
        "×L: run on layer 0 only and multiplied by the layers (its JSON is one list per layer). "
        f"BertViz offline: its 32-token minilm page in chromium with every request aborted {offline_note}.",
        "",
        "| model | tokens | heads | ours: every head in the file | ours: file | ours: data | ours: call → HTML | ours: first paint | BertViz: HTML | BertViz: call → HTML | BertViz ÷ ours (file) | BertViz ÷ ours (data) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        bv = r.get("bv")
        paint = f"{r['paint']:.2f} s" if "paint" in r else "—"
        if bv and have_bertviz:
            mark = " (×L)" if bv["scaled"] else ""
            cells = (
                f"{mb(bv['bytes'])}{mark} | {bv['seconds']:.2f} s{mark} | "
                f"{bv['bytes'] / r['bytes']:.1f}× | {bv['bytes'] / r['data']:.0f}×"
            )
        else:
            cells = "— | — | — | —"
        layers, heads = (int(x) for x in r["grid"].split(" × "))
        every = "yes" if layers * heads * r["n"] ** 2 * 2 <= HEADS_BYTES else "no: tiles and one head"
        lines.append(
            f"| {r['model']} | {r['n']} | {r['grid']} | {every} | {mb(r['bytes'])} | {mb(r['data'])} | "
            f"{r['seconds']:.2f} s | {paint} | {cells} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
