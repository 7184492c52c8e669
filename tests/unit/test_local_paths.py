"""Checkpoints opened by a path on the server: off by default, the same checks as an upload when on."""

from __future__ import annotations

import os

import pytest

from attention_atlas.models.uploads import Limits, UploadError, load_bytes
from attention_atlas.models.uploads.local import read_local, resolve


@pytest.fixture
def on(monkeypatch):
    monkeypatch.setenv("ATLAS_LOCAL_PATHS", "1")
    monkeypatch.delenv("ATLAS_LOCAL_ROOT", raising=False)
    monkeypatch.delenv("ATLAS_LOCAL_MAX_MB", raising=False)


def test_off_unless_the_server_allows_it(monkeypatch, tiny_rnn_checkpoint):
    monkeypatch.delenv("ATLAS_LOCAL_PATHS", raising=False)
    with pytest.raises(UploadError, match="switched off on this server"):
        read_local(str(tiny_rnn_checkpoint), Limits())
    monkeypatch.setenv("ATLAS_LOCAL_PATHS", "yes")  # only "1" switches it on
    with pytest.raises(UploadError, match="switched off"):
        resolve(str(tiny_rnn_checkpoint))


def test_a_file_gives_the_bytes_an_upload_would(on, tiny_rnn_checkpoint):
    name, data = read_local(str(tiny_rnn_checkpoint), Limits())
    assert name == tiny_rnn_checkpoint.name and data == tiny_rnn_checkpoint.read_bytes()
    assert load_bytes(data, name).summary.architecture.startswith("couplet-rnn")


def test_a_hugging_face_folder_is_read_through_the_zip_checks(on, tiny_hf_folders, tmp_path):
    folder = tiny_hf_folders["encoder"]
    name, data = read_local(str(folder), Limits())
    upload = load_bytes(data, name)
    assert name == folder.name + ".zip" and upload.summary.architecture == "hf-encoder"
    # a pickle beside the weights is never read, and a link out of the folder is not followed
    evil = tmp_path / "evil"
    evil.mkdir()
    for f in folder.iterdir():
        (evil / f.name).write_bytes(f.read_bytes())
    (evil / "pytorch_model.bin").write_bytes(b"\x80\x04cos\nsystem\n.")
    (evil / "secret.txt").symlink_to("/etc/hostname")
    name, data = read_local(str(evil), Limits())
    assert b"/etc/hostname" not in data and b"secret.txt" not in data
    assert load_bytes(data, name).summary.architecture == "hf-encoder"


@pytest.mark.parametrize(
    "typed, message",
    [
        ("", "type the path"),
        ("/no/such/checkpoint.safetensors", "no file or folder"),
        ("/etc/hostname", "not a checkpoint file"),
        ("bad\x00path", "type the path"),
    ],
)
def test_bad_paths_get_one_line(on, typed, message):
    with pytest.raises(UploadError, match=message) as err:
        read_local(typed, Limits())
    assert "\n" not in str(err.value)


def test_root_and_size_caps(on, monkeypatch, tiny_rnn_checkpoint, tmp_path):
    monkeypatch.setenv("ATLAS_LOCAL_ROOT", str(tmp_path))
    with pytest.raises(UploadError, match="outside the folder"):
        read_local(str(tiny_rnn_checkpoint), Limits())
    with pytest.raises(UploadError, match="outside the folder"):
        read_local(str(tmp_path / ".." / os.path.basename(tmp_path) / ".." / "x.pt"), Limits())
    monkeypatch.delenv("ATLAS_LOCAL_ROOT")
    small = Limits(max_bytes=10)
    with pytest.raises(UploadError, match="limited to 0 MB"):
        read_local(str(tiny_rnn_checkpoint), small)
    empty = tmp_path / "empty.pt"
    empty.write_bytes(b"")
    with pytest.raises(UploadError, match="empty"):
        read_local(str(empty), Limits())
