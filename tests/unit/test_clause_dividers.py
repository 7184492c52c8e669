"""A multi-clause couplet's alignment is framed clause by clause (issue 16: readable clauses)."""

import numpy as np

from attention_atlas.viz_core.figures import clause_bounds, clause_dividers, heatmap


def test_bounds_fall_after_each_inner_clause_mark():
    assert clause_bounds(list("腾飞上铁，锐意改革谋发展，勇当千里马")) == [4.5, 12.5]
    assert clause_bounds(list("两个黄鹂鸣翠柳")) == []
    assert clause_bounds(list("春风，")) == []  # a mark at the end closes no clause before another
    assert clause_bounds(["Go", ",", "now", "!"]) == [1.5]


def test_dividers_on_both_axes_where_each_side_has_its_clauses():
    upper, lower = list("腾飞上铁，锐意改革"), list("一片中天，不知心事")
    fig = clause_dividers(heatmap(np.full((9, 9), 1 / 9), lower, upper), lower, upper)
    vertical = [s.x0 for s in fig.layout.shapes if s.x0 == s.x1]
    horizontal = [s.y0 for s in fig.layout.shapes if s.y0 == s.y1]
    assert vertical == [4.5] and horizontal == [4.5]
    plain = clause_dividers(heatmap(np.full((2, 2), 0.5), ["a", "b"], ["c", "d"]), ["a", "b"], ["c", "d"])
    assert not plain.layout.shapes
