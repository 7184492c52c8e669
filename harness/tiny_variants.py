"""Tiny random causal LMs of the attention variants modern models use (issue 26: sliding windows,
per-layer local and global layers, logit softcapping, learned sinks, BLOOM's ALiBi), built from
transformers' own configs with a window of ``WINDOW`` keys, for the tests and the benches
(``bench.bench_gpu``)."""

from __future__ import annotations

import torch

WINDOW = 8
SIZES = dict(
    vocab_size=30522,
    hidden_size=32,
    intermediate_size=32,
    num_hidden_layers=4,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=256,
    initializer_range=0.3,
)
GEMMA = dict(SIZES, head_dim=8, sliding_window=WINDOW)

# architecture -> (config class, its options, the windows the capture must find per layer)
ARCHS = {
    "mistral": ("MistralConfig", dict(SIZES, sliding_window=WINDOW), [WINDOW] * 4),
    "qwen2": (
        "Qwen2Config",
        dict(SIZES, use_sliding_window=True, sliding_window=WINDOW, max_window_layers=2),
        [None, None, WINDOW, WINDOW],
    ),
    "qwen2_no_window": (  # use_sliding_window off (its window given): no layer reads a window
        "Qwen2Config",
        dict(SIZES, use_sliding_window=False, sliding_window=WINDOW),
        [None] * 4,
    ),
    "gemma2": ("Gemma2Config", dict(GEMMA, attn_logit_softcapping=1.5), [WINDOW, None] * 2),
    "gemma3": ("Gemma3TextConfig", dict(GEMMA, sliding_window_pattern=2), [WINDOW, None] * 2),
    "gpt_oss": (
        "GptOssConfig",
        dict(SIZES, head_dim=8, sliding_window=WINDOW, num_local_experts=2, num_experts_per_tok=1),
        [WINDOW, None] * 2,
    ),
    "bloom": (  # ALiBi added in its attention modules, outside transformers' attention interface
        "BloomConfig",
        dict(vocab_size=30522, hidden_size=64, n_layer=4, n_head=8, initializer_range=0.3),
        [None] * 4,
    ),
}


def tiny_variant(arch: str, seed: int = 0, **overrides) -> torch.nn.Module:
    """``ARCHS[arch]``'s model with seeded random weights (``overrides``: config options, e.g. the
    vocabulary of another tokenizer); learned sinks drawn large enough to take visible mass."""
    import transformers

    name, options, _ = ARCHS[arch]
    torch.manual_seed(seed)
    config = getattr(transformers, name)(**{**options, **overrides})
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(getattr(module, "sinks", None), torch.nn.Parameter):
                module.sinks.normal_(0, 2)  # they start at 0
    return model
