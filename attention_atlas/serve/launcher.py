"""Start the dashboard: ``streamlit run`` on the package's ``app.py`` with the server's options.

Every server of the app starts here: ``atlas serve`` (and ``make run``), the replicas of
``deploy/``, the browser tests and the benchmarks. The options live in ``OPTIONS`` because Streamlit
reads ``.streamlit/config.toml`` from the current folder and ``atlas serve`` runs from any folder; the
checkout's root has that file with the same options for ``streamlit run app.py`` (a unit test keeps
them equal). No view depends on them: the live views' plotly.js is a component's file.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from attention_atlas.paths import APP
from attention_atlas.serve.process import launch_env

OPTIONS: dict[str, str] = {
    # The virtual environment may live inside the project folder; watching its thousands of
    # module files (torch alone has ~5,000) made a cold start take twice as long.
    "server.fileWatcherType": "none",
    "server.headless": "true",
    # Uploads: the same cap as the server's own check (models/uploads/safety.py, ATLAS_UPLOAD_MAX_MB,
    # default 200 MB); the browser refuses a larger file before sending it. Raise both together.
    "server.maxUploadSize": "200",
    # Cross-site request forgery: uploads and the websocket carry the token of the _streamlit_xsrf cookie.
    "server.enableXsrfProtection": "true",
    # A session whose browser has gone keeps its state this long in case it reconnects (Streamlit's
    # default is 120 s); after that its widgets, session data and uploads are released.
    "server.disconnectedSessionTTL": "60",
    "browser.gatherUsageStats": "false",  # offline: nothing leaves this machine
    "client.toolbarMode": "minimal",
}


def command(port: int, address: str | None = None, script: Path | str = APP, **extra: str) -> list[str]:
    """The ``streamlit run`` command line of a server on ``port`` (``extra``: more options,
    ``server_baseUrlPath="x"`` for ``--server.baseUrlPath x``)."""
    options = {**OPTIONS, "server.port": str(port)}
    if address:
        options["server.address"] = address
    options.update({k.replace("_", ".", 1): v for k, v in extra.items()})
    flags = [part for name, value in options.items() for part in (f"--{name}", value)]
    return [sys.executable, "-m", "streamlit", "run", str(script), *flags]


def environment(env: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment, the server's tuning (``process.launch_env``) and ``env`` on top."""
    return {**os.environ, **launch_env(), **(env or {})}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(url: str, timeout: float, proc: subprocess.Popen | None = None) -> None:
    """Return once ``url``/_stcore/health answers 200; raise with the reason after ``timeout`` s
    (or at once when ``proc``, the server, has exited)."""
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(OSError), urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
            if r.status == 200:
                return
        if (proc is not None and proc.poll() is not None) or time.monotonic() > deadline:
            raise RuntimeError(f"no healthy streamlit at {url} within {timeout:.0f} s")
        time.sleep(0.2)


@dataclass
class Server:
    url: str
    process: subprocess.Popen
    log: Path

    def tail(self, chars: int = 2000) -> str:
        """The end of the server's log, for an error message."""
        try:
            return self.log.read_text(encoding="utf-8", errors="replace")[-chars:]
        except OSError:
            return ""


def default_log(port: int | str) -> Path:
    """Where a server on ``port`` writes its output unless told otherwise."""
    return Path(os.environ.get("TMPDIR", "/tmp")) / f"atlas-streamlit-{port}.log"


def launch(
    port: int | None = None, env: dict | None = None, log: Path | None = None, script: Path | str = APP
) -> Server:
    """Start a server on 127.0.0.1 (a free port unless given), its output in ``log`` (a file, so a
    long run never blocks on a full pipe); returns at once (see ``wait_healthy``)."""
    port = port or free_port()
    log = log or default_log(port)
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            command(port, "127.0.0.1", script), stdout=out, stderr=subprocess.STDOUT, env=environment(env)
        )
    return Server(f"http://127.0.0.1:{port}", proc, log)


@contextlib.contextmanager
def serve(
    port: int | None = None,
    env: dict | None = None,
    log: Path | None = None,
    timeout: float = 90.0,
    script: Path | str = APP,
) -> Iterator[Server]:
    """``launch``, yielding once ``/_stcore/health`` answers; the server is stopped afterwards."""
    server = launch(port, env, log, script)
    try:
        try:
            wait_healthy(server.url, timeout, server.process)
        except RuntimeError as err:
            raise RuntimeError(f"{err}: {server.tail()}") from err
        yield server
    finally:
        stop(server.process)


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def run_forever(port: int, address: str | None = None) -> int:
    """``atlas serve``: the server in the foreground, in place of this process (Ctrl-C stops it)."""
    cmd = command(port, address)
    sys.stdout.flush()
    os.execve(cmd[0], cmd, environment())
    return 0  # not reached: execve replaces the process
