"""Attention over a corpus: many texts through one model, reduced to statistics in a DuckDB store.

``inputs`` reads a corpus (a file or a bundled sample), ``extract`` runs batches and reduces
their weights (``stats``) as each finishes, ``store`` keeps the rows in the cache folder,
``run`` drives a run (progress, cancel, resume), ``queries`` answers the page, and
``ray_run`` runs the batches on Ray (imported only when asked for). Import the submodules.
"""
