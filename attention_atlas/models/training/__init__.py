"""Training: one resumable loop, the run folder, and one short recipe per model family."""
