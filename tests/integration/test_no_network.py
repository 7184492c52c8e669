"""Nothing is fetched from a network at run time (issue 15, docs/SECURITY.md).

A Python audit hook (``sys.addaudithook``) watches every socket connect, name lookup and urllib
request of this process, in every thread, while ``offline()`` is active: one that would leave the
machine (anything but loopback or a local socket) is recorded and refused. Under it, every page
runs under AppTest in its first state and with the choices that load the real models (Transformer
heads with minilm and smollm2, Scoring on a real model, the Checkpoint inspector's demo upload,
Positional's learned table), and every registered model is loaded and run once.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import socket
import sys
import urllib.request

import pytest

from tests.support import page_runner

LOCAL_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", ""}
_state = {"armed": False, "tried": []}


def _local(host) -> bool:
    if host is None or isinstance(host, bytes | bytearray):
        host = (host or b"").decode(errors="replace")
    host = str(host).strip("[]").lower()
    if host in LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


def _hook(event: str, args: tuple) -> None:
    if not _state["armed"]:
        return
    if event == "socket.connect":
        address = args[1]
        if isinstance(address, tuple) and not _local(address[0]):  # AF_UNIX addresses are paths
            _state["tried"].append(f"connect {address[:2]}")
            raise ConnectionRefusedError(f"offline test: connect to {address[:2]} refused")
    elif event == "socket.getaddrinfo" and not _local(args[0]):
        _state["tried"].append(f"lookup {args[0]!r}")
        raise socket.gaierror(f"offline test: lookup of {args[0]!r} refused")
    elif event == "urllib.Request":
        host = urllib.request.urlparse(args[0]).hostname
        if host and not _local(host):
            _state["tried"].append(f"urllib {args[0]}")
            raise urllib.error.URLError(f"offline test: {args[0]} refused")


sys.addaudithook(_hook)  # for the life of the process; inert unless ``offline()`` is active


@contextlib.contextmanager
def offline():
    """Refuse and record every attempt to reach another host; yields the list of attempts."""
    _state["tried"] = []
    _state["armed"] = True
    try:
        yield _state["tried"]
    finally:
        _state["armed"] = False


def test_the_guard_catches_what_it_should():
    """The hook itself: a connect to another host and a lookup are refused and recorded; loopback passes."""
    with offline() as tried:
        with pytest.raises(OSError), socket.socket() as sock:
            sock.connect(("192.0.2.1", 80))  # TEST-NET-1: never routed
        with pytest.raises(OSError):
            socket.getaddrinfo("huggingface.co", 443)
        with pytest.raises(OSError):
            urllib.request.urlopen("https://huggingface.co/api/models", timeout=1)
        server = socket.create_server(("127.0.0.1", 0))
        with server, socket.create_connection(server.getsockname(), timeout=1):
            pass
    assert len(tried) == 3 and tried[0].startswith("connect ('192.0.2.1'")


def test_hub_access_is_switched_off_by_the_adapters():
    import attention_atlas.models.adapters.hf  # noqa: F401 - importing it sets the variables

    assert os.environ["HF_HUB_OFFLINE"] == "1" and os.environ["TRANSFORMERS_OFFLINE"] == "1"


PAGES = [
    "app.py",  # Home (its page links need the app's navigation)
    "app_pages/scoring.py",
    "app_pages/positional.py",
    "app_pages/pooling.py",
    "app_pages/transformer.py",
    "app_pages/long_input.py",
    "app_pages/couplets.py",
    "app_pages/translation.py",
    "app_pages/checkpoint.py",
    "app_pages/corpus.py",
    "app_pages/prediction.py",
    "app_pages/watch_learn.py",
]


@pytest.mark.slow  # loads minilm and smollm2
def test_every_page_runs_offline():
    with offline() as tried:
        for page in PAGES:
            page_runner(page, 300)()
        run = page_runner("app_pages/transformer.py", 300)
        at = run()
        for model_id in ("minilm", "smollm2"):
            at.selectbox(key="tf_model").set_value(model_id)
            at = run(at)
        run = page_runner("app_pages/scoring.py", 300)
        at = run()
        source = at.radio(key="scoring_source")
        at = run(source.set_value(next(o for o in source.options if o.startswith("real"))))
        run = page_runner("app_pages/checkpoint.py", 300)
        at = run()
        at.button(key="ckpt_demo").click()
        run(at)
        run = page_runner("app_pages/positional.py", 300)
        at = run()
        at.toggle(key="pe_learned").set_value(True)
        run(at)
    assert tried == []


@pytest.mark.slow
def test_every_model_loads_and_runs_offline():
    import torch

    from attention_atlas.models.registry import available, load

    with offline() as tried:
        for info in available():
            adapter = load(info.id, torch.device("cpu"))
            assert adapter.run(info.example).records
    assert tried == []
