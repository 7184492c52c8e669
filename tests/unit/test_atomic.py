"""Caches and checkpoints written whole or not at all (models/storage/atomic.py): a writer killed
with SIGKILL mid-write leaves the last good file (or nothing), never a partial file taken as valid;
a truncated or damaged cache folder is found and rebuilt with a notice."""

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch

from attention_atlas.models.storage import atomic
from attention_atlas.models.storage.checkpoint import CheckpointError, load_checkpoint, save_checkpoint

# A child that writes through the real code path, slowly: the stand-in ``slow`` writes real bytes
# in 64 KiB blocks, touches ``started`` after the first block, then sleeps until it is killed.
CHILD_PRELUDE = """
import sys, time
from pathlib import Path
started = Path(sys.argv[1])

def slow(path, data):
    with open(path, "wb") as f:
        for i in range(0, len(data), 1 << 16):
            f.write(data[i : i + (1 << 16)])
            f.flush()
            if not started.exists():
                started.write_text("writing")
                time.sleep(120)
"""


def run_and_kill(tmp_path: Path, body: str, env: dict | None = None) -> None:
    """Run ``CHILD_PRELUDE + body`` in a subprocess, SIGKILL it once it is mid-write."""
    started = tmp_path / "started"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD_PRELUDE + body, str(started)],
        env={**os.environ, **(env or {})},
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.time() + 60
        while not started.exists():
            assert child.poll() is None, child.stderr.read()
            assert time.time() < deadline, "the child never started writing"
            time.sleep(0.02)
        os.kill(child.pid, signal.SIGKILL)
        assert child.wait(10) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
        child.stderr.close()


def stale(folder: Path) -> list[Path]:
    """What a killed writer left behind (hidden temporary files and staging folders; a cache folder's
    lock file stays by design: ``atomic.building``)."""
    return sorted(p for p in folder.iterdir() if p.name.startswith(".") and not p.name.endswith(".lock"))


def age(paths: list[Path], seconds: float = 2 * atomic.STALE_SECONDS) -> None:
    for p in paths:
        t = time.time() - seconds
        os.utime(p, (t, t))


# -- one file -------------------------------------------------------------------------------------


def test_atomic_write_replaces_whole_and_keeps_the_old_file_on_error(tmp_path):
    path = tmp_path / "a.json"
    atomic.atomic_write(path, '{"v": 1}\n')
    assert path.read_text() == '{"v": 1}\n' and oct(path.stat().st_mode & 0o777) == "0o644"
    with pytest.raises(RuntimeError), atomic.atomic_path(path) as tmp:
        tmp.write_text('{"v": 2, "cut')
        raise RuntimeError("killed mid-write")
    assert path.read_text() == '{"v": 1}\n'
    assert stale(tmp_path) == []  # the temporary file went with the error


@pytest.mark.slow
def test_checkpoint_killed_mid_write_leaves_the_last_good_one(tmp_path):
    path = tmp_path / "train_state.safetensors"
    save_checkpoint(path, {"w": torch.zeros(4)}, {"format": "test", "step": 1})
    body = f"""
import safetensors.torch as st
import torch
from attention_atlas.models.storage.checkpoint import save_checkpoint
st.save_file = lambda t, p, metadata=None: slow(p, st.save(t, metadata=metadata))
save_checkpoint({str(path)!r}, {{"w": torch.ones(1_000_000)}}, {{"format": "test", "step": 2}})
"""
    run_and_kill(tmp_path, body)
    tensors, meta = load_checkpoint(path)
    assert meta["step"] == 1 and torch.equal(tensors["w"], torch.zeros(4))
    left = stale(tmp_path)
    assert len(left) == 1 and left[0].name.startswith(".train_state.safetensors.")
    with pytest.raises(CheckpointError):  # the partial file is no checkpoint
        load_checkpoint(left[0])
    age(left)
    save_checkpoint(path, {"w": torch.ones(4)}, {"format": "test", "step": 3})  # the next write sweeps
    assert stale(tmp_path) == [] and load_checkpoint(path)[1]["step"] == 3


