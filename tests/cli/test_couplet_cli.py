"""The couplet commands of cli.py, run as a user would (subprocess): against a tiny checkpoint,
then against the bundled models (slow)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from tests.support import run_cli as cli

RECORD_KEYS = {"kind", "query_tokens", "key_tokens", "weights"}


@pytest.fixture(scope="module")
def checkpoint(tiny_rnn_checkpoint):
    return tiny_rnn_checkpoint


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
    out = tmp_path / "a.npz"
    done = cli("extract", "--checkpoint", checkpoint, "--text", "白日依山尽", "--out", out)
    assert done.returncode == 0, done.stderr
    data = np.load(out)
    assert data["cross_weights"].shape == (1, 1, 5, 5)
    assert list(data["cross_key_tokens"]) == list("白日依山尽")


# -- the bundled models (slow: they load the bundled weights) -----------------------------------------


@pytest.mark.slow
def test_export_then_checkpoint_gives_the_same_attention(tmp_path):
    def cli_ok(*args):
        done = cli(*args)
        assert done.returncode == 0, done.stderr
        return done.stdout

    out = tmp_path / "additive.safetensors"
    cli_ok("export", "--model", "couplet-rnn-additive", "--out", out)
    text = ["--text", "两个黄鹂鸣翠柳", "--json"]
    by_id = json.loads(cli_ok("extract", "--model", "couplet-rnn-additive", *text))
    by_file = json.loads(cli_ok("extract", "--checkpoint", out, *text))
    assert by_file["records"] == by_id["records"] and by_file["output"] == by_id["output"]


def one_thread_cli(*args):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "ATLAS_DEVICE": "cpu"}  # tiny inputs; a shared CPU
    return cli(*args, env=env)


@pytest.mark.slow
@pytest.mark.usefixtures("one_thread")
def test_cli_extract_contract(bundled_couplet_transformer, tmp_path):
    done = one_thread_cli(
        "extract",
        "--model",
        "couplet-transformer",
        "--text",
        "两个黄鹂鸣翠柳",
        "--target",
        "一行白鹭上青天",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    obj = json.loads(done.stdout)
    assert set(obj) == {"model", "device", "output", "records"}
    assert obj["model"] == "couplet-transformer" and obj["output"] is None
    shapes = {
        r["kind"]: (
            len(r["weights"]),
            len(r["weights"][0]),
            len(r["weights"][0][0]),
            len(r["weights"][0][0][0]),
        )
        for r in obj["records"]
    }
    assert shapes == {"encoder_self": (3, 4, 7, 7), "decoder_self": (3, 4, 7, 7), "cross": (3, 4, 7, 7)}
    dec = next(r for r in obj["records"] if r["kind"] == "decoder_self")
    assert dec["query_tokens"] == list("一行白鹭上青天") and dec["key_tokens"][0] == "<bos>"
    w = np.array(dec["weights"])  # [layers, heads, query, key]
    assert np.all(np.triu(w, 1) == 0) and np.allclose(w.sum(-1), 1, atol=1e-5)

    inputs = tmp_path / "in.tsv"
    inputs.write_text("白日依山尽\n\n海上生明月，天涯共此时\n欲穷千里目\t更上一层楼\n", encoding="utf-8")
    done = one_thread_cli(
        "extract", "--model", "couplet-transformer", "--input-file", inputs, "--beam", "3", "--json"
    )
    assert done.returncode == 0, done.stderr
    lines = [json.loads(x) for x in done.stdout.splitlines()]
    assert len(lines) == 4 and "error" in lines[1]
    assert len(lines[0]["output"]) == 5
    assert len(lines[2]["output"]) == 11 and lines[2]["output"][5] == "，"
    cross = next(r for r in lines[3]["records"] if r["kind"] == "cross")
    assert cross["query_tokens"] == list("更上一层楼") and len(cross["weights"]) == 3
