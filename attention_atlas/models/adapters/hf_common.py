"""What the Hugging Face adapter, its long-context capture and the upload checks share.

``models/adapters/hf.py`` (the adapter), ``models/adapters/capture.py`` (queries and keys of a
long input) and ``models/uploads/hf_folder.py`` (an uploaded folder's checks) all import from
here and from none of each other in a circle: the encoded input, the one-line input error and
a config's family. Nothing heavy is imported (no torch, no transformers).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


class InputError(ValueError):
    """Text that cannot be run (empty, or nothing left after tokenizing)."""


@dataclass(frozen=True)
class Encoded:
    ids: torch.Tensor  # [1, tokens]
    tokens: list[str]  # per token: its label (a byte-level piece decoded: "两(1/2)", " cat")
    special: list[bool]  # per token: [CLS], [SEP], <s>, bos, ...
    word_ids: list[int | None]  # per token: index of the word it belongs to (None for specials)
    notices: list[str]
    pieces: list[str] | None = None  # per token: the tokenizer's own string, for byte-level BPE only


def family_of(config) -> str:
    """``encoder``, ``causal`` or ``seq2seq`` from a transformers config."""
    if getattr(config, "is_encoder_decoder", False):
        return "seq2seq"
    archs = " ".join(getattr(config, "architectures", None) or [])
    if "CausalLM" in archs or "LMHead" in archs or getattr(config, "is_decoder", False):
        return "causal"
    return "encoder"


def as_prompt(family: str, ids: torch.Tensor, special: list[bool], word_ids: list) -> tuple:
    """``(ids, special, word_ids)`` as a causal LM continues a text: without the special tokens its
    tokenizer appends (a BERT-style ``[SEP]``, an ``</s>``), which the lens, Generate and Contributions
    would otherwise trace as the position that predicts (issue 40 item 24). A leading one (a bos, a
    ``[CLS]``) stays, as the model was trained with it; an encoder's tokens are all kept."""
    keep = kept(family, special)
    return ids[:, :keep], special[:keep], word_ids[:keep]


def kept(family: str, special: list) -> int:
    """How many of a text's tokens ``as_prompt`` keeps (``special``: its tokenizer's special-token mask)."""
    keep = len(special)
    if family == "causal":
        while keep > 1 and special[keep - 1]:
            keep -= 1
    return keep
