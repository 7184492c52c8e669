"""The record, token labels, figure builders and export: numpy, pandas and plotly only."""

import json

import numpy as np
import plotly.io as pio
import pytest

from attention_atlas.viz_core.export import record_frame, records_frame, to_csv
from attention_atlas.viz_core.figures import heatmap, heatmap_row, matrix_heatmap
from attention_atlas.viz_core.record import AttentionRecord, RecordError
from attention_atlas.viz_core.stats import row_entropy
from attention_atlas.viz_core.tokens import clean_token, shown


def uniform(layers=1, heads=1, q=2, k=3):
    return np.full((layers, heads, q, k), 1 / k, dtype=np.float32)


def test_record_accepts_consistent_input_and_converts_to_float32():
    rec = AttentionRecord(uniform().astype(np.float64), ["a", "b"], ["x", "y", "z"], "cross", "demo")
    assert rec.weights.dtype == np.float32 and rec.n_layers == 1 and rec.head().shape == (2, 3)


@pytest.mark.parametrize(
    ("weights", "q_tokens", "k_tokens", "kind", "message"),
    [
        (uniform()[0], ["a", "b"], ["x", "y", "z"], "cross", "need 4 axes"),
        (uniform(), ["a"], ["x", "y", "z"], "cross", "2 query positions but 1 query_tokens"),
        (uniform(), ["a", "b"], ["x", "y"], "cross", "3 key positions but 2 key_tokens"),
        (uniform(), ["a", "b"], ["x", "y", "z"], "sideways", "kind 'sideways'"),
        (uniform() * 2, ["a", "b"], ["x", "y", "z"], "cross", "sums to 2.000000, not 1"),
        (np.where(uniform() > 0, np.nan, 0), ["a", "b"], ["x", "y", "z"], "cross", "6 non-finite"),
        (np.zeros((1, 0, 2, 3)), ["a", "b"], ["x", "y", "z"], "cross", "empty axis"),
    ],
)
def test_record_validation_names_the_problem(weights, q_tokens, k_tokens, kind, message):
    with pytest.raises(RecordError, match=message):
        AttentionRecord(weights, q_tokens, k_tokens, kind, "demo")


def test_record_checks_scores_shape_scoring_name_and_head_index():
    with pytest.raises(RecordError, match="scores have shape"):
        AttentionRecord(uniform(), ["a", "b"], ["x", "y", "z"], "self", "demo", scores=np.zeros((1, 1, 2, 2)))
    with pytest.raises(RecordError, match="scoring 'magic'"):
        AttentionRecord(uniform(), ["a", "b"], ["x", "y", "z"], "self", "demo", scoring="magic")
    rec = AttentionRecord(uniform(2, 3), ["a", "b"], ["x", "y", "z"], "self", "demo")
    with pytest.raises(IndexError, match="head 3 is out of range: the record has 3"):
        rec.head(0, 3)


@pytest.mark.parametrize(
    ("raw", "label"),
    [
        ("Ġcat", "cat"),
        ("▁the", "the"),
        ("##ing", "ing"),
        ("word</w>", "word"),
        ("风", "风"),
        (" ", "␣"),
        ("", "∅"),
    ],
)
def test_token_labels_are_cleaned_in_one_place(raw, label):
    assert clean_token(raw) == label


@pytest.mark.parametrize(
    ("entry", "label"),
    [
        (" Paris", " Paris"),  # a leading space is part of a vocabulary entry
        ("a\nb\tc", "a⏎b⇥c"),
        ("  ", "␣␣"),
        ("\n", "⏎"),
        ("\n  ", "⏎␣␣"),  # whitespace only: every character a mark, as clean_token shows it
        ("", "∅"),
    ],
)
def test_vocabulary_entries_show_their_whitespace(entry, label):
    assert shown(entry) == label


@pytest.mark.parametrize("blank", [" ", "  ", "\n", "\t", "\n\n", "\n   ", " \t", ""])
def test_a_blank_token_reads_the_same_as_a_label_and_as_an_entry(blank):
    assert shown(blank) == clean_token(blank)


def test_heatmap_keeps_repeated_characters_apart_and_hovers_tokens():
    tokens = list("风风雨")
    fig = heatmap(np.eye(3), tokens, tokens)
    trace = fig.data[0]
    assert len(set(trace.x)) == 3 and trace.x[0] != trace.x[1]  # two 风 stay two columns
    assert list(fig.layout.xaxis.ticktext) == ["风", "风", "雨"]
    assert "%{x}" in trace.hovertemplate and "%{z" in trace.hovertemplate
    assert trace.x[1].endswith("风") and trace.x[1].startswith("1")


def test_heatmap_refuses_mismatched_tokens():
    with pytest.raises(ValueError, match=r"matrix is \(2, 2\) but there are 3 query"):
        heatmap(np.eye(2), ["a", "b", "c"], ["x", "y"])


def test_heatmap_row_shares_one_colour_scale():
    panels = {"a": np.eye(2) * 0.5 + 0.25, "b": np.eye(2)}
    fig = heatmap_row(panels, ["q0", "q1"], ["k0", "k1"])
    assert [t.coloraxis for t in fig.data] == ["coloraxis", "coloraxis"]
    assert fig.layout.coloraxis.cmax == 1.0 and fig.layout.coloraxis.cmin == 0.0


def test_large_heatmap_stays_small_and_keeps_three_significant_digits():
    rng = np.random.default_rng(0)
    w = rng.dirichlet(np.ones(512), size=512).astype(np.float32)
    payload = pio.to_json(
        heatmap(w, [str(i) for i in range(512)], [str(i) for i in range(512)]), validate=False
    )
    assert len(payload) <= 1_500_000
    sent = np.frombuffer(
        __import__("base64").b64decode(json.loads(payload)["data"][0]["z"]["bdata"]), dtype=np.float32
    ).reshape(512, 512)
    np.testing.assert_allclose(sent, w, rtol=1e-3)


def test_matrix_heatmap_and_entropy():
    fig = matrix_heatmap(np.arange(6).reshape(2, 3), "col", "row")
    assert fig.data[0].z.shape == (2, 3)
    ent = row_entropy(np.array([[1.0, 0, 0, 0], [0.25] * 4]))
    np.testing.assert_allclose(ent, [0.0, 2.0])


def test_record_frame_is_tidy_and_csv_keeps_chinese():
    rec = AttentionRecord(uniform(2, 1), ["两", "个"], ["一", "行", "白"], "cross", "demo")
    df = record_frame(rec)
    assert list(df.columns) == ["layer", "head", "query_pos", "query_token", "key_pos", "key_token", "weight"]
    assert len(df) == 2 * 2 * 3 and df.groupby(["layer", "query_pos"]).weight.sum().round(5).eq(1).all()
    assert df.iloc[-1].tolist()[:6] == [1, 0, 1, "个", 2, "白"]
    assert "两" in to_csv(df).decode("utf-8-sig")
    both = records_frame({"dot": rec, "cos": rec}, "scoring")
    assert both.columns[0] == "scoring" and len(both) == 2 * len(df)
