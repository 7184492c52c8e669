"""Start the app (``serve.launcher``) and drive Debian's chromium through Playwright.

Shared by the browser tests and the cold-start benchmark.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from attention_atlas.paths import APP
from attention_atlas.serve.launcher import default_log, free_port, serve, stop, wait_healthy
from attention_atlas.serve.process import launch_env

CHROMIUM = os.environ.get("ATLAS_CHROMIUM", "/usr/bin/chromium")
# Offline machine: without these, chromium keeps trying to reach Google's services.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
PLOT_DRAWN = ".js-plotly-plot .main-svg .cartesianlayer"
EXCEPTION_BOX = '[data-testid="stException"]'
# Resolves once the page's layout (the size of each figure and of Streamlit's main area) has stayed
# the same for ``quiet`` ms: Plotly redraws a figure to its container's width after it arrives.
STILL = """async ([quiet, limit]) => {
  const shape = () => JSON.stringify([
    ...[...document.querySelectorAll('.js-plotly-plot')].map(p => {
      const box = p.getBoundingClientRect(); return [box.width, box.height, p._fullLayout?.width];
    }),
    document.querySelector('[data-testid="stMain"]')?.scrollHeight]);
  const start = performance.now();
  let last = shape(), since = start;
  while (performance.now() - since < quiet) {
    if (performance.now() - start > limit) return false;
    await new Promise(r => setTimeout(r, 50));
    const now = shape();
    if (now !== last) [last, since] = [now, performance.now()];
  }
  return true;
}"""


@contextlib.contextmanager
def streamlit_server(
    script: Path | str = APP, timeout: float = 60.0, env: dict[str, str] | None = None
) -> Iterator[str]:
    """The app (or ``script``) served on 127.0.0.1 by ``serve.launcher``, with ``env`` on top of this
    process's environment; yields its base URL once it answers."""
    with serve(timeout=timeout, script=script, env=env) as server:
        yield server.url


@contextlib.contextmanager
def plain_streamlit_run(folder: Path, timeout: float = 90.0) -> Iterator[str]:
    """``streamlit run app.py`` in ``folder`` as a person types it: a port and headless, none of
    ``serve.launcher``'s options nor the tuning it puts in the environment (``launch_env``); yields
    the base URL once it answers, and stops the server afterwards."""
    port = free_port()
    streamlit = shutil.which("streamlit", path=str(Path(sys.executable).parent)) or "streamlit"
    cmd = [streamlit, "run", "app.py", "--server.port", str(port), "--server.headless", "true"]
    env = {k: v for k, v in os.environ.items() if k not in launch_env()}
    log = default_log(port)
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=folder, stdout=out, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        try:
            wait_healthy(url, timeout, proc)
        except RuntimeError as err:
            raise RuntimeError(f"{err}: {log.read_text(errors='replace')[-2000:]}") from err
        yield url
    finally:
        stop(proc)


def server_log(url: str) -> Path:
    """Where ``serve.launcher`` writes the output of the server at ``url`` (its default log path)."""
    return default_log(url.rsplit(":", 1)[1].split("/")[0])


def chromium_missing() -> str | None:
    if not Path(CHROMIUM).exists() and not shutil.which("chromium"):
        return f"Debian's chromium is not installed at {CHROMIUM} (make test installs it)"
    return None


@contextlib.contextmanager
def chromium_browser():
    """Debian's chromium, headless, through Playwright; closed afterwards. Open pages on it with
    ``browser.new_context(viewport=...).new_page()`` (each context: its own cookies and sessions)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@contextlib.contextmanager
def browser_page(width: int = 1400, height: int = 1000):
    """One page in a chromium of its own (``chromium_browser``), ``width`` × ``height`` CSS pixels."""
    with chromium_browser() as browser:
        yield browser.new_page(viewport={"width": width, "height": height})


def wait_still(page, quiet_ms: int = 400, timeout_ms: int = 30_000) -> None:
    """Wait until the page's layout has not moved for ``quiet_ms`` (``STILL``), instead of a fixed
    sleep after the last delta; fails if it is still moving after ``timeout_ms``."""
    assert page.evaluate(STILL, [quiet_ms, timeout_ms]), f"the page still moved after {timeout_ms} ms"


def hover_tile(page, layer: int, head: int, heads: int, chart=None) -> None:
    """Rest the mouse on tile (layer, head) of the model view ``chart`` (default: the page's first
    chart) as a person would before clicking: the tile itself scrolled into view (a 30-layer grid
    is taller than a 720-pixel window), until Plotly's hover names that head. A redraw (thumbnails
    still arriving) drops the hover, so the mouse moves again until the label stays."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    chart = chart or page.locator(".js-plotly-plot").first
    tile = chart.locator(".scatterlayer .point").nth(layer * heads + head)
    tile.scroll_into_view_if_needed()
    box = tile.bounding_box()
    label = chart.locator(".hoverlayer .hovertext", has_text=f"layer {layer}, head {head}")
    for nudge in range(20):
        page.mouse.move(box["x"] + box["width"] / 2 + nudge % 2, box["y"] + box["height"] / 2)
        try:
            label.wait_for(timeout=1000)
            return
        except PlaywrightTimeout:
            continue
    raise AssertionError(f"Plotly's hover never named layer {layer}, head {head} under the mouse")


def open_sidebar(page) -> None:
    """Projector mode starts with the sidebar collapsed: open it as a visitor does (»)."""
    expand = page.locator('[data-testid="stExpandSidebarButton"]')
    if expand.count() and expand.is_visible():
        expand.click()
    page.locator('[data-testid="stSidebarNav"]').wait_for(state="visible", timeout=30_000)
