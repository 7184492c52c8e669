"""Every page stays short enough to read top to bottom (issue 36): at most ``LIMIT`` logic lines in
each ``app_pages/*.py``; the rest belongs in builders in ``ui/``.

A logic line is a physical line that carries a code token: blank lines, comment-only lines and
docstrings (a module's, a function's, a class's) do not count; a statement over several lines
counts each of them."""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

from tests.support import PACKAGE

LIMIT = 120
SKIP = {
    tokenize.COMMENT,
    tokenize.NL,
    tokenize.NEWLINE,
    tokenize.INDENT,
    tokenize.DEDENT,
    tokenize.ENDMARKER,
}


def logic_lines(path: Path) -> int:
    """The physical lines of ``path`` that carry a code token, docstrings left out."""
    src = path.read_text(encoding="utf-8")
    doc: set[int] = set()
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                doc.update(range(first.lineno, first.end_lineno + 1))
    lines: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type not in SKIP:
            lines.update(ln for ln in range(tok.start[0], tok.end[0] + 1) if ln not in doc)
    return len(lines)


def test_the_counter_leaves_out_blank_lines_comments_and_docstrings(tmp_path):
    page = tmp_path / "page.py"
    page.write_text(
        '"""A page,\nover two lines."""\n\n# a comment\nimport streamlit as st  # and one after code\n\n'
        'def f():\n    """Its docstring."""\n    return (\n        1\n    )\n\nx = """not a\ndocstring"""\n',
        encoding="utf-8",
    )
    assert logic_lines(page) == 7  # import, def, return ( 1 ), and the two lines of x's string


def test_every_page_is_at_most_120_logic_lines():
    pages = sorted((PACKAGE / "app_pages").glob("*.py"))
    assert len(pages) > 10, "no pages found"
    over = {p.name: n for p in pages if (n := logic_lines(p)) > LIMIT}
    named = ", ".join(f"{name} ({n})" for name, n in sorted(over.items(), key=lambda kv: -kv[1]))
    assert not over, f"pages over {LIMIT} logic lines (move whole blocks into builders in ui/): {named}"
