"""``cli.py extract``'s text table lines up in a terminal: labels of any width (``<eos>``, CJK
characters that take two cells, combining marks that take none) and every weight column."""

import numpy as np

from attention_atlas.cli.extract import _cells, _table


def _edges(line: str) -> list[int]:
    """The terminal cell at which each space-separated entry of ``line`` ends."""
    edges, cell = [], 0
    for i, ch in enumerate(line):
        cell += _cells(ch)
        if ch != " " and (i + 1 == len(line) or line[i + 1] == " "):
            edges.append(cell)
    return edges


def test_rows_and_columns_line_up_whatever_the_labels():
    rows, cols = ["je", "<eos>", "两", "é"], ["i'm", "home", "<eos>", "鹂鹂鹂", "e\u0301"]
    weights = np.linspace(0, 1, len(rows) * len(cols)).reshape(len(rows), len(cols))
    lines = _table(rows, cols, weights)
    assert len(lines) == 1 + len(rows)
    edges = [_edges(line) for line in lines]
    assert all(e[-len(cols) :] == edges[0] for e in edges[1:]), lines  # every column ends where its label does
    assert len({e[0] for e in edges[1:]}) == 1, lines  # the row labels end in one column
    assert _cells("两") == 2 and _cells("e\u0301") == 1 and _cells("<eos>") == 5
