"""Records, token labels, figure builders, statistics and export. numpy, pandas and plotly only.

>>> import numpy as np
>>> rec = AttentionRecord(np.full((1, 1, 2, 2), 0.5), ["风", "风"], ["a", "b"], "cross", "demo")
>>> heatmap(rec.head(), rec.query_tokens, rec.key_tokens).data[0].y
('0 · 风', '1 · 风')
"""

from viz_core.export import matrix_frame, record_frame, records_frame, series_frame, to_csv
from viz_core.figures import (
    grouped_bars,
    heatmap,
    heatmap_row,
    lines,
    matrix_heatmap,
    nadaraya_watson,
    positional_curves,
    record_heatmap,
)
from viz_core.record import AttentionRecord, RecordError
from viz_core.stats import diagonal_share, row_entropy
from viz_core.tokens import clean_token, clean_tokens, hover_labels

__all__ = [
    "AttentionRecord",
    "RecordError",
    "clean_token",
    "clean_tokens",
    "diagonal_share",
    "grouped_bars",
    "heatmap",
    "heatmap_row",
    "hover_labels",
    "lines",
    "matrix_frame",
    "matrix_heatmap",
    "nadaraya_watson",
    "positional_curves",
    "record_frame",
    "record_heatmap",
    "records_frame",
    "row_entropy",
    "series_frame",
    "to_csv",
]
