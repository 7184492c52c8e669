"""Tidy tables for download: one row per number, with its positions and tokens.

Each chart's CSV holds the numbers the chart shows (every cell of every panel), with the
tokens wherever the chart's axes have tokens.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from attention_atlas.viz_core.record import AttentionRecord


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


def cells_frame(cells: np.ndarray, value_name: str = "value") -> pd.DataFrame:
    """Every head's cells ``[layers, heads, row, col]`` (a long input's thumbnails) as tidy rows."""
    c = np.asarray(cells)
    layer, head, row, col = (a.ravel() for a in np.indices(c.shape))
    return pd.DataFrame({"layer": layer, "head": head, "row": row, "col": col, value_name: c.ravel()})


def token_matrix_frame(
    matrix: np.ndarray, query_tokens: list[str], key_tokens: list[str], value_name: str = "weight"
) -> pd.DataFrame:
    """A ``[query, key]`` matrix (one head, heads averaged, rollout, flow) as tidy rows:
    query_pos, query_token, key_pos, key_token, value."""
    m = np.asarray(matrix)
    q, k = (a.ravel() for a in np.indices(m.shape))
    return pd.DataFrame(
        {
            "query_pos": q,
            "query_token": np.asarray(query_tokens, dtype=object)[q],
            "key_pos": k,
            "key_token": np.asarray(key_tokens, dtype=object)[k],
            value_name: m.ravel(),
        }
    )


def panels_frame(panels: dict[str, np.ndarray], row_name: str = "row", col_name: str = "col") -> pd.DataFrame:
    """Matrices of one shape shown side by side: one row per cell, one value column per panel."""
    first = np.asarray(next(iter(panels.values())))
    r, c = (a.ravel() for a in np.indices(first.shape))
    return pd.DataFrame({row_name: r, col_name: c, **{k: np.asarray(v).ravel() for k, v in panels.items()}})


def token_series_frame(tokens: list[str], series: dict[str, np.ndarray], side: str = "query") -> pd.DataFrame:
    """Values per token position (bars per query): <side>_pos, <side>_token, then one column per series."""
    return pd.DataFrame(
        {
            f"{side}_pos": np.arange(len(tokens)),
            f"{side}_token": list(tokens),
            **{k: np.asarray(v) for k, v in series.items()},
        }
    )


def to_csv(frame: pd.DataFrame) -> bytes:
    """UTF-8 with a BOM, so that spreadsheet programs show Chinese tokens correctly."""
    return frame.to_csv(index=False).encode("utf-8-sig")
