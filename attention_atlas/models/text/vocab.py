"""A token vocabulary with pad / bos / eos / unk, for characters (couplets) or words (translation).

The vocabulary does not split text; the task does (one character per token for couplets,
lower-cased words for translation) and hands it lists of tokens::

    >>> v = Vocab.build([list("风风雨"), list("雨云")], max_size=7)
    >>> v.tokens
    ['<pad>', '<bos>', '<eos>', '<unk>', '风', '雨', '云']
    >>> v.encode(["风", "X"])
    [4, 3]
    >>> v.unknown(["风", "X"])
    ['X']
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence

PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
SPECIALS = (PAD, BOS, EOS, UNK)  # ids 0..3 in every vocabulary, so pad is always 0


class Vocab:
    """Tokens ↔ ids. Specials first (pad = 0), then ``reserved`` tokens, then by frequency."""

    def __init__(self, tokens: Sequence[str]):
        tokens = list(tokens)
        if tuple(tokens[: len(SPECIALS)]) != SPECIALS:
            raise ValueError(f"a vocabulary starts with {SPECIALS}, got {tokens[:4]}")
        if len(set(tokens)) != len(tokens):
            raise ValueError("a vocabulary lists every token once")
        self.tokens = tokens
        self.index = {t: i for i, t in enumerate(tokens)}
        self.pad_id, self.bos_id, self.eos_id, self.unk_id = range(len(SPECIALS))

    @classmethod
    def build(
        cls,
        sequences: Iterable[Sequence[str]],
        max_size: int | None = None,
        min_freq: int = 1,
        reserved: Sequence[str] = (),
    ) -> Vocab:
        """Count tokens; keep the most frequent (ties broken by first appearance)."""
        counts = Counter()
        for seq in sequences:
            counts.update(seq)
        head = [*SPECIALS, *(t for t in reserved if t not in SPECIALS)]
        room = None if max_size is None else max_size - len(head)
        if room is not None and room < 0:
            raise ValueError(f"max_size {max_size} leaves no room for the {len(head)} fixed tokens")
        kept = [t for t, n in counts.most_common() if n >= min_freq and t not in head]
        return cls(head + kept[:room])

    def __len__(self) -> int:
        return len(self.tokens)

    def __contains__(self, token: str) -> bool:
        return token in self.index

    def encode(self, tokens: Iterable[str]) -> list[int]:
        return [self.index.get(t, self.unk_id) for t in tokens]

    def decode(self, ids: Iterable[int], strip_specials: bool = True) -> list[str]:
        out = []
        for i in ids:
            i = int(i)
            if strip_specials and i < len(SPECIALS):
                if i == self.eos_id:
                    break
                continue
            out.append(self.tokens[i])
        return out

    def unknown(self, tokens: Iterable[str]) -> list[str]:
        """The tokens that would become ``<unk>``, in order, without repeats."""
        return list(dict.fromkeys(t for t in tokens if t not in self.index))

    def special_ids(self) -> list[int]:
        return list(range(len(SPECIALS)))

    def to_json(self) -> str:
        return json.dumps({"tokens": self.tokens}, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> Vocab:
        data = json.loads(text)
        if not isinstance(data, dict) or not isinstance(data.get("tokens"), list):
            raise ValueError('a vocabulary file holds {"tokens": [...]}')
        return cls([str(t) for t in data["tokens"]])
