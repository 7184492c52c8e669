"""Networks: the RNN encoder–decoder with attention and the small encoder–decoder Transformer."""
