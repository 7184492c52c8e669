"""Token labels, cleaned in one place.

Tokenizers mark word starts and pieces differently (GPT-2 ``Ġ``, SentencePiece ``▁``,
WordPiece ``##``, BPE ``</w>``). Views show the cleaned text; axes stay positional,
so two equal labels never merge into one column.

Byte-level BPE (GPT-2, SmolLM2, BART, RoBERTa…) writes each byte of the UTF-8 text as one
printable character, so 两 (bytes E4 B8 A4) comes out of the tokenizer as ``ä¸`` + ``¤``.
``byte_level_labels`` turns such pieces back into the text they stand for. A piece that holds
only some of a character's bytes is labelled with that character and which of the pieces
holding it this one is: ``两(1/2)``, ``两(2/2)``. Bytes that never complete a character (a
text cut in the middle of one) read ``<0xE4>``, as in SentencePiece's byte fallback.
"""

from __future__ import annotations

import functools
import html
import re

from attention_atlas.i18n import later_n

_MARKERS = (("Ġ", " "), ("▁", " "), ("Ċ", "\n"), ("</w>", ""))
_VISIBLE = {" ": "␣", "\n": "⏎", "\t": "⇥", "": "∅"}


def clean_token(token: str) -> str:
    """A readable label for one token.

    >>> [clean_token(t) for t in ["Ġcat", "##s", "▁the", "风", " ", "\\n", " 两(1/2)"]]
    ['cat', 's', 'the', '风', '␣', '⏎', '两(1/2)']
    """
    text = str(token)
    for marker, replacement in _MARKERS:
        text = text.replace(marker, replacement)
    if text.startswith("##"):
        text = text[2:]
    return text.strip() or _blank(text)


def shown(label: str) -> str:
    """A vocabulary entry as written, whitespace made visible: line breaks and tabs as ⏎ and ⇥, and a
    token of whitespace only as ``clean_token`` shows it (one ␣ per space); nothing else changed (a
    leading space is part of the token: ' Paris' and 'Paris' differ).

    >>> [shown(t) for t in [" Paris", "a\\nb", "  ", "\\n", "\\n  ", ""]]
    [' Paris', 'a⏎b', '␣␣', '⏎', '⏎␣␣', '∅']
    """
    if not label.strip():
        return _blank(label)
    return label.replace("\n", _VISIBLE["\n"]).replace("\t", _VISIBLE["\t"])


def _blank(text: str) -> str:
    """A text of whitespace only as marks (␣ ⏎ ⇥; ∅ for nothing)."""
    return "".join(_VISIBLE.get(ch, ch) for ch in text) or _VISIBLE[""]


def clean_tokens(tokens: list[str]) -> list[str]:
    return [clean_token(t) for t in tokens]


_FRAGMENT = re.compile(r"([^\x00-\x7f])\((\d+)/\d+\)")
CONTINUED = "〃"  # ditto mark: the axis label of a piece that continues the character before it


def tick_label(label: str) -> str:
    """A token's label on an axis: a marked fragment is its character on the first piece that holds
    it and ``〃`` on the others, so a character split over byte pieces stands upright, one em wide,
    like any other (the hover and the CSV keep ``两(2/2)``).

    >>> [tick_label(t) for t in ["两(1/2)", "两(2/2)", "鸣(3/3)翠(1/3)", "cat(1/2)", "风"]]
    ['两', '〃', '〃翠', 'cat(1/2)', '风']
    """
    return _FRAGMENT.sub(lambda m: m.group(1) if m.group(2) == "1" else CONTINUED, label)


def hover_labels(tokens: list[str]) -> list[str]:
    """``'3 · 风'``: position and token, unique even when a token repeats."""
    return [f"{i} · {t}" for i, t in enumerate(clean_tokens(tokens))]


