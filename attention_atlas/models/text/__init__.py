"""Sequences of tokens: vocabularies, parallel pairs and batches, greedy and beam search, the
batched runner, and quality metrics (alignment, BLEU, copying)."""
