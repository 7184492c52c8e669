"""The files a notebook view carries, read once from the installed packages: the app's two
scripts (``ui/live_heads.js``, ``ui/line_view.js``), the notebook's own front end (``page.js``,
``widget.js``) and the plotly package's copy of Plotly.js."""

from __future__ import annotations

import functools
import gzip
from pathlib import Path

import plotly

HERE = Path(__file__).resolve().parent
SCRIPTS = {"live": HERE.parent / "ui" / "live_heads.js", "line": HERE.parent / "ui" / "line_view.js"}
DRIVER = HERE / "page.js"
FRONT = HERE / "widget.js"
PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


@functools.cache
def text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def scripts() -> dict[str, str]:
    """The app's two scripts by name, as ``page.js`` imports them."""
    return {name: text(path) for name, path in SCRIPTS.items()}


def plotly_js() -> str:
    return text(PLOTLY_JS)


@functools.cache
def plotly_gz() -> bytes:
    """Plotly.js gzipped (4.8 MB to 1.5 MB), as the live widget sends it and a notebook keeps it."""
    return gzip.compress(plotly_js().encode("utf-8"), compresslevel=6, mtime=0)


def driver() -> str:
    return text(DRIVER)


def esm() -> str:
    """The live widget's ES module: ``page.js``'s functions, then ``widget.js`` with its export."""
    return driver() + "\n" + text(FRONT)
