"""A trained seq2seq model with everything needed to use it again, in one safetensors file.

The file's metadata carries the format tag, the architecture config, the vocabularies,
the tokenizer's name and the task, so ``Seq2SeqBundle.load(path)`` rebuilds the model
without guessing and without executing code. ``save_dir`` also writes ``config.json`` and
``vocab.json`` beside the weights for people and other tools.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import torch

from attention_atlas.models.nets.rnn_seq2seq import Seq2Seq, Seq2SeqConfig
from attention_atlas.models.nets.transformer import Transformer, TransformerConfig
from attention_atlas.models.storage.atomic import atomic_write
from attention_atlas.models.storage.checkpoint import (
    CheckpointError,
    file_sha256,
    load_checkpoint,
    load_unique_state,
    save_checkpoint,
    unique_state,
)
from attention_atlas.models.text.vocab import Vocab

FORMAT = "attention-atlas/seq2seq-rnn"
FORMAT_VERSION = 1
WEIGHTS_FILE = "model.safetensors"


@dataclass
class Seq2SeqBundle:
    model: Seq2Seq
    src_vocab: Vocab
    tgt_vocab: Vocab  # the same object as src_vocab when the task shares one
    task: str  # "couplet", "translation"
    tokenizer: str  # "char", "word": how the task splits text into vocabulary tokens
    info: dict[str, Any] = field(default_factory=dict)  # model id, training command, metrics…
    sha256: str | None = None  # of the file it was loaded from

    # What a subclass changes to bundle another architecture the same way.
    file_format: ClassVar[str] = FORMAT
    file_format_version: ClassVar[int] = FORMAT_VERSION
    model_class: ClassVar[type] = Seq2Seq
    config_class: ClassVar[type] = Seq2SeqConfig

    @property
    def shared_vocab(self) -> bool:
        return self.src_vocab is self.tgt_vocab

    def meta(self) -> dict[str, Any]:
        return {
            "format": self.file_format,
            "format_version": self.file_format_version,
            "task": self.task,
            "tokenizer": self.tokenizer,
            "config": self.model.config.to_dict(),
            "src_vocab": self.src_vocab.tokens,
            "tgt_vocab": None if self.shared_vocab else self.tgt_vocab.tokens,  # None: shared
            "info": self.info,
        }

    def save(self, path: str | Path, dtype: str = "float32") -> Path:
        """One self-describing file (float16 halves it; loading upcasts to float32)."""
        return save_checkpoint(path, unique_state(self.model), self.meta(), dtype=dtype)

    def save_dir(self, folder: str | Path, dtype: str = "float32") -> Path:
        """``model.safetensors`` plus readable ``config.json`` and ``vocab.json`` copies."""
        folder = Path(folder)
        path = self.save(folder / WEIGHTS_FILE, dtype=dtype)
        meta = self.meta()
        config = {k: meta[k] for k in ("format", "format_version", "task", "tokenizer", "config")}
        config["stored_dtype"] = dtype
        config["model_id"] = self.info.get("model_id")
        atomic_write(folder / "config.json", json.dumps(config, indent=2, ensure_ascii=False) + "\n")
        vocab = {"src": self.src_vocab.tokens, "tgt": meta["tgt_vocab"]}
        atomic_write(folder / "vocab.json", json.dumps(vocab, ensure_ascii=False) + "\n")
        return path

    @classmethod
    def load(cls, path: str | Path, device: torch.device | str = "cpu") -> Seq2SeqBundle:
        path = Path(path)
        if path.is_dir():
            path = path / WEIGHTS_FILE
        tensors, meta = load_checkpoint(path)
        if meta.get("format") != cls.file_format:
            raise CheckpointError(f"{path.name} has format {meta.get('format')!r}, not {cls.file_format!r}")
        if meta.get("format_version") != cls.file_format_version:
            raise CheckpointError(
                f"{path.name} is {cls.file_format} version {meta.get('format_version')}; "
                f"this code reads version {cls.file_format_version}"
            )
        try:
            cfg = cls.config_class.from_dict(meta["config"])
            src = Vocab(meta["src_vocab"])
            tgt = src if meta["tgt_vocab"] is None else Vocab(meta["tgt_vocab"])
        except (KeyError, TypeError, ValueError) as err:
            raise CheckpointError(f"{path.name} has a broken config or vocabulary: {err}") from err
        if (len(src), len(tgt)) != (cfg.src_vocab_size, cfg.tgt_vocab_size):
            raise CheckpointError(
                f"{path.name}: vocabularies of {len(src)}/{len(tgt)} tokens but a "
                f"config for {cfg.src_vocab_size}/{cfg.tgt_vocab_size}"
            )
        model = cls.model_class(cfg)
        try:
            load_unique_state(model, tensors)
        except ValueError as err:
            raise CheckpointError(f"{path.name}: {err}") from err
        model.to(device).eval()
        return cls(
            model, src, tgt, meta["task"], meta["tokenizer"], meta.get("info", {}), sha256=file_sha256(path)
        )


TRANSFORMER_FORMAT = "attention-atlas/seq2seq-transformer"


class TransformerBundle(Seq2SeqBundle):
    """``Seq2SeqBundle`` (one self-describing safetensors file) for ``Transformer``."""

    file_format = TRANSFORMER_FORMAT
    file_format_version = 1
    model_class = Transformer
    config_class = TransformerConfig
