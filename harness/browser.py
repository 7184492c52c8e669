"""Start the app with `streamlit run` and drive Debian's chromium through Playwright.

Shared by the browser tests and the cold-start benchmark.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(url: str, timeout: float, proc: subprocess.Popen | None = None) -> None:
    """Return once ``url``/_stcore/health answers 200; raise with the reason after ``timeout`` s
    (or at once when ``proc``, the server, has exited)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        if (proc is not None and proc.poll() is not None) or time.monotonic() > deadline:
            raise RuntimeError(f"no healthy streamlit at {url} within {timeout:.0f} s")
        time.sleep(0.2)


@contextlib.contextmanager
def streamlit_server(script: str = "app.py", timeout: float = 60.0) -> Iterator[str]:
    """Run ``streamlit run <script>`` on 127.0.0.1 and yield its base URL once it answers."""
    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        script,
        "--server.address",
        "127.0.0.1",
        "--server.port",
        str(port),
        "--server.headless",
        "true",
        "--browser.gatherUsageStats",
        "false",
    ]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        try:
            wait_healthy(url, timeout, proc)
        except RuntimeError as err:
            out = proc.stdout.read() if proc.poll() is not None else ""
            raise RuntimeError(f"streamlit did not start on {url}: {out[-2000:]}") from err
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def chromium_missing() -> str | None:
    if not Path(CHROMIUM).exists() and not shutil.which("chromium"):
        return f"Debian's chromium is not installed at {CHROMIUM} (make test installs it)"
    return None


@contextlib.contextmanager
def browser_page(width: int = 1400, height: int = 1000):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser.new_page(viewport={"width": width, "height": height})
        finally:
            browser.close()


def hover_tile(page, layer: int, head: int, heads: int) -> None:
    """Rest the mouse on tile (layer, head) of the page's first chart (the model view), as a person
    would before clicking: the tile itself scrolled into view (a 30-layer grid is taller than a
    720-pixel window), then a moment for Plotly's hover."""
    tile = page.locator(".js-plotly-plot").first.locator(".scatterlayer .point").nth(layer * heads + head)
    tile.scroll_into_view_if_needed()
    box = tile.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_timeout(300)
