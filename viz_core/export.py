"""Tidy tables for download: one row per number, with its positions and tokens."""

from __future__ import annotations

import numpy as np
import pandas as pd

from viz_core.record import AttentionRecord


def record_frame(record: AttentionRecord) -> pd.DataFrame:
    """Columns: layer, head, query_pos, query_token, key_pos, key_token, weight."""
    layer, head, q, k = (a.ravel() for a in np.indices(record.weights.shape))
    return pd.DataFrame(
        {
            "layer": layer,
            "head": head,
            "query_pos": q,
            "query_token": np.asarray(record.query_tokens, dtype=object)[q],
            "key_pos": k,
            "key_token": np.asarray(record.key_tokens, dtype=object)[k],
            "weight": record.weights.ravel(),
        }
    )


def records_frame(records: dict[str, AttentionRecord], column: str = "name") -> pd.DataFrame:
    """Several records stacked, with ``column`` telling them apart (e.g. one per scorer)."""
    frames = [record_frame(r).assign(**{column: name}) for name, r in records.items()]
    out = pd.concat(frames, ignore_index=True)
    return out[[column, *[c for c in out.columns if c != column]]]


def series_frame(x: np.ndarray, series: dict[str, np.ndarray], x_name: str = "x") -> pd.DataFrame:
    """A wide table of line-chart data: the x column, then one column per series."""
    return pd.DataFrame({x_name: np.asarray(x), **{k: np.asarray(v) for k, v in series.items()}})


def matrix_frame(
    matrix: np.ndarray, row_name: str = "row", col_name: str = "col", value_name: str = "value"
) -> pd.DataFrame:
    """A 2-D array as tidy rows (row, col, value)."""
    m = np.asarray(matrix)
    r, c = (a.ravel() for a in np.indices(m.shape))
    return pd.DataFrame({row_name: r, col_name: c, value_name: m.ravel()})


def to_csv(frame: pd.DataFrame) -> bytes:
    """UTF-8 with a BOM, so that spreadsheet programs show Chinese tokens correctly."""
    return frame.to_csv(index=False).encode("utf-8-sig")