# -- a cache folder -------------------------------------------------------------------------------


def build_two(staging: Path) -> None:
    """A stand-in cache: one real safetensors file and one JSON file."""
    from safetensors.torch import save_file

    save_file({"w": torch.arange(1000, dtype=torch.float32)}, str(staging / "model.safetensors"))
    (staging / "config.json").write_text('{"layers": 2}\n')


def test_a_built_folder_passes_its_checks_and_is_not_rebuilt(tmp_path):
    target = tmp_path / "cache"
    folder, notices = atomic.ensure_folder(target, build_two)
    assert folder == target and notices == [] and atomic.folder_problem(target) is None
    manifest = json.loads((target / atomic.MANIFEST).read_text())["files"]
    assert set(manifest) == {"model.safetensors", "config.json"}
    assert atomic.ensure_folder(target, lambda s: pytest.fail("rebuilt a whole cache")) == (target, [])
    assert stale(tmp_path) == []


def test_a_second_process_asking_while_the_first_builds_waits_and_builds_nothing(tmp_path):
    """Two servers (or two test workers) start on an empty cache: one conversion, not two side by side.
    The lock is on an open file, so two threads with their own opens stand for two processes."""
    target, started, release = tmp_path / "cache", threading.Event(), threading.Event()

    def slow_build(staging: Path) -> None:
        started.set()
        assert release.wait(30)
        build_two(staging)

    first = threading.Thread(target=atomic.ensure_folder, args=(target, slow_build))
    first.start()
    assert started.wait(30)
    second: list = []
    waiting = threading.Thread(
        target=lambda: second.append(atomic.ensure_folder(target, lambda s: pytest.fail("built twice")))
    )
    waiting.start()
    waiting.join(0.5)
    assert waiting.is_alive() and not second  # held at the lock while the first builds
    release.set()
    first.join(30)
    waiting.join(30)
    assert second == [(target, [])] and atomic.folder_problem(target) is None


@pytest.mark.parametrize(
    "damage, found",
    [
        (lambda d: truncate(d / "model.safetensors", 100), "model.safetensors is 100 bytes"),
        (lambda d: (d / "config.json").write_text('{"layers": 3}\n'), "config.json does not match"),
        (lambda d: (d / "config.json").unlink(), "config.json is missing"),
        (lambda d: (d / atomic.MANIFEST).write_text('{"files": '), "MANIFEST.json is unreadable"),
        (lambda d: (d / atomic.MANIFEST).unlink(), "no MANIFEST.json"),
    ],
)
def test_a_damaged_folder_is_found_and_rebuilt_with_a_notice(tmp_path, caplog, damage, found):
    target, _ = atomic.ensure_folder(tmp_path / "cache", build_two)
    damage(target)
    assert found in atomic.folder_problem(target)
    built = []
    with caplog.at_level(logging.WARNING, logger="attention_atlas.cache"):
        _, notices = atomic.ensure_folder(target, lambda s: (built.append(s), build_two(s)))
    assert len(built) == 1 and len(notices) == 1 and found in notices[0] and "rebuilt" in notices[0]
    assert notices[0] in caplog.text  # the server's log says it too
    assert atomic.folder_problem(target) is None and stale(tmp_path) == []


def truncate(path: Path, size: int) -> None:
    with open(path, "r+b") as f:
        f.truncate(size)


def test_safetensors_framing_is_checked(tmp_path):
    build_two(tmp_path)
    path = tmp_path / "model.safetensors"
    assert atomic.safetensors_problem(path) is None
    size = path.stat().st_size
    truncate(path, size - 1)
    assert "its header describes" in atomic.safetensors_problem(path)
    truncate(path, 20)
    assert "announces" in atomic.safetensors_problem(path)
    path.write_bytes(b"\x02\x00\x00\x00\x00\x00\x00\x00{x")
    assert "not JSON" in atomic.safetensors_problem(path)


