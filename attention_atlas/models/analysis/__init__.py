"""The analyses of a forward pass: the logit lens, generation, the contribution graph, head
ablation and the neuron view's vectors. Each reads a model's internals through
``models.capture_points`` and hands plain arrays to ``viz_core``."""