def as_plotly_text(labels: list[str]) -> list[str]:
    """Labels Plotly shows as typed: it reads ``<b>``, ``<a href>``, ``<br>`` and entities in tick
    and hover text, so ``&``, ``<`` and ``>`` are written as entities, which it shows as themselves.

    >>> as_plotly_text(["<b>春</b>", "a & b"])
    ['&lt;b&gt;春&lt;/b&gt;', 'a &amp; b']
    """
    return [html.escape(label, quote=False) for label in labels]


# -- byte-level BPE ---------------------------------------------------------------------------


@functools.cache
def _byte_of() -> dict[str, int]:
    """GPT-2's byte ↔ character table, backwards: printable bytes stand for themselves, the
    other 68 (controls, space, DEL, NBSP, soft hyphen…) for the characters from U+0100 on."""
    printable = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    others = [b for b in range(256) if b not in printable]
    table = {chr(b): b for b in printable}
    table.update({chr(0x100 + i): b for i, b in enumerate(others)})
    return table


def piece_bytes(piece: str) -> bytes | None:
    """The bytes a byte-level piece stands for, or None if it is not written in the byte alphabet."""
    table = _byte_of()
    if not piece or any(ch not in table for ch in piece):
        return None
    return bytes(table[ch] for ch in piece)


def _characters(data: bytes) -> list[tuple[int, int, str | None]]:
    """``data`` cut into (start, end, character); a byte that starts no valid character is (i, i+1, None)."""
    units, i = [], 0
    while i < len(data):
        lead = data[i]
        length = 1 if lead < 0x80 else 2 if lead >> 5 == 0b110 else 3 if lead >> 4 == 0b1110 else 4
        try:
            units.append((i, i + length, data[i : i + length].decode("utf-8")))
            i += length
        except UnicodeDecodeError:
            units.append((i, i + 1, None))
            i += 1
    return units


def _run_labels(chunks: list[bytes]) -> list[str]:
    """Labels of consecutive byte pieces, which may split characters between them."""
    data = b"".join(chunks)
    owner = [p for p, chunk in enumerate(chunks) for _ in chunk]  # byte → its piece
    labels = [""] * len(chunks)
    for start, end, char in _characters(data):
        holders = sorted(set(owner[start:end]))
        for k, p in enumerate(holders, start=1):
            if char is None:
                labels[p] += f"<0x{data[start]:02X}>"
            else:
                labels[p] += char if len(holders) == 1 else f"{char}({k}/{len(holders)})"
    return labels


def byte_level_labels(pieces: list[str], special: list[bool] | None = None) -> list[str]:
    """Each byte-level BPE piece as the text it stands for (a leading space stays a space).

    Special tokens (``special``) and pieces outside the byte alphabet are kept as they are
    and break the byte stream, so no character is ever put together across them.

    >>> byte_level_labels(["ä¸", "¤", "Ġcat", "Ã©"])
    ['两(1/2)', '两(2/2)', ' cat', 'é']
    """
    special = special or [False] * len(pieces)
    labels, run = list(pieces), []  # run: positions of the byte pieces being collected

    def flush():
        for p, label in zip(run, _run_labels([piece_bytes(pieces[p]) for p in run]), strict=True):
            labels[p] = label
        run.clear()

    for p, piece in enumerate(pieces):
        if special[p] or piece_bytes(piece) is None:
            flush()
        else:
            run.append(p)
    flush()
    return labels


_SURROGATE = re.compile("[\ud800-\udfff]")


def well_formed(text: str) -> tuple[str, list[str]]:
    """``text`` as valid Unicode, and a notice if it was not: surrogate pairs joined, lone
    surrogates (a str may hold them, e.g. undecodable bytes on a command line; tokenizers
    refuse them) read as U+FFFD."""
    if not _SURROGATE.search(text):
        return text, []
    fixed = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    n = fixed.count("\ufffd") - text.count("\ufffd")
    if not n:
        return fixed, []
    return fixed, [
        later_n(
            "{n:,} lone surrogate (not valid Unicode) read as \ufffd",
            "{n:,} lone surrogates (not valid Unicode) read as \ufffd",
            n,
            n=n,
        )
    ]