def test_a_folder_from_before_manifests_is_adopted_only_when_whole(tmp_path):
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    for folder in (whole, cut):
        folder.mkdir()
        build_two(folder)
    truncate(cut / "model.safetensors", 500)
    assert atomic.ensure_folder(whole, lambda s: pytest.fail("rebuilt"), adopt=True) == (whole, [])
    assert atomic.folder_problem(whole) is None  # it has a manifest now
    _, notices = atomic.ensure_folder(cut, build_two, adopt=True)
    assert notices and atomic.folder_problem(cut) is None


@pytest.mark.slow
def test_a_cache_build_killed_mid_write_leaves_no_cache(tmp_path):
    """The same code path as the SmolLM2 conversion (``smollm2.converted``), its ~25 s
    dequantisation replaced by a stand-in that writes a real safetensors file slowly."""
    cache = tmp_path / "cache"
    body = """
import safetensors.torch as st
import torch
from attention_atlas.models.adapters import smollm2
def convert(staging):
    slow(staging / "model.safetensors", st.save({"w": torch.ones(1_000_000)}))
smollm2.convert = convert
smollm2.converted()
"""
    run_and_kill(tmp_path, body, env={"ATLAS_CACHE": str(cache)})
    from attention_atlas.models.adapters import smollm2

    target = cache / smollm2.CACHE_NAME
    assert not target.exists()  # the partial folder never took the cache's name
    left = stale(cache)
    assert len(left) == 1 and left[0].name.endswith(".staging")
    assert atomic.safetensors_problem(left[0] / "model.safetensors")  # what it held was partial
    age(left)
    built = []
    os.environ["ATLAS_CACHE"] = str(cache)
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(smollm2, "convert", lambda s: (built.append(s), build_two(s)))
            folder, notices = smollm2.converted()
    finally:
        del os.environ["ATLAS_CACHE"]
    assert folder == target and len(built) == 1 and notices == []
    assert atomic.folder_problem(target) is None and stale(cache) == []  # the leftover swept


@pytest.mark.slow
def test_smollm2_truncated_cache_is_rebuilt_by_a_real_conversion(tmp_path, monkeypatch):
    """A copy of the real converted cache with its weights cut short: found, converted again
    from the GGUF file (~30 s), and the new weights equal the good cache's byte for byte. The
    conversion says each of its stages as it starts (what a page shows while a first load waits
    on it: ``ui.cached.load_showing_stages``), and nothing once it is done."""
    from attention_atlas.models.adapters import gguf, smollm2

    good, _ = smollm2.converted()
    cache = tmp_path / "cache"
    copy = cache / smollm2.CACHE_NAME
    copy.mkdir(parents=True)
    for p in good.iterdir():
        if p.is_file() and p.name != "model.safetensors":
            (copy / p.name).write_bytes(p.read_bytes())
    with open(good / "model.safetensors", "rb") as src, open(copy / "model.safetensors", "wb") as dst:
        dst.write(src.read(50 << 20))  # a cut-off copy: 50 MB of 538
    monkeypatch.setenv("ATLAS_CACHE", str(cache))
    seen, at = [], gguf.Progress.at

    def recorded(progress, what):
        at(progress, what)
        seen.append(gguf.stage("smollm2"))

    monkeypatch.setattr(gguf.Progress, "at", recorded)
    folder, notices = smollm2.converted()
    assert seen == [gguf.Stage(i + 1, 3, what) for i, what in enumerate(gguf.STAGES)]
    assert gguf.stage("smollm2") is None
    assert folder == copy and len(notices) == 1 and "model.safetensors is 52,428,800 bytes" in notices[0]
    assert atomic.folder_problem(copy) is None
    assert atomic.sha256_of(copy / "model.safetensors") == atomic.sha256_of(good / "model.safetensors")
