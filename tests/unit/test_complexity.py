"""Self-attention beside a convolution and a recurrent layer (models.attention.complexity and its
figures): slopes fitted on synthetic timings, paths counted on graphs against the tutorial's
formulas, and real measurements at tiny sizes."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attention_atlas.models.attention import complexity as cx
from attention_atlas.viz_core.complexity_figures import (
    Mark,
    comparison_table,
    edges_frame,
    path_graphs,
    points_frame,
    scaling_chart,
    size_ticks,
)

SIZES = [16, 32, 64, 128, 256, 512, 1024]


@pytest.mark.parametrize("power", [1.0, 2.0, 0.5])
def test_fitted_slope_recovers_the_power_of_clean_timings(power):
    times = [3e-7 * n**power for n in SIZES]
    assert cx.fitted_slope(SIZES, times) == pytest.approx(power, abs=1e-9)


def test_fitted_slope_of_noisy_timings_stays_near_the_power():
    noise = np.random.default_rng(0).lognormal(0.0, 0.05, len(SIZES))
    times = [2e-9 * n**2 * e for n, e in zip(SIZES, noise, strict=True)]
    assert cx.fitted_slope(SIZES, times) == pytest.approx(2.0, abs=0.1)


def test_tail_slope_sees_past_a_fixed_overhead():
    times = [3e-6 + 1e-9 * n**2 for n in SIZES]  # the overhead dominates up to n ≈ 55
    assert cx.fitted_slope(SIZES, times) < 1.5  # over the whole range the overhead hides the n²
    assert cx.tail_slope(SIZES, times) == pytest.approx(2.0, abs=0.1)
    assert cx.tail_slope([16], [1.0]) is None


def test_a_slope_needs_two_different_sizes():
    with pytest.raises(ValueError, match="two different sizes"):
        cx.fitted_slope([8, 8], [1.0, 2.0])


def test_crossover_of_power_laws_is_where_they_meet():
    quadratic = [n * n / 300.0 for n in SIZES]  # n²/300 overtakes n at n = 300
    linear = [float(n) for n in SIZES]
    assert cx.crossover(SIZES, quadratic, SIZES, linear) == pytest.approx(300.0, rel=1e-9)
    assert cx.crossover(SIZES, linear, SIZES, quadratic) is None  # never rises above
    assert cx.crossover(SIZES[:3], quadratic[:3], SIZES, linear) is None  # not within the shared sizes


@pytest.mark.parametrize("layer", cx.LAYERS)
@pytest.mark.parametrize("k", [3, 5, 7])
def test_path_lengths_counted_on_the_graph_equal_the_formulas(layer, k):
    for n in range(1, 14):
        assert cx.path_length(layer, n, k) == cx.path_formula(layer, n, k), (layer, n, k)
    expected = {cx.ATTENTION: 1, cx.CONVOLUTION: math.ceil(9 / ((k - 1) // 2)), cx.RECURRENT: 10}
    assert cx.path_length(layer, 10, k) == expected[layer]


@pytest.mark.parametrize("n", [1, 2, 5, 9])
def test_sequential_steps_are_one_one_and_n(n):
    steps = [cx.sequential_steps(layer, n, 3) for layer in cx.LAYERS]
    assert steps == [1, 1, n]


@pytest.mark.parametrize("layer", cx.LAYERS)
def test_the_drawn_path_runs_along_edges_from_token_0_to_token_n_minus_1(layer):
    g = cx.graph(layer, 6, 3)
    edges = set(g.edges)
    assert all(step in edges for step in zip(g.path[:-1], g.path[1:], strict=True))
    assert g.nodes[g.path[0]] == (0, 0) and g.nodes[g.path[-1]][0] == 5
    assert len(g.path) - 1 == cx.path_formula(layer, 6, 3)
    assert len(g.rows) == 1 + max(row for _, row in g.nodes)


def test_measure_times_and_sizes_every_layer_at_tiny_sizes():
    seen = []
    setup = cx.Setup(sizes=(4, 8), d=8, k=3, rnn="LSTM", repeats=2)
    result = cx.measure(setup, "cpu", on_progress=lambda done, total, layer, n: seen.append((done, total)))
    assert seen == [(i, 6) for i in range(1, 7)]
    assert not result.skipped and len(result.points) == 6
    for p in result.points:
        assert 0 < p.fastest <= p.seconds < 5 and 1 <= p.repeats <= 2 and 0 <= p.cpu_seconds < 5
        assert p.bytes == cx.activation_bytes(p.layer, p.n, 8, 3, "LSTM")  # on the CPU: counted from shapes
    assert result.series(cx.ATTENTION) == ([4, 8], [p.seconds for p in result.points[:2]])
    assert result.device.startswith("CPU") and "counted from shapes" in result.memory


def test_the_layers_keep_the_sequence_shape():
    import torch

    x = torch.randn(1, 7, 8)
    for layer in cx.LAYERS:
        assert cx.build(layer, 8, 5, "GRU", torch.device("cpu"))(x).shape == (1, 7, 8)


def test_sizes_over_the_budget_are_skipped_with_the_reason():
    room = cx.activation_bytes(cx.RECURRENT, 16, 8)  # the GRU at n = 16 fits; attention's 16² weights do not
    tight = cx.Setup(sizes=(4, 8, 16), d=8, budget=cx.Budget(seconds=1.0, bytes=room))
    result = cx.measure(tight)
    skipped = [(s.layer, s.n) for s in result.skipped]
    assert skipped == [(cx.ATTENTION, 16)]
    assert "MiB budget" in result.skipped[0].reason
    slow = cx.measure(cx.Setup(sizes=(4, 8, 16), d=8, repeats=3, budget=cx.Budget(seconds=1e-9)))
    # the first size of each layer, once; then each larger one is predicted too slow
    assert [p.n for p in slow.points] == [4, 4, 4]
    assert all(p.repeats == 1 for p in slow.points)
    assert all("predicted" in s.reason for s in slow.skipped) and len(slow.skipped) == 6


def test_geometric_sizes_and_bad_setups():
    assert cx.geometric_sizes(16, 2048) == (16, 32, 64, 128, 256, 512, 1024, 2048)
    assert cx.geometric_sizes(5, 30) == (5, 10, 20)
    for bad in (dict(k=4), dict(k=1), dict(rnn="RNN"), dict(d=0), dict(repeats=0)):
        with pytest.raises(ValueError):
            cx.Setup(sizes=(4, 8), **bad)
    with pytest.raises(ValueError):
        cx.geometric_sizes(64, 16)


def test_scaling_chart_draws_log_log_lines_and_the_marks():
    result = cx.measure(cx.Setup(sizes=(4, 8), d=8, repeats=1))
    fig = scaling_chart({layer: result.series(layer) for layer in cx.LAYERS}, "time", "s", [Mark(8, "n = d")])
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    assert [t.name for t in fig.data] == [*cx.LAYERS, "n = d"]
    assert list(fig.data[-1].x) == [8, 8]
    assert list(fig.layout.xaxis.tickvals) == [4, 8] and fig.layout.yaxis.ticksuffix == "s"


def test_the_n_axis_labels_at_most_six_sizes_the_largest_among_them():
    sizes = [2**i for i in range(2, 16)]
    ticks = size_ticks(sizes)
    assert len(ticks) <= 6 and ticks[-1] == 32768 and set(ticks) <= set(sizes)
    assert size_ticks([16, 32, 64]) == [16, 32, 64]


def test_graph_panels_and_frames():
    result = cx.measure(cx.Setup(sizes=(4, 8), d=8, repeats=1))
    assert len(points_frame(result.points)) == 6
    graphs = {layer: cx.graph(layer, 5, 3) for layer in cx.LAYERS}
    panels = path_graphs(graphs, 5)
    assert len(panels.layout.annotations) == 3  # a title per panel
    edges = edges_frame(graphs)
    assert edges.groupby("layer")["on_shortest_path"].sum().to_dict() == {
        layer: cx.path_formula(layer, 5, 3) for layer in cx.LAYERS
    }
    table = comparison_table(
        {
            layer: {"tutorial": cx.TUTORIAL[layer], "slope": None, "steps": 1, "path": 2}
            for layer in cx.LAYERS
        },
        5,
    )
    assert (
        table.loc["cost (tutorial)", cx.ATTENTION] == "O(n²·d)"
        and table.loc["fitted slope (measured)"].eq("—").all()
    )
