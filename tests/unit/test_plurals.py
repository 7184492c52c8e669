"""A count agrees with its noun and verb ("1 character is", "2 characters are") wherever a notice
prints one: unknown characters and words, files skipped in a zip, the pages' counted words
(``ui.widgets.plural``). Found in issue 17, item 11 ("1 character(s) ... are")."""

from __future__ import annotations

from attention_atlas.models.tasks import couplet, translation
from attention_atlas.models.uploads.incoming import Incoming
from attention_atlas.models.uploads.readers import _note_skipped
from attention_atlas.models.uploads.safety import Limits
from attention_atlas.ui.widgets import plural
from tests.support import tiny_vocab, tiny_vocabs


def test_unknown_characters_and_words_agree_with_their_count():
    vocab = tiny_vocab()
    one = couplet.unknown_notice(list("两个黄鹂鸣翠X"), vocab)
    two = couplet.unknown_notice(list("两个黄鹂鸣XY"), vocab)
    assert one.startswith("1 character of the upper line is not") and "reads it as" in one
    assert two.startswith("2 characters of the upper line are not") and "reads them as" in two
    src, _ = tiny_vocabs()
    one = translation.unknown_notice(["i", "lost", "zebra"], src)
    assert one.startswith("1 word of the English sentence is not") and "reads it as" in one


def test_one_skipped_file_in_a_zip_is_one_file():
    f = Incoming("mine.zip", b"", Limits(), {})
    _note_skipped(f, ["mine/README.md"])
    _note_skipped(f, ["mine/a.txt", "mine/b.txt"])
    assert f.notices == [
        "skipped 1 other file that is not model data: mine/README.md",
        "skipped 2 other files that are not model data: mine/a.txt, mine/b.txt",
    ]


def test_the_pages_count_words():
    assert [plural(1, "character"), plural(2, "character"), plural(1, "query", "queries")] == [
        "1 character",
        "2 characters",
        "1 query",
    ]
    assert plural(12_000, "token") == "12,000 tokens"


def test_the_counted_words_the_catalog_knows_are_in_the_interfaces_language():
    from attention_atlas import i18n

    with i18n.language("zh"):
        assert [plural(3, "token"), plural(1, "query", "queries"), plural(12, "head")] == [
            "3 个词元",
            "1 个查询",
            "12 个头",
        ]
        assert plural(2, "widget") == "2 widgets"  # a word the catalog does not know stays English


def test_the_counts_of_a_long_paste_have_thousands_separators():
    """Issue 40, item 20: a pasted page said "The upper line has 16623 characters"."""
    from attention_atlas import i18n

    line = couplet.prepare_line("两" * 16_623)
    assert [str(n) for n in line.notices] == ["The upper line has 16,623 characters; only the first 32 are used."]
    sentence = translation.prepare_sentence("i lost . " * 1_200)
    assert any(str(n).startswith("The English sentence has 3,600 words;") for n in sentence.notices)
    many = couplet.unknown_notice([chr(0xAC00 + i) for i in range(1_200)], tiny_vocab())  # Hangul
    assert many.startswith("1,200 characters of the upper line are not")
    with i18n.language("zh"):
        assert i18n.shown(line.notices[0]) == "上联有 16,623 个字，只用前 32 个。"
