"""Byte-level BPE pieces (GPT-2, SmolLM2, BART…) shown as the text they stand for (issue 17, item 1).

The pieces below are what SmolLM2's tokenizer returns (``convert_ids_to_tokens``): each character
of a piece stands for one byte, so 两 (E4 B8 A4) comes as ``ä¸`` + ``¤``.
"""

import numpy as np
import pytest

from attention_atlas.viz_core.derive import hide_special, merge_words
from attention_atlas.viz_core.record import AttentionRecord
from attention_atlas.viz_core.tokens import byte_level_labels, clean_tokens


@pytest.mark.parametrize(
    ("pieces", "labels"),
    [
        (["The", "Ġcat", "Ċ"], ["The", " cat", "\n"]),
        (["C", "af", "Ã©"], ["C", "af", "é"]),
        (["Ð½Ð°", "ĠÑģ", "ÑĤ", "Ð¾Ð»", "Ðµ"], ["на", " с", "т", "ол", "е"]),
        # 两 split over two pieces, 个 whole, 黄 over three: each fragment names its character
        # and which of the pieces holding it this one is.
        (["ä¸", "¤", "ä¸ª", "é", "»", "Ħ"], ["两(1/2)", "两(2/2)", "个", "黄(1/3)", "黄(2/3)", "黄(3/3)"]),
        # 😀 = F0 9F 98 80 after a space, 🙃 = F0 9F 99 83
        (["ĠðŁĺ", "Ģ", "ðŁ", "Ļ", "ĥ"], [" 😀(1/2)", "😀(2/2)", "🙃(1/3)", "🙃(2/3)", "🙃(3/3)"]),
        # one piece ending one character and starting the next
        (["ä¸¤ä", "¸ª"], ["两个(1/2)", "个(2/2)"]),
        # bytes that never complete a character (the text was cut mid-character) show as bytes
        (["Ġa", "ä¸"], [" a", "<0xE4><0xB8>"]),
    ],
)
def test_byte_level_pieces_become_their_text(pieces, labels):
    assert byte_level_labels(pieces) == labels


def test_special_pieces_are_kept_and_break_the_byte_stream():
    pieces = ["<|im_start|>", "ä¸", "¤", "<|im_end|>"]
    labels = byte_level_labels(pieces, special=[True, False, False, True])
    assert labels == ["<|im_start|>", "两(1/2)", "两(2/2)", "<|im_end|>"]
    assert clean_tokens(labels) == ["<|im_start|>", "两(1/2)", "两(2/2)", "<|im_end|>"]


def test_a_piece_outside_the_byte_alphabet_is_left_as_it_is():
    assert byte_level_labels(["[CLS]", "风", "Ġx"]) == ["[CLS]", "风", " x"]  # 风 is no byte character


def byte_record(pieces: list[str], word_ids: list[int | None], special: list[bool]) -> AttentionRecord:
    n = len(pieces)
    labels = byte_level_labels(pieces, special)
    weights = np.tril(np.ones((n, n), dtype=np.float32))
    weights = (weights / weights.sum(-1, keepdims=True))[None, None]
    meta = {
        "query_pieces": pieces,
        "key_pieces": pieces,
        "query_word_ids": word_ids,
        "key_word_ids": word_ids,
        "query_special": special,
        "key_special": special,
    }
    return AttentionRecord(weights, labels, labels, "self", "demo", meta=meta)


def test_merged_words_are_decoded_from_their_bytes_not_glued_from_labels():
    pieces = ["<|im_start|>", "ä¸", "¤", "ä¸ª", "é", "»", "Ħ", "ĠC", "af", "Ã©"]
    word_ids = [None, 0, 0, 0, 0, 0, 0, 1, 1, 1]
    rec = byte_record(pieces, word_ids, [True] + [False] * 9)
    merged = merge_words(rec)
    assert clean_tokens(merged.query_tokens) == ["<|im_start|>", "两个黄", "Café"]
    assert merged.meta["key_pieces"] == ["<|im_start|>", "ä¸¤ä¸ªé»Ħ", "ĠCafÃ©"]
    hidden = hide_special(rec)
    assert hidden.meta["query_pieces"] == pieces[1:] and hidden.query_tokens == rec.query_tokens[1:]
    assert clean_tokens(merge_words(hidden).key_tokens) == ["两个黄", "Café"]
