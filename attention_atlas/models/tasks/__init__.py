"""Tasks: how couplets and translation read text, split their data, run a model and score it."""
