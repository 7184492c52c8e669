"""Bring your own checkpoint: load a file from a stranger without running any of it.

    from models.uploads import UploadError, load_bytes
    try:
        upload = load_bytes(data, "mine.pt")
    except UploadError as err:   # one line that names the problem
        ...
    upload.summary                # architecture, parameters, vocabulary, layers × heads, SHA-256
    upload.adapter.run(text)      # records, as for a bundled model

``safety`` holds the checks (size, sniffing, zip members, pickle globals, safetensors
headers), ``architectures`` our model families (registered by bundle format and task),
``hf_folder`` zipped Hugging Face folders, ``loader`` the dispatch and the LRU cache.
"""

from models.uploads.architectures import ARCHITECTURES, Architecture, Missing, register_architecture
from models.uploads.loader import (
    CACHE,
    NeedsAnswers,
    Summary,
    Upload,
    UploadCache,
    export_bytes,
    load_bytes,
    load_path,
    parse_vocab,
)
from models.uploads.safety import Limits, UploadError

__all__ = [
    "ARCHITECTURES",
    "CACHE",
    "Architecture",
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
]
