"""``cli.py attribute`` as a user runs it (subprocess): the npz and JSON contract (tokens, target, one
array per method [input tokens], ig_completeness_gap, comprehensiveness and sufficiency [methods, 3],
methods) on the tiny couplet RNN, a tiny GPT-2 and a tiny BART uploaded as zipped folders, equal to the module's
own answer in this process; bad input refused in one line, never a traceback."""

import json

import numpy as np
import pytest
import torch

from attention_atlas.models.analysis import attribution as at
from tests.support import one_line
from tests.support import run_cli as cli

UPPER, LOWER = "两个黄鹂鸣翠柳", "一行白鹭上青天"
TEXT = "the cat sat on the mat"


def test_couplet_npz_and_json(tiny_rnn_checkpoint, tmp_path):
    from attention_atlas.models.adapters.couplet_rnn import CoupletRNNAdapter

    out = tmp_path / "a.npz"
    args = ("attribute", "--checkpoint", tiny_rnn_checkpoint, "--text", UPPER, "--target-text", LOWER)
    done = cli(*args, "--target-position", "2", "--out", out)
    assert done.returncode == 0, done.stderr
    saved = np.load(out)
    methods = list(saved["methods"])
    assert methods == ["attention", "saliency", "input_x_gradient", "integrated_gradients", "occlusion"]
    assert list(saved["tokens"]) == list(UPPER) and str(saved["target"]) == LOWER[2]
    for m in methods:
        assert saved[m].shape == (len(UPPER),)
    assert saved["comprehensiveness"].shape == saved["sufficiency"].shape == (len(methods), 3)
    assert saved["ig_completeness_gap"].shape == () and float(saved["ig_completeness_gap"]) < 1e-3

    adapter = CoupletRNNAdapter.from_checkpoint(tiny_rnn_checkpoint, "cpu")
    want = at.attribute(at.subject_of(adapter, UPPER, LOWER, 2))
    for m in methods:
        np.testing.assert_allclose(saved[m], want.scores[m], atol=1e-6)
    np.testing.assert_allclose(saved["comprehensiveness"], want.comprehensiveness, atol=1e-6)

    done = cli(*args, "--target-position", "2", "--methods", "occlusion,attention", "--steps", "8", "--json")
    assert done.returncode == 0, done.stderr
    obj = json.loads(done.stdout)
    assert obj["methods"] == ["occlusion", "attention"] and obj["steps"] == 8
    assert obj["ig_completeness_gap"] is None  # not asked for
    np.testing.assert_allclose(obj["occlusion"], saved["occlusion"], atol=1e-6)
    assert np.array(obj["sufficiency"]).shape == (2, 3)


def test_causal_lm_next_token_and_forced_target(gpt2_zip, tiny_hf_folders, tmp_path):
    from attention_atlas.models.adapters.hf import HFAdapter

    done = cli("attribute", "--checkpoint", gpt2_zip, "--text", TEXT, "--steps", "16", "--json")
    assert done.returncode == 0, done.stderr
    obj = json.loads(done.stdout)
    assert obj["baseline_token"] == "pad [PAD]"
    adapter = HFAdapter("tiny", tiny_hf_folders["causal"], torch.device("cpu"))
    want = at.attribute(at.subject_of(adapter, TEXT), steps=16)
    assert obj["methods"] == list(want.methods) == [m for m in at.METHODS if m != "value_norms"]  # a GPT-2
    assert obj["tokens"] == want.tokens and obj["target"] == want.target
    for m in want.methods:
        np.testing.assert_allclose(obj[m], want.scores[m], atol=1e-5)
    np.testing.assert_allclose(obj["ig_completeness_gap"], want.ig_completeness_gap, atol=1e-5)

    done = cli(
        "attribute",
        "--checkpoint",
        gpt2_zip,
        "--text",
        TEXT,
        "--target-text",
        " dog",
        "--methods",
        "saliency",
    )
    assert done.returncode == 0, done.stderr
    assert "saliency" in done.stdout and "dog" in done.stdout  # the table names the forced token


def test_hf_seq2seq_forced_output_at_a_position(tiny_hf_folders, tmp_path):
    """A tiny BART uploaded as a zipped folder: --target-text forces the output, --target-position picks
    its token; without them the model's own output's last word. Equal to the module's answer here."""
    from attention_atlas.models.adapters.hf import HFAdapter
    from tests.support import folder_zip

    bart = tmp_path / "tiny-bart.zip"
    bart.write_bytes(folder_zip(tiny_hf_folders["seq2seq"], "tiny-bart"))
    out = tmp_path / "b.npz"
    forced = ("--target-text", "le chat", "--target-position", "1")
    done = cli("attribute", "--checkpoint", bart, "--text", TEXT, *forced, "--steps", "8", "--out", out)
    assert done.returncode == 0, done.stderr
    saved = np.load(out)
    adapter = HFAdapter("tiny", tiny_hf_folders["seq2seq"], torch.device("cpu"))
    want = at.attribute(at.subject_of(adapter, TEXT, "le chat", 1), steps=8)
    assert list(saved["methods"]) == list(want.methods) == [m for m in at.METHODS if m not in at.ROWS]
    assert list(saved["tokens"]) == want.tokens and str(saved["target"]) == want.target == "le"
    for m in want.methods:
        np.testing.assert_allclose(saved[m], want.scores[m], atol=1e-5)
    np.testing.assert_allclose(saved["sufficiency"], want.sufficiency, atol=1e-5)
    done = cli("attribute", "--checkpoint", bart, "--text", TEXT, "--methods", "attention", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["target"] == at.subject_of(adapter, TEXT).target
    done = cli(
        "attribute",
        "--checkpoint",
        bart,
        "--text",
        TEXT,
        "--target-text",
        "le chat",
        "--target-position",
        "9",
    )
    assert done.returncode != 0 and "--target-position 9 is out of range" in done.stderr
    assert one_line(done.stderr.strip()) and "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (("--methods", "gradients"), "unknown method 'gradients'"),
        (("--methods", "rollout"), "is an RNN"),
        (("--steps", "0"), "--steps 0"),
        (("--target-position", "9"), "--target-position 9 is out of range"),
        (("--target-position", "-1"), "--target-position -1"),
        (("--out", "a.csv"), "writes .npz files"),
    ],
)
def test_bad_input_is_one_line(tiny_rnn_checkpoint, extra, words):
    done = cli("attribute", "--checkpoint", tiny_rnn_checkpoint, "--text", UPPER, *extra)
    assert done.returncode != 0
    assert words in done.stderr and one_line(done.stderr.strip()) and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1


def test_empty_text_and_an_encoder_are_refused(tiny_hf_folders, tmp_path):
    from tests.support import folder_zip

    done = cli("attribute", "--model", "couplet-rnn-additive", "--text", "  ")
    assert done.returncode != 0 and "the text is empty" in done.stderr
    encoder = tmp_path / "bert.zip"
    encoder.write_bytes(folder_zip(tiny_hf_folders["encoder"], "tiny-bert"))
    done = cli("attribute", "--checkpoint", encoder, "--text", TEXT)
    assert done.returncode != 0 and "is an encoder" in done.stderr and "Traceback" not in done.stderr
