"""Token labels, cleaned in one place.

Tokenizers mark word starts and pieces differently (GPT-2 ``Ġ``, SentencePiece ``▁``,
WordPiece ``##``, BPE ``</w>``). Views show the cleaned text; axes stay positional,
so two equal labels never merge into one column.
"""

from __future__ import annotations

_MARKERS = (("Ġ", " "), ("▁", " "), ("Ċ", "\n"), ("</w>", ""))
_VISIBLE = {" ": "␣", "\n": "⏎", "\t": "⇥", "": "∅"}


def clean_token(token: str) -> str:
    """A readable label for one token.

    >>> [clean_token(t) for t in ["Ġcat", "##s", "▁the", "风", " ", "\\n"]]
    ['cat', 's', 'the', '风', '␣', '⏎']
    """
    text = str(token)
    for marker, replacement in _MARKERS:
        text = text.replace(marker, replacement)
    if text.startswith("##"):
        text = text[2:]
    stripped = text.strip()
    if stripped:
        return stripped
    return "".join(_VISIBLE.get(ch, ch) for ch in text) or _VISIBLE[""]


def clean_tokens(tokens: list[str]) -> list[str]:
    return [clean_token(t) for t in tokens]


def hover_labels(tokens: list[str]) -> list[str]:
    """``'3 · 风'``: position and token, unique even when a token repeats."""
    return [f"{i} · {t}" for i, t in enumerate(clean_tokens(tokens))]
