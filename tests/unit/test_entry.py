"""How the app is started: ``streamlit run app.py`` from the checkout's root and ``atlas serve`` get
the same server options and the same pages, and a run writes nothing into the package (a wheel's
site folder may be read-only)."""

import re
import tomllib

from streamlit.testing.v1 import AppTest

from attention_atlas.serve.launcher import OPTIONS
from tests.support import ROOT, package_files

TIMEOUT = 120


def flag(value) -> str:
    """A config.toml value as a command-line flag's text (``true``, ``200``, ``none``)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def config_options() -> dict[str, str]:
    """The checkout's .streamlit/config.toml as ``{"server.headless": "true", …}``."""
    table = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    return {f"{section}.{key}": flag(value) for section, items in table.items() for key, value in items.items()}


def test_the_checkouts_config_is_the_launchers_options():
    assert config_options() == OPTIONS


def test_streamlit_run_app_py_from_the_root_opens_home_and_its_page_links():
    at = AppTest.from_file(ROOT / "app.py", default_timeout=TIMEOUT).run()
    assert not at.exception
    assert "Attention Atlas" in at.title[0].value
    at.switch_page("attention_atlas/app_pages/scoring.py").run()  # a path from the root's app.py
    assert not at.exception
    assert at.title[0].value.startswith("🎯")


def both_views():
    import plotly.graph_objects as go

    from attention_atlas.ui.live_heads import head_view_chart, model_view_chart

    fig = go.Figure(go.Heatmap(z=[[0.5, 0.5], [1.0, 0.0]]))
    model_view_chart(fig, "k", (1, 1), ("layer", "head"))
    head_view_chart(fig, "k", "rid", 0, "0", single=True)


def test_a_run_of_the_app_and_its_live_views_writes_nothing_into_the_package():
    before = package_files()
    at = AppTest.from_file(ROOT / "app.py", default_timeout=TIMEOUT).run()
    views = AppTest.from_function(both_views, default_timeout=TIMEOUT).run()
    assert not at.exception and not views.exception
    assert package_files() == before


# sys.path changed in place or rebound, or a site folder added: the package is installed (pip install -e .),
# and a child process that needs another folder gets it on its PYTHONPATH.
EDITS_SYS_PATH = re.compile(r"\bsys\.path\s*(\.\s*(insert|append|extend|remove|pop|clear)\b|\[[^]]*\]\s*=|\+?=[^=])|\bsite\.addsitedir")
SOURCES = ("attention_atlas", "bench", "harness", "tests", "deploy", "examples")


def test_no_file_edits_sys_path():
    files = [*ROOT.glob("*.py"), *(p for folder in SOURCES for p in (ROOT / folder).rglob("*") if p.suffix in (".py", ".ipynb"))]
    edits = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in files
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if EDITS_SYS_PATH.search(line)
    ]
    assert len(files) > 100 and edits == []
