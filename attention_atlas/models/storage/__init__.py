"""Self-describing checkpoints and bundles: safetensors plus JSON metadata, loaded without code."""
