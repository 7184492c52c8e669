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
