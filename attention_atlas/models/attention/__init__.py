"""Attention itself: scoring functions and the masked softmax, masks, multi-head attention,
positional encodings, Nadaraya–Watson kernel regression, and the lessons' demo computations."""
