"""``cli.py extract`` of a model with learned sink logits (issue 26): the sink's mass travels with the
weights, in the .npz and in --json, and each row with its sink sums to 1; a model without sinks has none."""

import json

import numpy as np
import pytest

from harness.tiny_variants import tiny_variant
from tests.support import folder_zip, hf_folder, run_cli

TEXT = "the cat sat on the mat because it was tired and a dog ran after the ball"


@pytest.fixture(scope="module")
def sink_zip(tmp_path_factory):
    folder = hf_folder(tiny_variant("gpt_oss"), tmp_path_factory.mktemp("gpt-oss"))
    path = folder.parent / "tiny-gpt-oss.zip"
    path.write_bytes(folder_zip(folder, "tiny-gpt-oss"))
    return path


def test_the_sink_travels_with_the_weights_in_npz_and_json(sink_zip, tmp_path):
    out = tmp_path / "sink.npz"
    done = run_cli("extract", "--checkpoint", sink_zip, "--text", TEXT, "--out", out, timeout=300)
    assert done.returncode == 0, done.stderr
    saved = np.load(out)
    weights, sink = saved["self_weights"], saved["self_sink"]
    assert sink.shape == weights.shape[:3] and sink.max() > 0.01  # the sinks take visible mass
    assert np.allclose(weights.sum(-1) + sink, 1, atol=1e-5)
    shown = run_cli("extract", "--checkpoint", sink_zip, "--text", TEXT, "--json", timeout=300)
    (record,) = json.loads(shown.stdout)["records"]
    assert np.allclose(record["sink"], sink, atol=1e-6)


def test_a_model_without_sinks_writes_none(gpt2_zip, tmp_path):
    out = tmp_path / "plain.npz"
    assert run_cli("extract", "--checkpoint", gpt2_zip, "--text", TEXT, "--out", out).returncode == 0
    assert "self_sink" not in np.load(out).files
