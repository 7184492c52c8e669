"""The translation commands of cli.py, run as a user would (subprocess), with the bundled models."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.support import run_cli

pytestmark = pytest.mark.slow  # loads the bundled weights
IDS = ["translate-gru-additive", "translate-lstm-dot"]


def cli(*args):
    return run_cli(*args, timeout=180)


@pytest.mark.parametrize("model_id", IDS)
def test_cli_extract_target_input_file_and_export(model_id, tmp_path):
    done = cli("extract", "--model", model_id, "--text", "I'm home.", "--json")
    assert done.returncode == 0, done.stderr
    obj = json.loads(done.stdout)
    (rec,) = obj["records"]
    assert rec["kind"] == "cross" and rec["key_tokens"] == ["i'm", "home", ".", "<eos>"]
    done = cli(
        "extract", "--model", model_id, "--text", "I'm home.", "--target", "Je suis chez moi.", "--json"
    )
    forced = json.loads(done.stdout)["records"][0]
    assert forced["query_tokens"] == ["je", "suis", "chez", "moi", ".", "<eos>"]
    lines = tmp_path / "in.tsv"
    lines.write_text("Go.\n\nHe's calm.\tIl est calme.\n我爱你\n", encoding="utf-8")
    done = cli("extract", "--model", model_id, "--input-file", lines)
    assert done.returncode == 0, done.stderr
    objs = [json.loads(x) for x in done.stdout.splitlines()]
    assert len(objs) == 4 and "empty" in objs[1]["error"] and "records" in objs[3]
    assert objs[2]["records"][0]["query_tokens"][:3] == ["il", "est", "calme"]
    out = tmp_path / "mine.safetensors"
    assert cli("export", "--model", model_id, "--out", out).returncode == 0
    again = json.loads(cli("extract", "--checkpoint", out, "--text", "I'm home.", "--json").stdout)
    assert again["output"] == obj["output"]
    np.testing.assert_array_equal(np.array(again["records"][0]["weights"]), np.array(rec["weights"]))
