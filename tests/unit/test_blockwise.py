"""Block-wise attention from queries and keys (viz_core.blockwise) against a dense reference."""

import numpy as np
import pytest

from attention_atlas.viz_core import blockwise as bw
from attention_atlas.viz_core import every_head as eh
from attention_atlas.viz_core import head_stats
from attention_atlas.viz_core.stats import head_table


def random_capture(n=37, layers=2, heads=4, kv=2, dim=8, causal=True, seed=0):
    rng = np.random.default_rng(seed)
    qs = [rng.normal(size=(heads, n, dim)).astype(np.float32) * 2 for _ in range(layers)]
    ks = [rng.normal(size=(kv, n, dim)).astype(np.float32) * 2 for _ in range(layers)]
    special = [i in (0, n - 1) for i in range(n)]
    return bw.QKCapture("test", qs, ks, [dim**-0.5] * layers, causal, [f"t{i}" for i in range(n)], special)


def dense(cap, layer, head):
    """Every head at once, the textbook way: repeat the shared key heads, mask, softmax."""
    q, k = cap.queries[layer], cap.keys[layer]
    k = np.repeat(k, q.shape[0] // k.shape[0], axis=0).astype(np.float64)
    s = q.astype(np.float64) @ k.transpose(0, 2, 1) * cap.scaling[layer]
    if cap.causal:
        s = np.where(np.triu(np.ones(s.shape[-2:], bool), 1), -np.inf, s)
    w = np.exp(s - s.max(-1, keepdims=True))
    return (w / w.sum(-1, keepdims=True))[head]


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("block", [1, 5, 16, 256])
def test_head_weights_equal_the_dense_softmax_for_any_block(causal, block):
    cap = random_capture(causal=causal)
    for layer in range(2):
        for head in range(4):
            got = bw.head_weights(cap, layer, head, block=block)
            assert np.abs(got - dense(cap, layer, head)).max() < 1e-5
    if causal:
        assert np.all(np.triu(got, 1) == 0)


def test_grouped_query_heads_share_their_key_head():
    cap = random_capture(heads=6, kv=2)
    assert np.array_equal(cap.head_qk(0, 2)[1], cap.keys[0][0])  # heads 0–2 share key head 0
    assert np.array_equal(cap.head_qk(0, 3)[1], cap.keys[0][1])
    with pytest.raises(IndexError, match="head 6 is outside 0–5"):
        cap.head_qk(0, 6)


def test_capture_refuses_shapes_that_do_not_fit():
    cap = random_capture()
    with pytest.raises(ValueError, match="do not share"):
        bw.QKCapture("x", [cap.queries[0][:3]], [cap.keys[0]], [1.0], True, cap.tokens, cap.special)
    with pytest.raises(ValueError, match="do not fit 36 tokens"):
        bw.QKCapture("x", cap.queries[:1], cap.keys[:1], [1.0], True, cap.tokens[:-1], cap.special)


@pytest.mark.parametrize("how", ["max", "mean"])
@pytest.mark.parametrize(("n", "cells", "block"), [(37, 8, 5), (37, 37, 4), (37, 64, 256), (100, 7, 3)])
def test_reduce_head_pools_each_cell_over_its_token_range(how, n, cells, block):
    cap = random_capture(n=n)
    full = dense(cap, 1, 3)
    red = bw.reduce_head(cap, 1, 3, cells=cells, how=how, block=block)
    assert red.values.shape == (min(n, cells), min(n, cells))
    assert red.reduced == (cells < n)
    for i, (a, b) in enumerate(red.ranges(0)):
        for j, (c, d) in enumerate(red.ranges(1)):
            cell = full[a : b + 1, c : d + 1]
            assert red.values[i, j] == pytest.approx(cell.max() if how == "max" else cell.mean(), abs=1e-6)


def test_max_pooling_keeps_a_one_token_diagonal_visible():
    n = 400
    eye = np.eye(n, dtype=np.float32)[None] * 30  # each query matches only its own key
    cap = bw.QKCapture("d", [eye], [eye], [1.0], False, ["x"] * n, [False] * n)
    red = bw.reduce_head(cap, 0, 0, cells=40)
    assert np.all(np.diag(red.values) > 0.99)  # a mean would give about 0.1 per diagonal cell
    assert bw.reduce_head(cap, 0, 0, cells=40, how="mean").values.max() < 0.2


def test_window_is_the_full_resolution_slice_and_refuses_outside():
    cap = random_capture(n=60)
    full = dense(cap, 0, 1)
    assert np.abs(bw.window(cap, 0, 1, (10, 30), (5, 55)) - full[10:30, 5:55]).max() < 1e-6
    with pytest.raises(ValueError, match="inside 0–60"):
        bw.window(cap, 0, 1, (10, 61), (0, 5))
    big = random_capture(n=600, layers=1)
    with pytest.raises(ValueError, match="at most 512 × 512"):
        bw.window(big, 0, 0, (0, 513), (0, 10))


@pytest.mark.parametrize("causal", [True, False])
def test_stats_and_thumbnails_match_head_table_and_reduce_head(causal):
    cap = random_capture(n=45, causal=causal)
    weights = np.stack([[dense(cap, layer, h) for h in range(4)] for layer in range(2)]).astype(np.float32)
    expected = head_table(weights, cap.special).to_dict("records")
    thumbs, rows = eh.all_heads(cap, thumb=8, block=7)
    assert thumbs.shape == (2, 4, 8, 8)
    for want, got in zip(expected, rows, strict=True):
        assert got["pattern"] == want["pattern"]
        assert list(got) == list(head_stats.COLUMNS)
        for key in head_stats.NAMES:
            assert got[key] == pytest.approx(want[key], abs=1e-5)
    assert np.allclose(thumbs[1, 2], bw.reduce_head(cap, 1, 2, cells=8).values, atol=1e-6)
    assert bw.head_stats(cap, 1, 2)["mean_distance"] == pytest.approx(rows[6]["mean_distance"], abs=1e-5)


def test_patterns_are_named_like_head_table():
    n = 30
    ids = np.eye(n, dtype=np.float32)[None] * 40
    prev = np.roll(ids, 1, axis=2)  # key j is e_(j+1): query i matches key i - 1
    for keys, name in ((ids, "diagonal"), (prev, "previous token")):
        cap = bw.QKCapture("p", [ids], [keys], [1.0], True, ["x"] * n, [False] * n)
        assert bw.head_stats(cap, 0, 0)["pattern"] == name


def dense_variant(q, k, scaling, window, softcap, sink, alibi):
    """One head the textbook way in float64: scale, softcap, add each key's ALiBi bias, mask the
    future and keys ``window`` or more back, softmax with the sink as one more logit, drop it."""
    n = len(q)
    s = q.astype(np.float64) @ k.astype(np.float64).T * scaling
    if softcap:
        s = np.tanh(s / softcap) * softcap
    if alibi is not None:
        s = s + alibi[:n].astype(np.float64)[None, :]
    i, j = np.indices((n, n))
    s = np.where((j > i) | ((j <= i - window) if window else False), -np.inf, s)
    if sink is not None:
        s = np.concatenate([s, np.full((n, 1), sink)], axis=1)
    w = np.exp(s - s.max(-1, keepdims=True))
    return (w / w.sum(-1, keepdims=True))[:, :n]




def alibi(slopes) -> np.ndarray:
    """A bias per head and key (for up to 512 keys): a slope per head times the key position, and a
    wobble, since the bias is the model's own tensor (Falcon's is rounded to bfloat16), not a line."""
    keys = np.arange(512)
    return (np.asarray(slopes)[:, None] * keys + np.sin(keys)).astype(np.float32)


@pytest.mark.parametrize(
    "variant",
    [
        bw.Variant(window=5),
        bw.Variant(softcap=2.0),
        bw.Variant(sinks=np.array([3.0, -1.0, 0.5, 2.0], np.float32)),
        bw.Variant(alibi=alibi([-0.5, -0.25, -0.125, -0.0625])),
        bw.Variant(window=7, softcap=3.0, sinks=np.array([1.0, 0.0, -2.0, 4.0], np.float32)),
    ],
    ids=["window", "softcap", "sinks", "alibi", "all"],
)
@pytest.mark.parametrize("block", [1, 4, 256])
def test_each_variant_equals_its_dense_definition(variant, block):
    base = random_capture()
    cap = bw.QKCapture(
        "v", base.queries, base.keys, base.scaling, True, base.tokens, base.special, variants=[variant] * 2
    )
    for head in range(4):
        q, k = cap.head_qk(1, head)
        want = dense_variant(q, k, cap.scaling[1], **variant.head(head))
        assert np.abs(bw.head_weights(cap, 1, head, block=block) - want).max() < 1e-5
        assert np.abs(bw.sink_mass(cap, 1, head) - (1 - want.sum(-1))).max() < 1e-5
    assert not variant.plain and cap.variant(0) is variant and random_capture().variant(0).plain


def test_layer_variants_must_match_the_layers():
    cap = random_capture()
    with pytest.raises(ValueError, match="1 layer variants for 2 layers"):
        bw.QKCapture(
            "x", cap.queries, cap.keys, cap.scaling, True, cap.tokens, cap.special, variants=[bw.PLAIN]
        )


# -- every head's thumbnail and statistics: key groups against the per-head path -----------------------


def reference_summary(cap, layer, head, thumb, block=bw.BLOCK):
    """One head the way ``head_summary`` went before key groups: each row block's normalised
    weights through ``head_stats.row_sums``, the thumbnail by ``reduce_head``'s max pooling."""
    n = cap.n_tokens
    sums = sum(
        head_stats.row_sums(part, start, cap.special)
        for start, part in bw.head_blocks(cap, layer, head, block)
    )
    row = {"layer": layer, "head": head, **head_stats.head_row(head_stats.finish(sums, n, n))}
    return bw.reduce_head(cap, layer, head, cells=thumb, how="max", block=block).values, row


def assert_same_summary(got, want):
    (thumb, row), (want_thumb, want_row) = got, want
    assert thumb.shape == want_thumb.shape and np.abs(thumb - want_thumb).max() <= 1e-6
    assert list(row) == list(want_row) and row["pattern"] == want_row["pattern"]
    for name in head_stats.NAMES:
        assert row[name] == pytest.approx(want_row[name], rel=1e-5, abs=1e-6), name


def variant_capture(variant, causal=True, **shape):
    base = random_capture(**shape)
    variants = None if variant is None else [variant] * base.n_layers
    scaling = [0.3, 0.25]  # 0.25: a power of two
    return bw.QKCapture(
        "v", base.queries, base.keys, scaling, causal, base.tokens, base.special, variants=variants
    )


SIX = {
    "plain": None,
    "window": bw.Variant(window=9),
    "softcap": bw.Variant(softcap=2.5),
    "sinks": bw.Variant(sinks=np.array([3.0, -1.0, 0.5, 2.0, 8.0, -4.0], np.float32)),
    "alibi": bw.Variant(alibi=alibi([-0.5, -0.25, -0.125, -0.0625, -1.0, 0.0])),
    "all": bw.Variant(
        window=7, softcap=3.0, sinks=np.linspace(-2, 4, 6, dtype=np.float32), alibi=alibi(-np.ones(6))
    ),
}


BASES = {"e": bw.BASE_E, "2": bw.BASE_2}
PATHS = ["numpy, base e", "numpy, base 2", "compiled"]


@pytest.fixture(params=PATHS)
def path(request, monkeypatch):
    """Each way the summaries may go: numpy's passes with either exponential (``_exponential``: 2^x
    where numpy's is the faster on this CPU), so that both are checked on any CPU, and the compiled
    pass (``viz_core.fused``, numba being a requirement)."""
    if request.param == "compiled":
        assert bw._fused_kernel() is not None, "numba is in requirements.txt: the compiled pass must load"
    else:
        monkeypatch.setattr(bw, "_fused_kernel", lambda: None)
        monkeypatch.setattr(bw, "_exponential", lambda: BASES[request.param[-1]])
    return request.param


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("variant", list(SIX), ids=list(SIX))
@pytest.mark.parametrize(
    ("n", "thumb", "block", "kv"),
    [(37, 8, 5, 2), (20, 32, 6, 2), (130, 32, 48, 2), (64, 8, 256, 2), (45, 8, 16, 1)],
)
def test_key_groups_give_the_per_head_thumbnails_and_statistics(causal, variant, n, thumb, block, kv, path):
    """Three query heads a key head (one key head: six, summarised four and two at a time), any
    variant, lengths not a multiple of the block and below the thumbnail's side, on every path."""
    cap = variant_capture(SIX[variant], causal, n=n, heads=6, kv=kv)
    for layer in range(2):
        thumbs, rows = bw.layer_summary(cap, layer, thumb, block)
        for head in range(6):
            want = reference_summary(cap, layer, head, thumb, block)
            assert_same_summary((thumbs[head], rows[head]), want)
            assert_same_summary(bw.head_summary(cap, layer, head, thumb, block), want)
    thumbs, table = eh.all_heads(cap, thumb, block)
    assert thumbs.shape == (2, 6, min(n, thumb), min(n, thumb)) and len(table) == 12
    assert_same_summary((thumbs[1, 4], table[10]), reference_summary(cap, 1, 4, thumb, block))


def test_the_exponential_chosen_is_one_of_the_two_and_kept():
    exp, unit = bw._exponential()
    assert (exp, unit) in BASES.values() and bw._exponential()[0] is exp


def test_key_groups_sum_any_other_pair_statistic_from_its_definition(monkeypatch):
    """A pair statistic other than the distance goes through its own f; here |q − k| again, under
    another name, must give the distance's sums."""
    cap = variant_capture(SIX["alibi"], False, n=45, heads=6, kv=2)
    generic = head_stats.Statistic("distance_again", "", pair=lambda q, k: np.abs(q - k))
    monkeypatch.setattr(head_stats, "STATISTICS", (*head_stats.STATISTICS, generic))
    group = bw._KeyGroup(cap, 1, slice(3, 6), 8).run(10)
    np.testing.assert_allclose(group.sums[:, -1], group.sums[:, 1], rtol=1e-6)
    assert group.sums[:, 1].min() > 1


@pytest.mark.parametrize("block", [1, 4, 256])
def test_a_window_without_a_causal_mask_drops_only_the_keys_too_far_back(block):
    base = random_capture(causal=False)
    variant = bw.Variant(window=6)
    cap = bw.QKCapture(
        "w", base.queries, base.keys, base.scaling, False, base.tokens, base.special, variants=[variant] * 2
    )
    q, k = (a.astype(np.float64) for a in cap.head_qk(0, 3))
    s = q @ k.T * cap.scaling[0]
    i, j = np.indices(s.shape)
    s = np.where(j <= i - 6, -np.inf, s)
    want = np.exp(s - s.max(-1, keepdims=True))
    want /= want.sum(-1, keepdims=True)
    assert np.abs(bw.head_weights(cap, 0, 3, block=block) - want).max() < 1e-5


@pytest.mark.parametrize("how", ["max", "mean"])
@pytest.mark.parametrize(("n", "cells", "block", "window"), [(61, 8, 5, 6), (61, 61, 7, 3), (90, 7, 4, 20)])
def test_reduce_head_of_a_window_pools_the_rows_it_reads(how, n, cells, block, window):
    """A window's blocks read a band of keys (``narrow_rows``); pooled, they equal the full rows'
    cells, those outside the band 0."""
    import dataclasses

    cap = random_capture(n=n)
    cap = dataclasses.replace(cap, variants=[bw.Variant(window=window)] * cap.n_layers)
    full = bw.head_weights(cap, 1, 3, block=block)
    red = bw.reduce_head(cap, 1, 3, cells=cells, how=how, block=block)
    for i, (a, b) in enumerate(red.ranges(0)):
        for j, (c, d) in enumerate(red.ranges(1)):
            cell = full[a : b + 1, c : d + 1]
            assert red.values[i, j] == pytest.approx(cell.max() if how == "max" else cell.mean(), abs=1e-6)
    assert red.values[-1, 0] == 0 and red.values.max() > 0  # the last queries never read the first keys
