"""A corpus: the texts of a ``.txt`` (one a line), ``.csv`` or ``.jsonl`` file, or a bundled sample.

Every problem is one ``CorpusError`` whose message names the file and what is wrong with it:
binary bytes, text that is not UTF-8, a file over the size cap (``ATLAS_CORPUS_MAX_MB``), a
malformed CSV row or JSON line, a column that does not exist (the message lists the ones that
do). Empty texts are skipped and counted; ``text_id`` is a text's place among the kept ones.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import os
import random
import re
from dataclasses import dataclass
from pathlib import Path

from attention_atlas.i18n import N_, Later, later, later_n

MB = 2**20
FORMATS = (".txt", ".csv", ".jsonl")
_SURROGATE = re.compile("[\ud800-\udfff]")
_LINES = re.compile(r"\r\n|\r|\n")  # what Python's own text files split on (universal newlines)


class CorpusError(ValueError):
    """A corpus that cannot be read: one line naming the file and the problem."""


@dataclass(frozen=True)
class Corpus:
    name: str  # the file's name, or the sample's
    texts: list[str]  # the non-empty texts in file order: text_id is the index
    n_empty: int = 0  # empty lines or cells skipped
    column: str | None = None  # the CSV/JSONL field read

    @property
    def sha256(self) -> str:
        """The content hash: the texts themselves, in order (not the file's name or format)."""
        h = hashlib.sha256()
        for t in self.texts:
            b = t.encode("utf-8")
            h.update(len(b).to_bytes(8, "little") + b)
        return h.hexdigest()

    def summary(self) -> Later:
        """``'reviews.csv: 9,999 texts; 1 empty row skipped'``, in the language of wherever it is shown."""
        n = len(self.texts)
        texts = later_n("{name}: {n:,} text", "{name}: {n:,} texts", n, name=self.name, n=n)
        if not self.n_empty:
            return texts
        e = self.n_empty
        skipped = (
            later_n("{n:,} empty line skipped", "{n:,} empty lines skipped", e, n=e)
            if self.column is None
            else later_n("{n:,} empty row skipped", "{n:,} empty rows skipped", e, n=e)
        )
        return later("{texts}; {skipped}", texts=texts, skipped=skipped)


def max_bytes() -> int:
    env = os.environ.get("ATLAS_CORPUS_MAX_MB", "").strip()
    try:
        return int(float(env) * MB) if env else 50 * MB
    except ValueError as err:
        raise CorpusError(f"ATLAS_CORPUS_MAX_MB must be a number of megabytes, not {env!r}") from err


def read_file(path: str | Path, column: str | None = None) -> Corpus:
    """The corpus in ``path`` (format from its suffix: ``.csv``, ``.jsonl``, else one text a line)."""
    path = Path(path)
    if not path.is_file():
        raise CorpusError(f"{path}: no such file")
    size, cap = path.stat().st_size, max_bytes()
    if size > cap:
        raise CorpusError(_too_big(path.name, size, cap))
    return read_bytes(path.name, path.read_bytes(), column)


SUFFIXES = (".txt", ".csv", ".jsonl", ".ndjson")  # what the Corpus page takes (anything else: one text a line)


def read_bytes(name: str, data: bytes, column: str | None = None) -> Corpus:
    """The corpus in ``data``, a file called ``name`` (an upload on the page)."""
    text = decode(name, data)
    suffix = Path(name).suffix.lower()
    if suffix == ".csv":
        cells, empty, column = _csv_cells(name, text, column)
    elif suffix in (".jsonl", ".ndjson"):
        cells, empty, column = _jsonl_cells(name, text, column)
    else:
        if column:
            raise CorpusError(f"{name}: a text file has one text a line and no columns; drop --column")
        cells = _lines(text)
        empty = 0
    texts = [c for c in cells if c.strip()]
    return Corpus(name, texts, empty + len(cells) - len(texts), column)


def _lines(text: str) -> list[str]:
    """The lines of ``text`` as ``open(path).readlines()`` gives them, without their line breaks."""
    return _LINES.split(text.removesuffix("\n").removesuffix("\r")) if text else []


def decode(name: str, data: bytes) -> str:
    """UTF-8 text without a byte-order mark; binary or other encodings refused in one line."""
    if len(data) > max_bytes():
        raise CorpusError(_too_big(name, len(data), max_bytes()))
    if b"\x00" in data[:65536]:
        raise CorpusError(f"{name}: a binary file, not text (give .txt, .csv or .jsonl in UTF-8)")
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as err:
        raise CorpusError(
            f"{name}: not UTF-8 text (byte {err.start:,} is 0x{data[err.start]:02x}); save it as UTF-8"
        ) from err


def _too_big(name: str, size: int, cap: int) -> str:
    return (
        f"{name}: {size / MB:,.1f} MB is over the corpus size cap of {cap / MB:,.0f} MB "
        "(ATLAS_CORPUS_MAX_MB raises it)"
    )


def columns(name: str, data: bytes) -> list[str]:
    """The fields a ``.csv`` (its header) or ``.jsonl`` (its first object) offers; [] for text."""
    text = decode(name, data)
    suffix = Path(name).suffix.lower()
    if suffix == ".csv":
        return _csv_header(name, text)
    if suffix in (".jsonl", ".ndjson"):
        for n, line in enumerate(_lines(text), 1):
            if line.strip():
                return list(_json_object(name, n, line))
    return []


def _pick(name: str, found: list[str], column: str | None) -> str:
    listed = ", ".join(repr(c) for c in found) or "none"
    if column is None:
        if "text" in found:
            return "text"
        if len(found) == 1:
            return found[0]
        raise CorpusError(f"{name}: which column holds the text? give --column; the columns are {listed}")
    if column not in found:
        raise CorpusError(f"{name}: no column {column!r}; the columns are {listed}")
    return column


def _csv_header(name: str, text: str) -> list[str]:
    try:
        header = next(csv.reader(io.StringIO(text)), [])
    except csv.Error as err:
        raise CorpusError(f"{name}: not a valid CSV header ({err})") from err
    if not header:
        raise CorpusError(f"{name}: an empty CSV file (no header row)")
    return header


def _csv_cells(name: str, text: str, column: str | None) -> tuple[list[str], int, str]:
    header = _csv_header(name, text)
    column = _pick(name, header, column)
    at = header.index(column)
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    next(reader)
    cells, empty = [], 0
    try:
        for row in reader:
            if not row:
                empty += 1
            elif len(row) != len(header):
                raise CorpusError(
                    f"{name} line {reader.line_num}: {len(row)} fields where the header has {len(header)}"
                )
            else:
                cells.append(row[at])
    except csv.Error as err:
        raise CorpusError(f"{name} line {reader.line_num}: malformed CSV ({err})") from err
    return cells, empty, column


def _json_object(name: str, n: int, line: str) -> dict:
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as err:
        raise CorpusError(f"{name} line {n}: not JSON ({err.msg} at column {err.colno})") from err
    if not isinstance(obj, dict):
        raise CorpusError(f"{name} line {n}: a JSON {type(obj).__name__}, not an object with a text field")
    return obj


def _unicode(text: str) -> str:
    """JSON may escape lone surrogates (``"\\ud800"``), which no tokenizer reads: U+FFFD instead."""
    if not _SURROGATE.search(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _jsonl_cells(name: str, text: str, column: str | None) -> tuple[list[str], int, str]:
    cells, empty = [], 0
    for n, line in enumerate(_lines(text), 1):
        if not line.strip():
            empty += 1
            continue
        obj = _json_object(name, n, line)
        if column is None or column not in obj:
            column = _pick(f"{name} line {n}", list(obj), column)
        value = obj[column]
        if value is not None and not isinstance(value, (str, int, float)):
            raise CorpusError(f"{name} line {n}: {column!r} holds a {type(value).__name__}, not text")
        cells.append("" if value is None else _unicode(str(value)))
    return cells, empty, column or "text"


# -- bundled samples ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Sample:
    id: str
    label: str  # marked with N_: shown through _ in the visitor's language; short (a narrow select box)
    path: str  # under models.text.pairs.CORPORA
    side: int  # which side of the pairs: 0 source, 1 target


SAMPLES = {
    s.id: s
    for s in (
        Sample(
            "english",
            N_("English sentences"),
            "translation/eng_fra.tsv.gz",
            0,
        ),
        Sample("couplets", N_("Couplet upper lines"), "couplets/tang_couplets.tsv.gz", 0),
    )
}


def sample(sample_id: str, n: int, seed: int = 0) -> Corpus:
    """``n`` distinct texts of a bundled corpus, drawn by a seeded shuffle (the same every time)."""
    from attention_atlas.models.text.pairs import CORPORA

    if sample_id not in SAMPLES:
        raise CorpusError(f"unknown sample {sample_id!r}; the samples are {', '.join(SAMPLES)}")
    s = SAMPLES[sample_id]
    with gzip.open(CORPORA / s.path, "rt", encoding="utf-8") as f:
        texts = list(dict.fromkeys(p.split("\t")[s.side] for p in f.read().splitlines() if p.strip()))
    random.Random(seed).shuffle(texts)
    if n < 1:
        raise CorpusError(f"a sample needs at least 1 text, not {n}")
    return Corpus(f"{sample_id}-{min(n, len(texts))}", texts[:n])


def parse_sample(spec: str) -> Corpus:
    """``sample:english:2000`` (or ``sample:english``, 1,000 texts) as the CLI names a sample."""
    parts = spec.split(":")
    try:
        n = int(parts[2]) if len(parts) > 2 else 1000
    except ValueError as err:
        raise CorpusError(f"{spec}: the sample size must be a whole number") from err
    return sample(parts[1] if len(parts) > 1 else "", n)
