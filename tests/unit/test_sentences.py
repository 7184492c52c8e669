"""Documents read by sentence (issue 26): spans of sentences and paragraphs from token labels, and a
head's attention between spans equal to the full matrix's rows averaged and columns summed."""

import numpy as np
import pytest

from attention_atlas.viz_core import blockwise as bw
from attention_atlas.viz_core import sentences as sn

BPE = ["The", " river", " rose", ".", " Old", " Chen", " ran", "!", "\n", "\n", "A", " new", " one", "?",
       " Pi", " is", " 3", ".", "14", ".", "\n", "“", "Quoted", ".”", " Done"]  # fmt: skip


def texts(tokens, unit):
    return sn.spans(tokens, unit).texts


def test_sentences_end_at_punctuation_before_a_new_word_and_at_line_breaks():
    assert texts(BPE, "sentence") == [
        "The river rose.",
        " Old Chen ran!\n\n",  # the blank line joins the sentence before it
        "A new one?",
        " Pi is 3.14.\n",  # "3.14" is no sentence end: "14" starts no new word
        "“Quoted.”",
        " Done",
    ]


def test_paragraphs_end_at_blank_lines():
    assert texts(BPE, "paragraph") == [
        "The river rose. Old Chen ran!\n\n",
        "A new one? Pi is 3.14.\n“Quoted.” Done",
    ]


def test_wordpiece_labels_without_spaces_split_at_every_end_mark_and_chinese_marks_count():
    tokens = ["[CLS]", "the", "river", "rose", ".", "你", "好", "。", "再", "见", "！", "[SEP]"]
    assert texts(tokens, "sentence") == ["[CLS]theriverrose.", "你好。", "再见！", "[SEP]"]
    assert texts(tokens, "paragraph") == ["".join(tokens)]  # no line breaks: one paragraph


def test_bad_requests_are_one_line():
    with pytest.raises(ValueError, match="read by sentence or paragraph"):
        sn.spans(BPE, "word")
    with pytest.raises(ValueError, match="no tokens"):
        sn.spans([], "sentence")


def capture(n: int, causal: bool, seed: int = 0) -> bw.QKCapture:
    rng = np.random.default_rng(seed)
    q = [rng.standard_normal((2, n, 8), dtype=np.float32) for _ in range(2)]
    k = [rng.standard_normal((1, n, 8), dtype=np.float32) for _ in range(2)]
    tokens = [(" w" if i % 7 else ".") for i in range(n)]
    return bw.QKCapture("test", q, k, [8**-0.5] * 2, causal, tokens, [False] * n)


@pytest.mark.parametrize("causal", [True, False])
def test_span_attention_is_the_full_matrix_rows_averaged_and_columns_summed(causal):
    n = 3 * bw.BLOCK + 37  # spans cross the row blocks
    cap = capture(n, causal)
    parts = sn.spans(cap.tokens, "sentence")
    assert len(parts) > 100
    full = bw.head_weights(cap, 1, 1)
    e = parts.edges
    naive = np.array([[full[e[s] : e[s + 1], e[t] : e[t + 1]].sum(1).mean() for t in range(len(parts))]
                      for s in range(len(parts))])  # fmt: skip
    got = sn.by_span(cap, 1, 1, parts)
    assert np.allclose(got, naive, atol=1e-5)
    assert np.allclose(got.sum(1), 1, atol=1e-5)  # a query sentence's row still sums to 1
    if causal:
        assert np.all(np.triu(got, 1) == 0)  # no sentence attends to a later one
    layer = sn.layer_by_span(cap, 1, parts)
    assert np.allclose(layer, np.mean([sn.by_span(cap, 1, h, parts) for h in range(2)], axis=0))
