"""An upload's name never reaches the filesystem (issue 15, docs/SECURITY.md).

Hostile names (``../../etc/passwd``, absolute paths, NUL, backslashes, bidi controls) and 200
fuzzed ones, each carrying the marker ``ZQX``, name the same checkpoint bytes. While they load,
an audit hook records every path the process opens, creates, lists, renames or removes, and
``os.stat``/``os.lstat`` are watched too: no path holds the marker. The name only labels the
summary (its last component, as text), the cache keys on the bytes (one load for every name),
and opening by a typed path is off unless the server turns it on.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from attention_atlas.models.uploads import UploadCache, load_bytes
from attention_atlas.models.uploads.safety import UploadError
from tests.support import fuzz_examples

MARK = "ZQX"
EVENTS = {"open", "os.mkdir", "os.rename", "os.remove", "os.rmdir", "os.listdir", "os.scandir", "os.chmod"}
EVENTS |= {"os.symlink", "os.link", "os.truncate", "os.utime", "os.chdir", "shutil.copyfile", "shutil.rmtree"}
_state = {"armed": False, "touched": []}


def _hook(event: str, args: tuple) -> None:
    if _state["armed"] and event in EVENTS:
        _state["touched"].extend(str(a) for a in args[:2] if isinstance(a, str | bytes | os.PathLike))


sys.addaudithook(_hook)  # inert unless armed

HOSTILE = [
    "../../etc/ZQXpasswd",
    "/etc/ZQXshadow.safetensors",
    "..\\..\\windows\\ZQX.pt",
    f"a\x00{MARK}.safetensors",
    f"x/../../../tmp/{MARK}evil.safetensors",
    f"~/.ssh/{MARK}id_rsa",
    f"{MARK}\u202egnp.safetensors",
    f"{MARK}/",
    f"{MARK}/..",
    f"file:///etc/{MARK}",
    f"{MARK}" + "a" * 5000 + ".safetensors",
]


@pytest.fixture
def watched(monkeypatch):
    """Record what the filesystem is asked about: the audit hook's events, and stat/lstat."""
    _state["touched"] = []
    for name in ("stat", "lstat"):
        real = getattr(os, name)

        def spy(path, *args, _real=real, **kwargs):
            if _state["armed"]:
                _state["touched"].append(str(path))
            return _real(path, *args, **kwargs)

        monkeypatch.setattr(os, name, spy)
    _state["armed"] = True
    yield _state["touched"]
    _state["armed"] = False


def test_upload_names_never_become_paths(tiny_rnn_checkpoint, watched):
    data = tiny_rnn_checkpoint.read_bytes()
    names = HOSTILE + [MARK + n for n in fuzz_examples(200, "upload-names")]
    cache = UploadCache(1 << 30)
    shown = [load_bytes(data, name, cache=cache).summary.file_name for name in names]
    assert [p for p in watched if MARK in p] == []
    assert watched, "the watch saw nothing at all: it is not watching"  # the load itself reads files
    assert cache.loads == 1  # keyed by the bytes: the names share one load
    for name, label in zip(names, shown, strict=True):
        assert label == Path(name).name and "/" not in label  # the last component, as a label only


def test_opening_by_path_is_off_unless_the_server_turns_it_on(monkeypatch, watched):
    from attention_atlas.models.uploads import local

    monkeypatch.delenv("ATLAS_LOCAL_PATHS", raising=False)
    for text in HOSTILE:
        with pytest.raises(UploadError, match="switched off"):
            local.resolve(text)
    assert [p for p in watched if MARK in p] == []


def test_a_local_root_keeps_paths_inside_it(monkeypatch, tmp_path):
    """Where it is on (``ATLAS_LOCAL_PATHS=1``), ``ATLAS_LOCAL_ROOT`` confines it, links resolved first."""
    from attention_atlas.models.uploads import local

    root = tmp_path / "root"
    root.mkdir()
    (root / "escape").symlink_to("/etc")
    monkeypatch.setenv("ATLAS_LOCAL_PATHS", "1")
    monkeypatch.setenv("ATLAS_LOCAL_ROOT", str(root))
    for text in [f"{root}/../../etc/passwd", "/etc/passwd", f"{root}/escape/passwd", "~"]:
        with pytest.raises(UploadError, match="outside the folder"):
            local.resolve(text)
    with pytest.raises(UploadError, match="type the path"):
        local.resolve(f"{root}/a\x00b")


def test_the_server_config_caps_uploads_and_asks_for_the_xsrf_token():
    """The options every server starts with (``serve.launcher``, on its command line): XSRF
    protection on, the browser's upload cap equal to the server's own (``Limits``, checked again on
    the bytes whatever the browser did), no usage statistics sent."""
    from attention_atlas.models.uploads.safety import MB, Limits
    from attention_atlas.serve.launcher import command

    cmd = command(8501)
    options = dict(zip(cmd[5::2], cmd[6::2], strict=True))  # after: python -m streamlit run APP
    assert options["--server.enableXsrfProtection"] == "true" and "--server.enableCORS" not in options
    assert int(options["--server.maxUploadSize"]) == Limits().max_bytes // MB
    assert options["--browser.gatherUsageStats"] == "false"
    with pytest.raises(UploadError, match="limited to 1 MB"):
        load_bytes(b"\0" * (MB + 1), "big.safetensors", limits=Limits(max_bytes=MB), cache=UploadCache(0))
