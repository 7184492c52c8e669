"""Bring your own checkpoint: load a file from a stranger without running any of it.

    from attention_atlas.models.uploads import UploadError, load_bytes
    try:
        upload = load_bytes(data, "mine.pt")
    except UploadError as err:   # one line that names the problem
        ...
    upload.summary                # architecture, parameters, vocabulary, layers × heads, SHA-256
    upload.adapter.run(text)      # records, as for a bundled model

The way down: ``loader`` (entry points) makes one ``incoming.Incoming`` of the file and
hands it to ``readers``, one reader per format, which apply ``safety``'s checks (size,
sniffing, zip members, pickle globals, safetensors headers) and read; a state dict of one
of our families is rebuilt and checked in ``rebuild`` against its ``architectures`` entry
(shape inference in ``shapes``), a Hugging Face folder is checked in ``hf_folder``;
``cache`` keeps loaded uploads. Each family registers its upload architecture in its own
adapter file (``models/adapters/``), beside its model ids.
"""

from attention_atlas.models.uploads.architectures import (
    ARCHITECTURES,
    Architecture,
    Missing,
    register_architecture,
)
from attention_atlas.models.uploads.cache import CACHE, UploadCache
from attention_atlas.models.uploads.hf_folder import HF_FAMILIES, HFFamily, register_hf_family
from attention_atlas.models.uploads.incoming import NeedsAnswers, Summary, Upload
from attention_atlas.models.uploads.loader import export_bytes, load_bytes, load_path, parse_vocab
from attention_atlas.models.uploads.safety import Limits, UploadError

__all__ = [
    "ARCHITECTURES",
    "CACHE",
    "HF_FAMILIES",
    "Architecture",
    "HFFamily",
    "Limits",
    "Missing",
    "NeedsAnswers",
    "Summary",
    "Upload",
    "UploadCache",
    "UploadError",
    "export_bytes",
    "load_bytes",
    "load_path",
    "parse_vocab",
    "register_architecture",
    "register_hf_family",
]
