"""Reading a corpus: .txt / .csv / .jsonl / bundled samples, and one-line refusals of bad files."""

import json

import pytest

from attention_atlas.models.corpus.inputs import Corpus, CorpusError, columns, read_bytes, read_file, sample
from tests.support import one_line

ODD = [
    "两个黄鹂鸣翠柳",
    "مرحبا بالعالم",
    "<script>alert(1)</script> & <b>bold</b>",
    "e\u0301 👨\u200d👩\u200d👧",
]


def refused(name: str, data: bytes, column: str | None = None) -> str:
    with pytest.raises(CorpusError) as err:
        read_bytes(name, data, column)
    assert one_line(str(err.value)), str(err.value)
    return str(err.value)


def test_txt_skips_and_counts_empty_lines_and_numbers_the_rest():
    c = read_bytes("a.txt", b"first\n\n  \nsecond\r\nthird\rfourth\n\n")
    assert c.texts == ["first", "second", "third", "fourth"]
    assert c.n_empty == 3
    assert "3 empty lines skipped" in c.summary()


def test_the_summary_counts_in_the_singular_and_in_chinese():
    """Issue 40 item 17: "1 empty rows skipped"; and the Corpus page is read in Chinese too."""
    from attention_atlas import i18n

    one = read_bytes("a.csv", b"text\nfirst\n\"\"\n")
    assert str(one.summary()) == "a.csv: 1 text; 1 empty row skipped"
    with i18n.language("zh"):
        said = i18n.shown(one.summary())
    assert "a.csv" in said and "text" not in said and "row" not in said


def test_txt_keeps_odd_scripts_and_html_as_text(tmp_path):
    path = tmp_path / "odd.txt"
    path.write_text("\ufeff" + "\n".join(ODD) + "\n", encoding="utf-8")  # with a byte-order mark
    assert read_file(path).texts == ODD


def test_binary_non_utf8_and_oversized_files_are_refused_in_one_line(tmp_path, monkeypatch):
    assert "binary" in refused("w.txt", b"PK\x03\x04\x00\x00 weights")
    assert "not UTF-8" in refused("latin.txt", "café\n".encode("latin-1"))
    monkeypatch.setenv("ATLAS_CORPUS_MAX_MB", "0.001")
    path = tmp_path / "big.txt"
    path.write_text("a sentence\n" * 200, encoding="utf-8")
    with pytest.raises(CorpusError, match="size cap") as err:
        read_file(path)
    assert one_line(str(err.value)) and "ATLAS_CORPUS_MAX_MB" in str(err.value)
    with pytest.raises(CorpusError, match="no such file"):
        read_file(tmp_path / "missing.txt")


def test_csv_reads_the_text_column_and_names_the_columns_when_one_is_missing():
    data = b'id,text,label\n1,"Hello, world",a\n2,,b\n3,"two\nlines",c\n'
    c = read_bytes("d.csv", data)
    assert c.texts == ["Hello, world", "two\nlines"] and c.n_empty == 1 and c.column == "text"
    assert read_bytes("d.csv", data, "label").texts == ["a", "b", "c"]
    message = refused("d.csv", data, "sentence")
    assert "'sentence'" in message and "'id', 'text', 'label'" in message
    assert columns("d.csv", data) == ["id", "text", "label"]


def test_csv_without_a_text_column_asks_which_one():
    message = refused("d.csv", b"a,b\n1,2\n")
    assert "--column" in message and "'a', 'b'" in message


def test_malformed_csv_names_the_line():
    assert "line 3" in refused("d.csv", b"text,n\nok,1\nbad,1,2\n")
    assert "malformed" in refused("d.csv", b'text\n"never closed\n')


def test_jsonl_reads_a_field_and_refuses_bad_lines_by_number():
    lines = [json.dumps({"text": t, "n": i}, ensure_ascii=False) for i, t in enumerate(ODD)]
    data = ("\n".join(lines[:2]) + "\n\n" + "\n".join(lines[2:]) + "\n").encode()
    c = read_bytes("d.jsonl", data)
    assert c.texts == ODD and c.n_empty == 1
    assert "line 2" in refused("d.jsonl", b'{"text": "ok"}\n{"text": broken}\n')
    assert "not an object" in refused("d.jsonl", b'["a list"]\n')
    message = refused("d.jsonl", b'{"sentence": "x", "id": 1}\n', "text")
    assert "'text'" in message and "'sentence', 'id'" in message
    assert "not text" in refused("d.jsonl", b'{"text": {"nested": 1}}\n')


def test_jsonl_lone_surrogates_become_replacement_characters():
    assert read_bytes("d.jsonl", b'{"text": "a\\ud800b"}\n').texts == ["a\ufffdb"]


def test_content_hash_follows_the_texts_not_the_file():
    a = read_bytes("one.txt", b"x\ny\n")
    assert a.sha256 == read_bytes("two.txt", b"x\n\ny").sha256
    assert a.sha256 != read_bytes("one.txt", b"y\nx\n").sha256
    assert Corpus("n", ["ab", "c"]).sha256 != Corpus("n", ["a", "bc"]).sha256


def test_bundled_samples_are_distinct_texts_and_the_same_every_time():
    english = sample("english", 50)
    assert (
        len(english.texts) == 50 == len(set(english.texts)) and english.texts == sample("english", 50).texts
    )
    assert all("\t" not in t for t in sample("couplets", 20).texts)
    with pytest.raises(CorpusError, match="english"):
        sample("klingon", 5)
