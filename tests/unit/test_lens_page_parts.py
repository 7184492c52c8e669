"""The logit-lens page's parts without a page (issue 24, item 2): the grid filled the last 64
positions first and the rest by its background job, equal to ``top_tokens`` over every position at
once; the grid figure's cells, hover and axis; its payload at SmolLM2's sizes."""

import json
import time

import numpy as np
import pytest
import torch

from attention_atlas.models.analysis import lens as ln
from attention_atlas.ui import lens_cached as lc
from attention_atlas.viz_core import lens_figures as lf


@pytest.fixture(scope="module")
def stream(one_thread):
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(vocab_size=300, n_embd=16, n_layer=3, n_head=2, n_positions=256)
    model = GPT2LMHeadModel(config).eval()
    ids = torch.randint(0, 300, (1, 150))
    return ln.residuals(model, ids, "tiny-gpt2")


def as_text(ids: np.ndarray) -> np.ndarray:
    return ids.astype(str).astype(object)


def test_the_last_positions_come_first_and_the_job_fills_the_rest_alike(stream):
    run = lc.LensRun(stream, as_text).first()
    assert run.done() == lc.FIRST and run.filled[-lc.FIRST :].all() and not run.complete
    assert run.window(0, 16) is None  # not read yet
    labels, _, positions = run.window(150 - 16, 150)
    assert list(positions) == list(range(134, 150)) and labels.shape == (3, 16, lc.TOP)
    run.ask()
    deadline = time.monotonic() + 60
    while not run.complete and time.monotonic() < deadline:
        time.sleep(0.05)
    assert run.complete and run.job.message == "every position read"
    whole = ln.top_tokens(stream, lc.TOP)
    assert np.array_equal(run.ids, whole.top_ids)
    assert np.allclose(run.probs, whole.top_probs, atol=1e-6)
    labels, _, _ = run.window(0, 150)
    assert np.array_equal(labels, as_text(whole.top_ids))


def test_the_fill_stops_when_nobody_looks(stream):
    run = lc.LensRun(stream, as_text, idle=0.0).first()
    run.ask()
    run.job.thread.join(10)
    assert run.job.status == "idle" and not run.complete


def grid_arrays(blocks: int, n: int, k: int = 10, seed: int = 0):
    rng = np.random.default_rng(seed)
    words = np.array(
        [" Paris", " the", "\n", "两", "<0xE4>", " antidisestablishment", "&<b>", " a"], dtype=object
    )
    labels = words[rng.integers(0, len(words), (blocks, n, k))]
    probs = np.sort(rng.dirichlet(np.ones(50), (blocks, n))[..., :k], -1)[..., ::-1].astype(np.float32)
    return labels, probs


def test_the_grid_cells_hover_and_axis():
    labels, probs = grid_arrays(4, 5)
    tokens = ["The", " capital", "两(1/2)", "两(2/2)", " is"]
    fig = lf.lens_grid(labels, probs, tokens, range(10, 15), "title")
    trace = fig.data[0]
    assert np.allclose(np.asarray(trace.z, dtype=float), probs[:, :, 0], rtol=2e-3)
    assert list(trace.x) == ["10 · The", "11 · capital", "12 · 两(1/2)", "13 · 两(2/2)", "14 · is"]
    assert list(fig.layout.xaxis.ticktext) == ["The", "capital", "两", "〃", "is"]
    cell = str(labels[3, 4, 0])
    assert trace.text[3][4] == lf.as_plotly_text([lf.shown(cell)])[0][:20] or trace.text[3][4].endswith("…")
    cells = fig.data[1]  # the clickable layer carries the hover: point i is block i // 5, position i % 5
    assert trace.hoverinfo == "skip" and lf.clicked_cell(3 * 5 + 4, 4, 5) == (3, 4)
    assert (cells.x[3 * 5 + 4], cells.y[3 * 5 + 4]) == (trace.x[4], 3)
    assert cells.customdata[3 * 5 + 4][0] == "14 · is"
    hover = cells.customdata[3 * 5 + 4][1].split("<br>")
    assert len(hover) == 10 and hover[0].endswith(f"{probs[3, 4, 0]:.3f}")
    assert "<b>" not in "".join(hover)  # a token is text, never markup
    assert lf.clicked_cell(4 * 5, 4, 5) is None and lf.clicked_cell(-1, 4, 5) is None
    many = lf.lens_grid(*grid_arrays(4, 64), ["x"] * 64, range(64))
    assert all(len(t) <= 1 for row in many.data[0].text for t in row)  # too narrow for more than a letter


