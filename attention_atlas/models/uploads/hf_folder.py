"""A Hugging Face model folder uploaded as a .zip: allow-listed files only, checked config and weights.

Only data files leave the zip: ``config.json``, ``*.safetensors`` and tokenizer/vocabulary
files by name. Code (``*.py``), pickles (``pytorch_model.bin``) and anything else stay
inside and are listed as skipped. The config must name a model type built into
transformers (custom code is never run: ``trust_remote_code=False`` everywhere), its sizes
must be sane, and the weights' names and shapes must fit the model the config describes,
checked on the meta device before a byte of weights is loaded.

Which kinds of model a folder may hold (encoder, causal LM, encoder–decoder) and the
adapter that runs each are registered by ``models/adapters/hf.py`` (``register_hf_family``).
"""

from __future__ import annotations

import contextlib
import json
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from attention_atlas.i18n import _
from attention_atlas.models.adapters.hf_common import family_of
from attention_atlas.models.uploads.architectures import Registry, out_of_range
from attention_atlas.models.uploads.safety import (
    FLOAT_DTYPES,
    Limits,
    UploadError,
    read_member,
    safetensors_header,
)

TOKENIZER_FILES = frozenset(
    {
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "added_tokens.json",
        "vocab.txt",
        "vocab.json",
        "merges.txt",
        "spiece.model",
        "sentencepiece.bpe.model",
        "tokenizer.model",
        "source.spm",
        "target.spm",
    }
)
DATA_FILES = (
    frozenset({"config.json", "generation_config.json", "model.safetensors.index.json"}) | TOKENIZER_FILES
)
MAX_JSON = 32 << 20  # tokenizer.json of a large vocabulary is ~10-20 MB
# Config values checked when present: model sizes a laptop can hold, not a denial of service.
CONFIG_RANGES = {
    "vocab_size": (1, 1_000_000),
    "hidden_size": (1, 16_384),
    "d_model": (1, 16_384),
    "n_embd": (1, 16_384),
    "intermediate_size": (1, 65_536),
    "num_hidden_layers": (1, 128),
    "num_layers": (1, 128),
    "n_layer": (1, 128),
    "encoder_layers": (1, 128),
    "decoder_layers": (1, 128),
    "num_attention_heads": (1, 256),
    "n_head": (1, 256),
    "encoder_attention_heads": (1, 256),
    "decoder_attention_heads": (1, 256),
    "num_key_value_heads": (1, 256),
    "max_position_embeddings": (1, 1_048_576),
    "n_positions": (1, 1_048_576),
}
ALLOWED_MISSING = ("pooler.",)  # outside the attention path; transformers initialises it


@dataclass(frozen=True)
class HFFamily:
    """A kind of Hugging Face model an uploaded folder may hold, as ``family_of`` names it."""

    family: str  # "encoder", "causal", "seq2seq"
    adapter: Callable[..., Any]  # (model_id, folder, device) -> adapter
    compare: tuple[str, ...] = ()  # bundled ids of the same family, closest first
    example: str = ""  # an input to start from

    @property
    def name(self) -> str:
        return f"hf-{self.family}"


HF_FAMILIES: Registry = Registry("a Hugging Face upload family")  # family -> HFFamily


def register_hf_family(family: HFFamily) -> HFFamily:
    """Make folders of ``family`` readable from uploads; called at import by ``models/adapters/hf.py``."""
    return HF_FAMILIES.add(family.family, family)


def pick_members(infos: list[zipfile.ZipInfo], name: str) -> tuple[dict[str, zipfile.ZipInfo], list[str]]:
    """The allow-listed files beside the shallowest ``config.json``, by file name; and what was skipped."""
    files = [i for i in infos if not i.is_dir()]
    configs = sorted(
        (i for i in files if PurePosixPath(i.filename).name == "config.json"),
        key=lambda i: len(PurePosixPath(i.filename).parts),
    )
    if not configs:
        raise UploadError(_("{name} is a zip without config.json; zip the model folder itself", name=name))
    root = PurePosixPath(configs[0].filename).parent
    keep, skipped = {}, []
    for info in files:
        path = PurePosixPath(info.filename)
        if path.parent == root and (path.name in DATA_FILES or path.suffix == ".safetensors"):
            keep[path.name] = info
        else:
            skipped.append(str(path.relative_to(root)) if path.is_relative_to(root) else info.filename)
    if not any(n.endswith(".safetensors") for n in keep):
        raise UploadError(
            _(
                "{name} holds no .safetensors weights; pytorch_model.bin and other pickles are never read "
                "from a zip (save_pretrained writes safetensors)",
                name=name,
            )
        )
    return keep, skipped


