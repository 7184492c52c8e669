"""An upload on its way in (``Incoming``) and on its way out (``Upload``: a ``Summary`` and an adapter).

``load_bytes`` makes one ``Incoming`` at the top: the file's name, its bytes, the limits
and the caller's answers travel together from there, so no reader or rebuild step is
handed the name again. What sniffing finds out (the kind of bytes, a checked safetensors
header, a checked zip's members) is worked out once, on first use, and shared by readers.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from attention_atlas.i18n import _
from attention_atlas.models.uploads.architectures import Missing
from attention_atlas.models.uploads.hf_folder import pick_members, read_config
from attention_atlas.models.uploads.safety import (
    Limits,
    TensorSpec,
    UploadError,
    check_zip,
    safetensors_header,
    sha256,
    sniff,
)


class NeedsAnswers(UploadError):
    """A file that loads once the caller supplies what it lacks (architecture, head count, vocabulary…)."""

    def __init__(self, name: str, missing: list[Missing], inferred: dict, architecture: str | None):
        self.missing, self.inferred, self.architecture = missing, inferred, architecture
        fields = ", ".join(m.field for m in missing)
        super().__init__(
            _(
                "{name} does not say everything needed to rebuild it; missing: {fields} (the Checkpoint "
                "inspector page asks for them; or save the config and vocabulary beside the state dict)",
                name=name,
                fields=fields,
            )
        )


@dataclass
class Incoming:
    """One uploaded file, as every reader sees it. Notices gather here on the way."""

    name: str  # the file's name without folders, as messages call it
    data: bytes
    limits: Limits
    answers: dict = field(default_factory=dict)  # what the caller supplied for a bare state dict
    device: Any = None
    notices: list[str] = field(default_factory=list)

    @cached_property
    def digest(self) -> str:
        return sha256(self.data)

    @property
    def size(self) -> int:
        return len(self.data)

    @property
    def model_id(self) -> str:
        return f"upload:{self.digest[:12]}"

    @property
    def cache_key(self) -> tuple[str, str]:
        """The same bytes with the same answers are the same upload, whatever the file is called."""
        return self.digest, json.dumps(self.answers, sort_keys=True, ensure_ascii=False)

    @cached_property
    def kind(self) -> str:
        """``safetensors``, ``zip``, ``pickle``, ``text`` or ``unknown``, by content, not by name."""
        return sniff(self.data)

    @cached_property
    def header(self) -> tuple[dict[str, TensorSpec], dict[str, str]]:
        """``(specs, metadata)`` of a safetensors file, checked against the data it describes."""
        return safetensors_header(self.data, self.name, self.limits)

    @cached_property
    def members(self) -> list[zipfile.ZipInfo]:
        """A zip's members, every one checked (paths, links, encryption, sizes) before anything inflates."""
        with self.open_zip() as zf:
            return check_zip(zf, self.name, self.limits)

    @cached_property
    def folder(self) -> tuple[dict[str, zipfile.ZipInfo], list[str], dict]:
        """A zipped model folder's allow-listed members (by file name), the files skipped, its config.json."""
        members, skipped = pick_members(self.members, self.name)
        with self.open_zip() as zf:
            config = read_config(zf, members["config.json"], self.name)
        return members, skipped, config

    def open_zip(self) -> zipfile.ZipFile:
        try:
            return zipfile.ZipFile(io.BytesIO(self.data))
        except zipfile.BadZipFile as err:
            raise UploadError(_("{name}: a damaged zip ({error})", name=self.name, error=err)) from err

    def build(self, make: Callable[[], Any]):
        """Construct an adapter; any failure is one refusal line, never a traceback on the page."""
        try:
            return make()
        except UploadError:
            raise
        except Exception as err:
            raise UploadError(
                _(
                    "{name}: the model could not be built ({error})",
                    name=self.name,
                    error=" ".join(str(err).split())[:300],
                )
            ) from err


@dataclass(frozen=True)
class Summary:
    """What an upload is, for the page's summary and the report of a refusal-free load."""

    file_name: str
    sha256: str
    size: int  # bytes as uploaded
    source: str  # "Attention Atlas bundle", "PyTorch state dict + config", ...
    architecture: str  # "couplet-rnn", "couplet-transformer", "hf-encoder", "hf-causal", "hf-seq2seq"
    description: str
    view: str  # "alignment" (one cross-attention head) or "heads" (layers × heads)
    parameters: int
    vocab_size: int
    layers: str  # "1", "6", "3 + 3" (encoder + decoder)
    heads: int
    seq2seq: bool  # a target can be force-decoded
    model_id: str
    compare: tuple[str, ...] = ()  # bundled models of the same family, closest first
    example: str = ""
    nonfinite: tuple[str, ...] = ()  # tensors holding NaN or ±inf
    notices: tuple[str, ...] = ()
    config: dict = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class Upload:
    summary: Summary
    adapter: Any = field(compare=False)
    nbytes: int = 0  # memory held by the model's tensors


def nonfinite(model) -> tuple[str, ...]:
    """Names of the parameters holding NaN or ±inf."""
    import torch

    return tuple(
        n for n, p in model.named_parameters() if p.is_floating_point() and not torch.isfinite(p).all()
    )


def nbytes(model) -> int:
    """Memory held by a model's parameters and buffers, a shared tensor counted once."""
    tensors = [*model.parameters(), *model.buffers()]
    return sum(t.numel() * t.element_size() for t in {id(t): t for t in tensors}.values())
