"""Every categorical axis keeps one slot per position, however often a token repeats (issue 17, item 2).

Scoring's entropy bars for "The cat sat on the mat…" on minilm showed 12 bars for 13 queries:
the two "the" fell into one category and their bars stacked.
"""

import numpy as np
import pytest

from attention_atlas.viz_core.figures import (
    grouped_bars,
    head_view,
    heatmap,
    heatmap_row,
    larger_ticks,
    record_heatmap,
)
from attention_atlas.viz_core.record import AttentionRecord

TOKENS = ["[CLS]", "the", "cat", "sat", "on", "the", "mat", ".", "[SEP]"]
N = len(TOKENS)


def record() -> AttentionRecord:
    return AttentionRecord(np.full((1, 2, N, N), 1 / N, dtype=np.float32), TOKENS, TOKENS, "self", "demo")


BUILDERS = {
    "grouped_bars": lambda: grouped_bars(TOKENS, {"a": np.arange(N), "b": np.ones(N)}, "query", "bits"),
    "heatmap": lambda: heatmap(np.eye(N), TOKENS, TOKENS),
    "heatmap_row": lambda: heatmap_row({f"head {h}": np.eye(N) for h in range(12)}, TOKENS, TOKENS),
    "record_heatmap": lambda: record_heatmap(record()),
    "head_view": lambda: head_view(record(), 0, "average"),
    "larger_ticks": lambda: larger_ticks(grouped_bars(TOKENS, {"w": np.ones(N)}, "key", "weight"), 24),
}


def category_axes(fig) -> list:
    layout = fig.to_plotly_json()["layout"]
    return [v for k, v in layout.items() if k.startswith(("xaxis", "yaxis")) and v.get("type") == "category"]


@pytest.mark.parametrize("name", BUILDERS)
def test_repeated_tokens_keep_one_slot_per_position(name):
    fig = BUILDERS[name]()
    for trace in fig.data:
        for values in (trace.x, trace.y):
            if (
                values is not None
                and len(values) == N
                and not np.issubdtype(np.asarray(values).dtype, np.number)
            ):
                assert len(set(values)) == N, f"{name}: {len(set(values))} slots for {N} positions"
    axes = category_axes(fig)
    assert axes, f"{name} has no categorical axis"
    for axis in axes:
        assert len(axis["categoryarray"]) == len(set(axis["categoryarray"])) == N
        shown = dict(zip(axis["tickvals"], axis["ticktext"], strict=True))
        assert shown.get(axis["categoryarray"][5], "the") == "the"  # the tick still reads the token


def test_grouped_bars_draw_one_bar_per_position_and_series():
    fig = BUILDERS["grouped_bars"]()
    assert [len(set(t.x)) for t in fig.data] == [N, N]
    assert fig.layout.barmode == "group"
