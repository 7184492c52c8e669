"""The couplet commands of cli.py, run as a user would (subprocess), against a tiny checkpoint."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_couplet_model import tiny_checkpoint

ROOT = Path(__file__).resolve().parent.parent
RECORD_KEYS = {"kind", "query_tokens", "key_tokens", "weights"}


def cli(*args, timeout=120):
    return subprocess.run(
        [sys.executable, "cli.py", *map(str, args)], cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    return tiny_checkpoint(tmp_path_factory.mktemp("ckpt") / "tiny.safetensors")


def check_object(obj: dict, n_query: int, n_key: int) -> dict:
    assert set(obj) == {"model", "device", "output", "records"}
    assert obj["model"].startswith("upload:")
    (rec,) = obj["records"]
    assert set(rec) == RECORD_KEYS and rec["kind"] == "cross"
    w = rec["weights"]  # [layers][heads][query][key]
    assert (len(w), len(w[0]), len(w[0][0]), len(w[0][0][0])) == (1, 1, n_query, n_key)
    assert len(rec["query_tokens"]) == n_query and len(rec["key_tokens"]) == n_key
    for row in w[0][0]:
        assert sum(row) == pytest.approx(1, abs=1e-5)
    return rec


def test_extract_json_generates_and_force_decodes(checkpoint):
    done = cli("extract", "--checkpoint", checkpoint, "--text", "两个黄鹂鸣翠柳", "--json")
    assert done.returncode == 0, done.stderr
    obj = json.loads(done.stdout)
    rec = check_object(obj, 7, 7)
    assert len(obj["output"]) == 7 and rec["query_tokens"] == list(obj["output"])
    assert rec["key_tokens"] == list("两个黄鹂鸣翠柳")

    done = cli(
        "extract",
        "--checkpoint",
        checkpoint,
        "--text",
        "两个黄鹂鸣翠柳",
        "--target",
        "一行白鹭上青天",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    obj = json.loads(done.stdout)
    assert obj["output"] is None
    assert check_object(obj, 7, 7)["query_tokens"] == list("一行白鹭上青天")


def test_input_file_gives_one_json_line_per_input_with_errors_in_place(checkpoint, tmp_path):
    lines = ["两个黄鹂鸣翠柳", "", "白日依山尽\t黄河入海流", "abc😀", "   ", "海上生明月"]
    inputs = tmp_path / "in.tsv"
    inputs.write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = cli("extract", "--checkpoint", checkpoint, "--input-file", inputs, "--json")
    assert done.returncode == 0, done.stderr
    out = [json.loads(x) for x in done.stdout.splitlines()]
    assert len(out) == len(lines)
    assert set(out[1]) == {"error"} and "empty" in out[1]["error"]
    assert set(out[4]) == {"error"}
    check_object(out[0], 7, 7)
    assert out[2]["output"] is None and check_object(out[2], 5, 5)["query_tokens"] == list("黄河入海流")
    assert len(out[3]["output"]) == 4
    assert len(out[5]["output"]) == 5


@pytest.mark.parametrize(
    "args",
    [
        ["--text", "   "],
        ["--input-file", "/nonexistent/file.tsv"],
    ],
)
def test_bad_input_gives_one_line_and_nonzero_exit(checkpoint, args):
    done = cli("extract", "--checkpoint", checkpoint, *args)
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and done.stderr.startswith("error:")


def test_bad_checkpoint_and_unknown_model_give_one_line(tmp_path):
    junk = tmp_path / "junk.safetensors"
    junk.write_bytes(b"not a checkpoint at all")
    for args in (["--checkpoint", junk], ["--model", "no-such-model"]):
        done = cli("extract", *args, "--text", "两个黄鹂")
        assert done.returncode != 0 and "Traceback" not in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and done.stderr.startswith("error:")


def test_npz_output_holds_the_record(checkpoint, tmp_path):
    import numpy as np

    out = tmp_path / "a.npz"
    done = cli("extract", "--checkpoint", checkpoint, "--text", "白日依山尽", "--out", out)
    assert done.returncode == 0, done.stderr
    data = np.load(out)
    assert data["cross_weights"].shape == (1, 1, 5, 5)
    assert list(data["cross_key_tokens"]) == list("白日依山尽")
