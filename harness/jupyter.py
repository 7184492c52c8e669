"""JupyterLab on loopback, for the notebook's browser test and benchmark: a server in a folder of
its own, no token, the app object exposed to the page so that a test can run every cell. Its
kernels find this checkout first on their ``PYTHONPATH``: its package, ``harness/`` and ``bench/``."""

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

CHECKOUT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def jupyterlab(root: Path, timeout: float = 90.0) -> Iterator[str]:
    """JupyterLab serving ``root`` on 127.0.0.1; yields its base URL once it answers. Its output
    goes to ``root/jupyterlab.log``. Its settings' defaults are the checkout's (``lab_settings``)."""
    port = free_port()
    command = [
        sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
        f"--ServerApp.root_dir={root}", "--IdentityProvider.token=", "--ServerApp.password=",
        "--ServerApp.disable_check_xsrf=True", "--LabApp.expose_app_in_browser=True",
        "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--LabApp.extension_manager=readonly", "--allow-root", f"--LabApp.app_settings_dir={lab_settings(root)}",
    ]  # fmt: skip
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(root / ".jupyter"),
        "JUPYTER_RUNTIME_DIR": str(root / ".jupyter"),
        "PYTHONPATH": pythonpath(CHECKOUT),
    }
    with open(root / "jupyterlab.log", "wb") as log:
        server = subprocess.Popen(command, cwd=root, stdout=log, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait(url + "/api/status", server, timeout)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(15)
        except subprocess.TimeoutExpired:
            server.kill()


def lab_settings(root: Path) -> Path:
    """An app settings folder under ``root`` holding the overrides the package installs
    (``jupyter-config/lab-settings``: a wheel puts them in ``share/jupyter/lab/settings/overrides.d``),
    as the kernels run the checkout's package rather than the installed one."""
    folder = root / ".jupyter" / "lab-settings"
    (folder / "overrides.d").mkdir(parents=True, exist_ok=True)
    for source in (CHECKOUT / "jupyter-config" / "lab-settings").glob("*.json"):
        shutil.copy(source, folder / "overrides.d" / source.name)
    return folder


def pythonpath(*first: Path | str) -> str:
    """``PYTHONPATH`` for a child process: ``first``, then this process's own ``PYTHONPATH``."""
    given = os.environ.get("PYTHONPATH", "")
    return os.pathsep.join([*map(str, first), *([given] if given else [])])


def _wait(url: str, server: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"JupyterLab exited with {server.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError(f"JupyterLab did not answer at {url} in {timeout:.0f} s")


# The notebook's own kernel is up and idle (JupyterLab's status bar can say idle before then).
READY = "window.jupyterapp?.shell.currentWidget?.sessionContext?.session?.kernel?.status === 'idle'"
def loopback_only(page, base: str) -> list[str]:
    """Abort every request of ``page`` that is not to ``base`` (or a blob or data URL); the list of
    what was tried and aborted (it stays empty when nothing leaves the machine)."""
    tried: list[str] = []

    def route(r):
        ok = r.request.url.startswith((base, "blob:", "data:"))
        (r.continue_ if ok else r.abort)()
        if not ok:
            tried.append(r.request.url)

    page.route("**/*", route)
    return tried


RUN_ALL = "() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }"  # not awaited
# Every code cell of the open notebook has run (each prompt holds a number: a running cell shows
# [*], an unrun one [ ]), or one failed (a traceback stops the run): the traceback's text, else
# null while waiting.
DONE = """() => {
  const notebook = window.jupyterapp.shell.currentWidget.node;
  const failed = notebook.querySelector('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"] pre, .jp-RenderedText[data-mime-type="application/vnd.jupyter.error"]');
  if (failed && /Error|Traceback/.test(failed.textContent)) return {error: failed.textContent.slice(-3000)};
  const prompts = Array.from(notebook.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt'));
  const done = prompts.length > 0 && prompts.every((p) => /\\[\\d+\\]/.test(p.textContent));
  return done ? {error: null} : null;
}"""


def run_notebook(page, base: str, name: str, timeout_ms: int = 600_000) -> None:
    """Open notebook ``name`` in JupyterLab at ``base``, wait for its kernel, run every cell and
    wait until each has run; a cell's traceback is raised as a ``RuntimeError``. The workspace is
    reset (``?reset``): JupyterLab would reopen the notebooks an earlier page of the same server
    had open, beside this one."""
    page.goto(f"{base}/lab/tree/{name}?reset")
    page.wait_for_function(READY, timeout=120_000, polling=500)
    page.evaluate(RUN_ALL)
    outcome = page.wait_for_function(DONE, timeout=timeout_ms, polling=1000).json_value()
    if outcome["error"]:
        raise RuntimeError(f"a cell of {name} failed:\n{outcome['error']}")
