"""cli.py extract --text-file --layer --head --out F.npz (one head at any length) and figure --text-file."""

import json
import random

import numpy as np
import pytest

from tests.support import run_cli as cli

WORDS = "the cat sat on mat because it was tired and a dog ran after ball while rain fell over town".split()  # noqa: SIM905


def text_file(tmp_path, words: int, seed: int = 0):
    rng = random.Random(seed)
    path = tmp_path / "input.txt"
    path.write_text(" ".join(rng.choice(WORDS) for _ in range(words)) + "\n", encoding="utf-8")
    return path


def test_extract_one_head_of_minilm_equals_that_head_of_the_record(tmp_path):
    path, out = text_file(tmp_path, 300), tmp_path / "head.npz"
    run = cli("extract", "--model", "minilm", "--text-file", path, "--layer", 2, "--head", 5, "--out", out)
    assert run.returncode == 0, run.stderr
    assert "layer 2, head 5" in run.stdout
    data = np.load(out)
    n = len(data["query_tokens"])
    assert data["weights"].shape == (n, n) and 290 < n <= 512
    assert str(data["model"]) == "minilm" and int(data["layer"]) == 2 and int(data["head"]) == 5
    run = cli("extract", "--model", "minilm", "--text-file", path, "--out", tmp_path / "all.npz")
    assert run.returncode == 0, run.stderr
    full = np.load(tmp_path / "all.npz")
    assert list(full["self_query_tokens"]) == list(data["query_tokens"])
    assert np.abs(full["self_weights"][2, 5] - data["weights"]).max() < 1e-5


def test_extract_text_file_json_stays_the_short_output(tmp_path):
    run = cli("extract", "--model", "minilm", "--text-file", text_file(tmp_path, 8), "--json")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["records"][0]["kind"] == "self"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--layer", "1"], "--layer and --head go together"),
        (["--layer", "1", "--head", "0"], "give --out FILE.npz"),
        (
            ["--layer", "9", "--head", "0", "--out", "x.npz"],
            "--layer 9 is out of range: the model has layers 0..5",
        ),
        (
            ["--layer", "1", "--head", "12", "--out", "x.npz"],
            "--head 12 is out of range: the model has heads 0..11",
        ),
    ],
)
def test_extract_head_mistakes_are_one_line(tmp_path, extra, message):
    run = cli("extract", "--model", "minilm", "--text-file", text_file(tmp_path, 5), *extra)
    assert run.returncode != 0 and message in run.stderr
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr


def test_extract_over_the_context_is_refused_not_cut(tmp_path):
    out = tmp_path / "h.npz"
    run = cli(
        "extract",
        "--model",
        "minilm",
        "--text-file",
        text_file(tmp_path, 900),
        "--layer",
        0,
        "--head",
        0,
        "--out",
        out,
    )
    assert run.returncode == 1 and "minilm reads at most 512: shorten it" in run.stderr
    assert not out.exists()


def test_figure_takes_a_text_file(tmp_path):
    out = tmp_path / "f.json"
    run = cli(
        "figure", "--model", "minilm", "--text-file", text_file(tmp_path, 20), "--view", "head", "--out", out
    )
    assert run.returncode == 0, run.stderr
    assert json.loads(out.read_text())["data"][0]["type"] == "heatmap"


@pytest.mark.slow
def test_smollm2_one_head_at_about_1000_tokens_and_its_long_figure(tmp_path):
    path, out = text_file(tmp_path, 1000, seed=2), tmp_path / "head.npz"
    run = cli(
        "extract",
        "--model",
        "smollm2",
        "--text-file",
        path,
        "--layer",
        4,
        "--head",
        7,
        "--out",
        out,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    w = np.load(out)["weights"]
    assert 900 < w.shape[0] <= 1200 and w.shape[0] == w.shape[1]  # over run()'s 512: nothing cut
    assert np.allclose(w.sum(1), 1, atol=1e-4) and np.all(np.triu(w, 1) == 0)  # causal rows
    fig = tmp_path / "f.json"
    run = cli(
        "figure",
        "--model",
        "smollm2",
        "--text-file",
        path,
        "--view",
        "head",
        "--layer",
        4,
        "--head",
        7,
        "--out",
        fig,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    drawn = json.loads(fig.read_text())
    heat = drawn["data"][0]
    assert len(heat["y"]) == w.shape[0] and heat["y"][3].startswith("3 · ")
    # the Long inputs page's figure, from one builder (last round's notes: title, height and colours differed)
    title = f"layer 4, head 7: {w.shape[0]:,} tokens, every token"
    assert drawn["layout"]["title"]["text"] == title and drawn["layout"]["height"] == 720
    assert "√" in json.dumps(drawn["data"][0]["colorbar"], ensure_ascii=False)  # √ colours, as the page opens
