"""Two inputs compared and one token masked (issue 17): token alignment, differences on aligned
positions only, masking at the id level, and the change it makes (``ui/compare`` and the adapters)."""

import numpy as np
import pytest

from attention_atlas.ui.compare import (
    align,
    aligned_difference,
    mean_abs,
    pill_labels,
    row_change,
    shown_rows,
    variant,
)
from attention_atlas.viz_core.derive import ViewOptions
from attention_atlas.viz_core.record import AttentionRecord

TEXT = "The cat sat on the mat because it was tired."


def test_align_pairs_equal_and_same_length_substitutions_and_leaves_out_insertions():
    al = align(["the", "cat", "sat", "on", "the", "mat"], ["the", "big", "dog", "sat", "on", "the", "mat"])
    # "cat" → "big dog" is a replacement of another length: left out on both sides
    assert (al.a, al.b) == ([0, 2, 3, 4, 5], [0, 3, 4, 5, 6])
    assert al.only_a == [1] and al.only_b == [1, 2] and al.same == 5
    swapped = align(["the", "cat", "sat"], ["the", "dog", "sat"])
    assert swapped.a == swapped.b == [0, 1, 2] and swapped.labels == ["the", "cat｜dog", "sat"]
    assert swapped.same == 2 and not swapped.only_a and not swapped.only_b
    assert align(["The", " cat"], ["The", " dog"]).labels == ["The", "cat｜dog"]  # byte-level spaces


def test_align_keeps_repeated_tokens_at_their_own_positions():
    al = align(["a", "the", "the", "b"], ["the", "the", "b"])
    assert al.a == [1, 2, 3] and al.b == [0, 1, 2] and al.only_a == [0]


def test_difference_is_taken_only_where_tokens_line_up():
    rng = np.random.default_rng(0)
    first = rng.random((2, 3, 4, 4))
    second = np.insert(first, 2, 100.0, axis=2)  # an inserted token: a row of 100s …
    second = np.insert(second, 2, 100.0, axis=3)  # … and a column of 100s
    al = align(["a", "b", "c", "d"], ["a", "b", "X", "c", "d"])
    assert al.only_b == [2]
    diff = aligned_difference(first, second, al, al)
    assert diff.shape == (2, 3, 4, 4)
    assert np.array_equal(diff, np.zeros_like(diff))  # the 100s never enter
    assert np.array_equal(mean_abs(diff), np.zeros((2, 3)))
    second[..., 0, 1] += 0.5  # a change at an aligned cell shows, at that cell only
    diff = aligned_difference(first, second, al, al)
    assert np.allclose(diff[..., 0, 1], -0.5) and np.count_nonzero(diff) == 2 * 3
    assert np.allclose(mean_abs(diff), 0.5 / 16)


def test_row_change_is_total_variation_averaged_over_the_other_rows():
    before = np.full((1, 1, 3, 2), 0.5)
    after = before.copy()
    after[0, 0, 1] = [1.0, 0.0]  # the masked row: left out
    after[0, 0, 2] = [0.9, 0.1]  # TV 0.4
    assert row_change(before, after, skip=[1])[0, 0] == pytest.approx(0.4 / 2)
    assert row_change(before, before, skip=[1])[0, 0] == 0.0


def test_shown_rows_follow_merged_words_and_hidden_specials():
    w = np.full((1, 1, 5, 5), 0.2, dtype=np.float32)
    meta = {
        side + key: value
        for side in ("query_", "key_")
        for key, value in (
            ("special", [True, False, False, False, True]),
            ("word_ids", [None, 0, 0, 1, None]),
        )
    }
    tokens = ["[CLS]", "un", "##real", "cat", "[SEP]"]
    rec = AttentionRecord(w, tokens, tokens, "self", "test", meta=meta)
    assert shown_rows(rec, 2, ViewOptions(merge=False, hide=False)) == [2]
    assert shown_rows(rec, 2, ViewOptions(merge=True, hide=False)) == [1]  # [CLS] · unreal · cat · [SEP]
    assert shown_rows(rec, 3, ViewOptions(merge=True, hide=True)) == [1]  # unreal · cat
    assert shown_rows(rec, 3, ViewOptions(merge=False, hide=True)) == [2]
    for merge, hide, pos, label in (
        (True, True, 1, "unreal"),
        (False, True, 3, "cat"),
        (True, False, 4, "[SEP]"),
    ):
        shown = ViewOptions(merge=merge, hide=hide).apply(rec).query_tokens
        assert [shown[i] for i in shown_rows(rec, pos, ViewOptions(merge=merge, hide=hide))] == [label]