def test_the_grid_payload_at_smollm2s_sizes_stays_under_a_megabyte():
    """30 blocks × the 64 positions on screen × the top 10 (the most a window shows, at any length)."""
    labels, probs = grid_arrays(30, 64)
    fig = lf.lens_grid(labels, probs, [" token"] * 64, range(448, 512))
    size = len(json.dumps(fig.to_plotly_json(), cls=__import__("plotly").utils.PlotlyJSONEncoder))
    assert size < 1_000_000, size


def test_the_tables():
    labels, probs = grid_arrays(2, 3, 4)
    frame = lf.grid_frame(labels, probs, ["a", "b", "c"], [5, 6, 7])
    assert len(frame) == 2 * 3 * 4 and list(frame.columns) == [
        "block",
        "position",
        "input_token",
        "rank",
        "token",
        "probability",
    ]
    row = frame[(frame.block == 1) & (frame.position == 6) & (frame["rank"] == 2)].iloc[0]
    assert (
        row.token == labels[1, 1, 2]
        and np.isclose(row.probability, probs[1, 1, 2])
        and row.input_token == "b"
    )
    up = np.array([[" Paris", " Rome"]], dtype=object)
    table = lf.changes_table(up, np.array([[3.14, 1.0]]), up[:, ::-1], np.array([[-2.0, -0.5]]), top=2)
    assert table.iloc[0].to_dict() == {
        "block": 0,
        "promoted (logit change)": "' Paris' +3.14, ' Rome' +1.00",
        "suppressed (logit change)": "' Rome' -2.00, ' Paris' -0.50",
    }


EXITING = """
import time, torch
from transformers import GPT2Config, GPT2LMHeadModel
from attention_atlas.models.analysis import lens as ln
from attention_atlas.ui import lens_cached as lc
torch.manual_seed(0)
config = GPT2Config(vocab_size=49152, n_embd=64, n_layer=8, n_head=2, n_positions=1024, eos_token_id=0, bos_token_id=0)
stream = ln.residuals(GPT2LMHeadModel(config).eval(), torch.randint(0, 49152, (1, 900)), "tiny")
run = lc.LensRun(stream, lambda ids: ids).first()
run.ask()
time.sleep(1)
print("exits with", run.done(), "of 900 read")
"""


@pytest.mark.slow
def test_a_process_that_exits_while_the_fill_runs_exits_cleanly():
    """Without the stop at exit, torch's threads torn down under a running chunk abort the process
    ("terminate called without an active exception", status 134): a test run or a server would end so."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", EXITING], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "exits with" in done.stdout, done.stderr[-500:]
    assert "terminate called" not in done.stderr


@pytest.mark.parametrize(("ranks", "ticks"), [([1, 0, 0], [1, 2]), ([30_000, 120, 0], [1, 10, 100, 1_000, 10_000, 100_000])])
def test_the_rank_axis_is_labelled_at_whole_ranks(ranks, ticks):
    """Issue 40, item 8: a rank that went from 2 to 1 had its log axis labelled 1, 1.2, 1.4 … 2;
    ranks are whole numbers, on screen and on a projector."""
    from attention_atlas.viz_core.layout import projector

    fig = lf.follow_figure(np.array([0.2, 0.5, 0.9]), np.array(ranks), " Paris", "4 · is")
    for axis in (fig.layout.yaxis2, projector(fig).layout.yaxis2):
        assert axis.type == "log" and list(axis.tickvals) == ticks
        assert list(axis.ticktext) == [f"{t:,}" for t in ticks]
