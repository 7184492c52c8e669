"""Attention Atlas as several Streamlit replicas behind nginx, each browser kept on one replica.

    python deploy/replicas.py --replicas 2 --listen 127.0.0.1:8080
    python deploy/replicas.py --upstream 10.0.0.5:8501 --upstream 10.0.0.6:8501 --listen 0.0.0.0:8080

The first form starts N ``streamlit run app.py`` on free loopback ports of this machine (one
torch thread each unless ATLAS_THREADS says otherwise; one cookie secret shared by all), the
second puts nginx in front of replicas already running elsewhere (``make run`` on each
machine, reachable from this one). ``deploy/nginx.conf`` is filled in and nginx runs in the
foreground without root: its pid, logs and temporary files go to ``--run-dir``; its access
log names the replica of every request. The command prints the address once nginx answers
through to a replica and stops everything on Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from attention_atlas.serve.launcher import launch, stop, wait_healthy

HERE = Path(__file__).resolve().parent
TEMPLATE = HERE / "nginx.conf"


def render(run_dir: Path, listen: str, upstreams: list[str], template: Path = TEMPLATE) -> str:
    """``deploy/nginx.conf`` with its run folder, listening address and replicas filled in."""
    servers = "\n".join(f"        server {u} max_fails=0;" for u in upstreams)
    text = template.read_text(encoding="utf-8")
    return (
        text.replace("@@RUN_DIR@@", str(run_dir))
        .replace("@@LISTEN@@", listen)
        .replace("@@SERVERS@@", servers)
    )


def find_nginx(explicit: str | None = None) -> str | None:
    """The nginx binary: ``explicit``, else on PATH, else Debian's /usr/sbin/nginx."""
    for candidate in (explicit, shutil.which("nginx"), "/usr/sbin/nginx"):
        if candidate and Path(candidate).is_file():
            return candidate
    return None


def start_nginx(nginx: str, run_dir: Path, listen: str, upstreams: list[str]) -> subprocess.Popen:
    """Write ``run_dir``/nginx.conf, check it (``nginx -t``), and run nginx in the foreground."""
    for sub in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (run_dir / "tmp" / sub).mkdir(parents=True, exist_ok=True)
    conf = run_dir / "nginx.conf"
    conf.write_text(render(run_dir, listen, upstreams), encoding="utf-8")
    cmd = [nginx, "-p", str(run_dir), "-c", str(conf), "-e", str(run_dir / "error.log")]
    check = subprocess.run([*cmd, "-t", "-q"], capture_output=True, text=True)
    if check.returncode:
        raise RuntimeError(f"nginx refuses {conf}: {check.stderr.strip()}")
    log = open(run_dir / "nginx.out", "wb")  # noqa: SIM115  (the process keeps writing to it)
    return subprocess.Popen([*cmd, "-g", "daemon off;"], stdout=log, stderr=subprocess.STDOUT)


def replica_env() -> dict[str, str]:
    """What every local replica shares: one torch thread (N replicas share the cores), two glibc
    malloc arenas from the process's start (docs/ARCHITECTURE.md: Many sessions) and one cookie
    secret (signed cookies read the same on any replica)."""
    env = {"ATLAS_THREADS": os.environ.get("ATLAS_THREADS", "1")}  # launch adds the malloc arenas
    env["STREAMLIT_SERVER_COOKIE_SECRET"] = os.environ.get(
        "STREAMLIT_SERVER_COOKIE_SECRET", secrets.token_hex(32)
    )
    return env


@contextlib.contextmanager
def replicas_behind_nginx(
    replicas: int, listen: str, run_dir: Path, upstream: list[str] | None = None, nginx=None
):
    """Start the replicas (unless ``upstream`` lists running ones) and nginx; yield nginx's URL."""
    binary = find_nginx(nginx)
    if binary is None:
        raise RuntimeError("nginx is not installed (Debian: apt-get install nginx)")
    with contextlib.ExitStack() as stack:
        servers = (
            []
            if upstream
            else [launch(env=replica_env(), log=run_dir / f"replica-{i}.log") for i in range(replicas)]
        )
        for server in servers:
            stack.callback(stop, server.process)
        for server in servers:
            wait_healthy(server.url, 180, server.process)
        targets = upstream or [s.url.removeprefix("http://") for s in servers]
        proxy = start_nginx(binary, run_dir, listen, targets)
        stack.callback(stop, proxy)
        url = f"http://{listen}"
        wait_healthy(url, 30, proxy)
        yield url


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--replicas", type=int, default=2, help="local replicas to start (default 2)")
    p.add_argument("--listen", default="127.0.0.1:8080", help="nginx's address (default 127.0.0.1:8080)")
    p.add_argument(
        "--upstream", action="append", help="a running replica host:port (repeat; no local replicas)"
    )
    p.add_argument(
        "--run-dir", type=Path, help="nginx's pid, logs and temporary files (default: a temporary folder)"
    )
    p.add_argument("--nginx", help="the nginx binary (default: nginx on PATH, else /usr/sbin/nginx)")
    args = p.parse_args(argv)
    if args.replicas < 1:
        p.error("--replicas must be at least 1")
    run_dir = args.run_dir or Path(tempfile.mkdtemp(prefix="atlas-nginx-"))
    run_dir.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # unwinds the with-block: all stopped
    try:
        with replicas_behind_nginx(
            args.replicas, args.listen, run_dir.resolve(), args.upstream, args.nginx
        ) as url:
            n = len(args.upstream) if args.upstream else args.replicas
            print(f"Attention Atlas on {url} ({n} replicas behind nginx; logs in {run_dir})", flush=True)
            signal.pause()
    except RuntimeError as err:
        sys.exit(f"replicas: {err}")
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