def read_config(zf: zipfile.ZipFile, info: zipfile.ZipInfo, name: str) -> dict:
    if info.file_size > 1 << 20:
        raise UploadError(
            _("{name}: config.json is {size:,} bytes; a config is a few kB", name=name, size=info.file_size)
        )
    try:
        config = json.loads(read_member(zf, info, name, 1 << 20).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise UploadError(_("{name}: config.json is not JSON ({error})", name=name, error=err)) from err
    if not isinstance(config, dict):
        raise UploadError(_("{name}: config.json is not a JSON object", name=name))
    return config


def check_config(config: dict, name: str) -> list[str]:
    """Refuse configs that need code or claim absurd sizes; notices for what is ignored."""
    from transformers import CONFIG_MAPPING

    model_type = config.get("model_type")
    if not isinstance(model_type, str) or model_type not in CONFIG_MAPPING:
        raise UploadError(
            _(
                "{name}: config.json has model_type {model_type!r}, not one built into transformers; "
                "custom model code is never run",
                name=name,
                model_type=model_type,
            )
        )
    for key, (lo, hi) in CONFIG_RANGES.items():
        value = config.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            raise out_of_range(name, key, value, lo, hi)
    notices = []
    if "auto_map" in config:
        notices.append("config.json names custom code (auto_map); it was ignored: the built-in class runs")
    return notices


def check_weights(folder: Path, name: str, limits: Limits) -> tuple[str, list[str]]:
    """``(family, notices)``: the weights' names and shapes against the model the config describes."""
    import torch
    from transformers import AutoConfig

    try:
        config = AutoConfig.from_pretrained(folder, local_files_only=True, trust_remote_code=False)
    except Exception as err:
        raise UploadError(
            _("{name}: transformers cannot read config.json ({error})", name=name, error=_line(err))
        ) from err
    family = family_of(config)
    if family == "seq2seq":
        enc, dec = encoder_decoder_layers(config)
        if enc != dec:  # models.adapters.hf.HFAdapter checks every kind against one layer count
            raise UploadError(
                _(
                    "{name}: an encoder–decoder with {enc} encoder and {dec} decoder layers; only equal "
                    "depths are supported so far",
                    name=name,
                    enc=enc,
                    dec=dec,
                )
            )
    found = {}
    for path in sorted(folder.glob("*.safetensors")):
        specs, __ = safetensors_header(path, f"{name}:{path.name}", limits)
        found.update(specs)
    try:
        with torch.device("meta"):
            model = _loader(family).from_config(config, attn_implementation="eager")
    except Exception as err:
        raise UploadError(
            _("{name}: transformers cannot build this config ({error})", name=name, error=_line(err))
        ) from err
    base, prefix = model.base_model, model.base_model_prefix
    found = {(k[len(prefix) + 1 :] if k.startswith(prefix + ".") else k): v for k, v in found.items()}
    state = base.state_dict(keep_vars=True)
    groups: dict[int, list[str]] = {}
    for key, t in state.items():
        groups.setdefault(id(t), []).append(key)  # tied weights: one tensor under several names
    missing, notices = [], []
    for key, t in state.items():
        if key in found:
            spec = found[key]
            if spec.shape != tuple(t.shape):
                raise UploadError(
                    _(
                        "{name}: tensor {tensor!r} is {shape}; the config's {model} needs {needed}",
                        name=name,
                        tensor=key,
                        shape=list(spec.shape),
                        model=type(base).__name__,
                        needed=list(t.shape),
                    )
                )
            if t.is_floating_point() and spec.dtype not in FLOAT_DTYPES:
                raise UploadError(
                    _(
                        "{name}: tensor {tensor!r} is {dtype}; a floating-point tensor is needed",
                        name=name,
                        tensor=key,
                        dtype=spec.dtype,
                    )
                )
        elif not any(alias in found for alias in groups[id(t)]):
            missing.append(key)
    matched = len(set(state) & set(found))
    benign = [k for k in missing if k.startswith(ALLOWED_MISSING)]
    missing = [k for k in missing if k not in benign]
    if missing or not matched:
        shown = ", ".join(missing[:3]) + (", …" if len(missing) > 3 else "")
        raise UploadError(
            _(
                "{name}: the weights do not fit the config's {model}: "
                "{n} of its {total} tensors are missing ({shown})",
                name=name,
                model=type(base).__name__,
                n=len(missing),
                total=len(state),
                shown=shown or _("none match"),
            )
        )
    if benign:
        notices.append(
            f"not in the weights, initialised at random (attention unaffected): {', '.join(benign)}"
        )
    return family, notices


def check_tokenizer(folder: Path, config: dict, name: str) -> list[str]:
    """A notice when the folder's tokenizer (``tokenizer_class`` in tokenizer_config.json, else in
    config.json) is not the one transformers pairs with its model type: it runs, but the ids it makes
    may not be those the weights were trained on. A tokenizer's fast and slow classes count as one."""
    from transformers.models.auto.tokenization_auto import TOKENIZER_MAPPING_NAMES

    named = config.get("tokenizer_class")
    # no tokenizer_config.json, or none that names a class: config.json's, or transformers picks the type's own
    with contextlib.suppress(OSError, ValueError, TypeError, KeyError):
        named = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))["tokenizer_class"]
    own = TOKENIZER_MAPPING_NAMES.get(config["model_type"])
    owns = {n.removesuffix("Fast") for n in (own if isinstance(own, tuple) else (own,)) if n}
    if not isinstance(named, str) or not owns or named.removesuffix("Fast") in owns:
        return []
    return [
        f"{name}: the tokenizer is {named}, but a {config['model_type']} model's own is "
        f"{' or '.join(sorted(owns))}: its token ids may not be those the weights were trained on"
    ]


def encoder_decoder_layers(config) -> tuple[int, int]:
    """``(encoder layers, decoder layers)`` under the names BART, T5 and Marian configs use."""
    enc = getattr(config, "encoder_layers", None) or getattr(config, "num_layers", None)
    dec = getattr(config, "decoder_layers", None) or getattr(config, "num_decoder_layers", None) or enc
    return int(enc), int(dec)


def _loader(family: str):
    from transformers import AutoModel, AutoModelForCausalLM, AutoModelForSeq2SeqLM

    return {"seq2seq": AutoModelForSeq2SeqLM, "causal": AutoModelForCausalLM, "encoder": AutoModel}[family]


def _line(err: Exception) -> str:
    text = " ".join(str(err).split())
    return text[:300] + ("…" if len(text) > 300 else "")
