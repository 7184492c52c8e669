"""``cli.py train couplet-rnn --preset classroom --max-seconds S --out DIR``: the classroom page's run
from the command line, its export read back by ``extract --checkpoint``; bad input is one line."""

from __future__ import annotations

import json

import pytest

from tests.support import run_cli as cli

TRAIN = ("train", "couplet-rnn", "--attention", "additive")


@pytest.mark.slow  # reads the couplet corpus and trains for a few seconds
def test_preset_trains_and_extract_reads_the_folder_and_the_file(tmp_path):
    out = tmp_path / "classroom"
    done = cli(*TRAIN, "--preset", "classroom", "--max-seconds", "2", "--out", out, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["preset"] == "classroom" and report["attention"] == "additive"
    assert report["steps"] > 0 and report["training_seconds"] >= 2
    assert report["held_out_pairs"] == 2000 and 0 <= report["alignment"] <= 1
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["history"][0]["step"] == 0 and metrics["history"][-1]["step"] == report["steps"]
    config = json.loads((out / "config.json").read_text(encoding="utf-8"))
    assert config["config"]["hidden_size"] == 64 and config["config"]["attention"] == "additive"
    for where in (out, out / "model.safetensors"):
        got = cli(
            "extract",
            "--checkpoint",
            where,
            "--text",
            "两个黄鹂鸣翠柳",
            "--target",
            "一行白鹭上青天",
            "--json",
        )
        assert got.returncode == 0, got.stderr
        (rec,) = json.loads(got.stdout)["records"]
        assert rec["key_tokens"] == list("两个黄鹂鸣翠柳") and rec["query_tokens"] == list("一行白鹭上青天")
        assert len(rec["weights"][0][0]) == 7 and len(rec["weights"][0][0][0]) == 7


OUT = "--out=OUT"  # replaced by a folder in the test's tmp_path


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--preset", "classroom", "--max-seconds", "-5", OUT), "--max-seconds must be more than 0"),
        (("--preset", "classroom", "--max-seconds", "1e9", OUT), "at most 3600"),
        (("--preset", "classroom", "--max-seconds", "nan", OUT), "--max-seconds must be more than 0"),
        (("--preset", "classroom", "--max-seconds", "ten", OUT), "invalid float value: 'ten'"),
        (("--preset", "lecture", "--max-seconds", "10", OUT), "unknown preset 'lecture': choose classroom"),
        (("--preset", "classroom", "--max-seconds", "10"), "--preset, --max-seconds and --out go together"),
        (("--max-seconds", "10", OUT), "--preset, --max-seconds and --out go together"),
        (("--preset", "classroom", "--max-seconds", "10", "--hidden", "512", OUT), "fixes --hidden"),
        (
            ("--preset", "classroom", "--max-seconds", "10", "--threads", "0", OUT),
            "--threads must be at least 1",
        ),
    ],
)
def test_bad_preset_input_is_one_line(tmp_path, extra, message):
    folder = tmp_path / "out"
    done = cli(*TRAIN, *(f"--out={folder}" if x == OUT else x for x in extra))
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and message in lines[0], done.stderr
    assert not folder.exists()