def test_pill_labels_are_distinct_for_repeated_tokens_and_escaped():
    tokens = ["[CLS]", "the", "**cat**", "the", "<b>", "[SEP]"]
    labels = pill_labels(tokens, [1, 2, 3, 4])
    assert labels == {1: "the₁", 2: "\\*\\*cat\\*\\*", 3: "the₃", 4: "\\<b\\>"}
    assert len(set(labels.values())) == 4


def test_the_second_box_starts_with_one_word_changed():
    assert variant(TEXT) == "The dog sat on the mat because it was tired."
    assert variant("两个黄鹂鸣翠柳") == "两个白鹂鸣翠柳"
    assert variant("Nothing to swap here") == "Nothing to swap"


# -- masking at the id level ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def minilm():
    from attention_atlas.models.registry import load

    return load("minilm", "cpu")


def test_masking_changes_exactly_that_id_and_keeps_the_length(minilm):
    plain, masked = minilm.encode(TEXT), minilm.masked(TEXT, 2)
    changed = (plain.ids != masked.ids)[0].nonzero().flatten().tolist()
    assert changed == [2] and masked.ids.shape == plain.ids.shape
    assert masked.ids[0, 2].item() == minilm.tokenizer.mask_token_id and masked.tokens[2] == "[MASK]"
    assert masked.special == plain.special and masked.word_ids == plain.word_ids
    assert minilm.masked(TEXT, 2, "pad").ids[0, 2].item() == minilm.tokenizer.pad_token_id
    assert list(minilm.replacements()) == ["mask", "pad", "unk"]


def test_special_tokens_and_positions_outside_cannot_be_masked(minilm):
    with pytest.raises(ValueError, match="special tokens cannot be masked"):
        minilm.masked(TEXT, 0)  # [CLS]
    with pytest.raises(ValueError, match="outside"):
        minilm.masked(TEXT, 99)
    with pytest.raises(ValueError, match="no eos token"):
        minilm.masked(TEXT, 2, "eos")


def test_a_masked_token_changes_minilm_heads_and_the_same_ids_change_nothing(minilm):
    before = minilm.run(TEXT).records["self"].weights
    same = minilm.run_encoded(minilm.encode(TEXT)).records["self"].weights
    assert np.array_equal(row_change(before, same, [2]), np.zeros((6, 12)))  # exactly zero
    after = minilm.run_masked(TEXT, 2).records["self"]
    assert after.query_tokens[2] == "[MASK]" and after.weights.shape == before.shape
    change = row_change(before, after.weights, [2])
    assert change.min() > 0 and change.max() > 0.05  # every head moves, some a lot


def test_tiny_causal_model_masks_with_its_tokenizer_and_leaves_earlier_rows_alone(tiny_hf_folders):
    from attention_atlas.models.adapters.hf import HFAdapter

    gpt = HFAdapter("tiny-gpt", tiny_hf_folders["causal"], "cpu")
    before = gpt.run("a b c d").records["self"].weights
    after = gpt.run_masked("a b c d", 2).records["self"].weights  # [CLS] a [b] c d [SEP]
    assert np.array_equal(after[:, :, :2], before[:, :, :2])  # causal: rows before the mask keep
    assert not np.allclose(after[:, :, 2:], before[:, :, 2:])


def test_couplet_transformer_reads_a_masked_character_as_unk(bundled_couplet_transformer):
    model = bundled_couplet_transformer
    upper = "两个黄鹂鸣翠柳"
    result = model.run(upper)
    masked = model.run_masked(upper, 2, target=result.output)
    for kind, rec in masked.records.items():
        assert rec.weights.shape == result.records[kind].weights.shape
        assert rec.query_tokens == result.records[kind].query_tokens or kind == "encoder_self"
    assert masked.records["encoder_self"].key_tokens == ["两", "个", "<unk>", "鹂", "鸣", "翠", "柳"]
    assert row_change(result.records["cross"].weights, masked.records["cross"].weights, []).max() > 0
    same = model.run(upper, target=result.output).records["cross"].weights
    assert np.array_equal(same, result.records["cross"].weights)
    with pytest.raises(ValueError, match="<unk> only"):
        model.run_masked(upper, 2, "mask")
