"""deploy/replicas.py: two Streamlit replicas behind Debian's nginx on loopback. A session through
nginx runs pages to their end without an exception, and each browser stays on one replica."""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
import sys
import urllib.request
from collections import defaultdict
from pathlib import Path

import pytest

from attention_atlas.serve.launcher import free_port, wait_healthy
from harness.st_client import Session

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
STREAM = re.compile(r'"GET /_stcore/stream HTTP/1.1" 101 upstream=(\S+) replica_key=(\S+)')
NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").is_file() else None)


@pytest.fixture(scope="module")
def proxy(tmp_path_factory):
    if NGINX is None:
        pytest.skip("nginx is not installed (make test installs Debian's nginx: apt-get install nginx)")
    run_dir = tmp_path_factory.mktemp("nginx")
    url = f"http://127.0.0.1:{free_port()}"
    cmd = [
        sys.executable,
        "deploy/replicas.py",
        "--replicas",
        "2",
        "--listen",
        url[7:],
        "--run-dir",
        str(run_dir),
    ]
    with open(run_dir / "replicas.out", "wb") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_healthy(url, 240, proc)
    except RuntimeError:
        proc.kill()
        raise AssertionError((run_dir / "replicas.out").read_text(errors="replace")[-2000:]) from None
    yield url, run_dir, proc
    if proc.poll() is None:
        proc.terminate()
        proc.wait(60)


async def _couplet_session(url: str):
    async with Session(url, cookies=True) as s:
        opened = await s.open("couplets")
        typed = await s.set("couplet_upper", "明月松间照")
        return s.cookies, opened, typed


def test_a_session_through_nginx_runs_pages_to_the_end(proxy):
    url, _, _ = proxy
    cookies, opened, typed = asyncio.run(_couplet_session(url))
    assert "atlas_replica" in cookies  # nginx's sticky cookie came with the page
    for run in (opened, typed):
        assert run.status == "FINISHED_SUCCESSFULLY" and not run.exceptions, run.problems
        assert run.elements > 5
    assert not typed.errors


async def _browsers(url: str, n: int) -> list[dict]:
    async def one():
        async with Session(url, cookies=True) as s:
            run = await s.open("")
            assert run.ok, run.problems
            return s.cookies

    return await asyncio.gather(*(one() for _ in range(n)))


def test_each_browser_stays_on_one_replica_and_both_replicas_serve(proxy):
    url, run_dir, _ = proxy
    cookies = asyncio.run(_browsers(url, 12))
    asyncio.run(_browsers_again(url, cookies))  # the same browsers come back
    upstreams = defaultdict(set)
    for line in (run_dir / "access.log").read_text().splitlines():
        match = STREAM.search(line)
        if match:
            upstreams[match[2]].add(match[1])
    keys = {c["atlas_replica"] for c in cookies}
    assert keys <= set(upstreams)
    assert all(len(upstreams[k]) == 1 for k in keys)  # a browser's websockets all went to one replica
    assert len({u for k in keys for u in upstreams[k]}) == 2  # 12 random keys: both replicas used


async def _browsers_again(url: str, cookies: list[dict]) -> None:
    async def one(jar):
        s = Session(url)
        s.cookies = dict(jar)
        async with s:
            assert (await s.open("")).ok

    await asyncio.gather(*(one(j) for j in cookies))


def test_stopping_the_script_stops_nginx_and_the_replicas(proxy):
    url, run_dir, proc = proxy
    replicas = re.findall(r"server (127\.0\.0\.1:\d+)", (run_dir / "nginx.conf").read_text())
    assert len(replicas) == 2
    proc.terminate()
    assert proc.wait(60) == 0
    for address in [url, *(f"http://{r}" for r in replicas)]:
        with pytest.raises(OSError):
            urllib.request.urlopen(f"{address}/_stcore/health", timeout=5)
