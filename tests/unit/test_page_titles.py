"""Each page's title is its name in the navigation, after its icon, in English and in Chinese (issue 40,
item 20: "Attention vs CNN, RNN" opened a page titled "Self-attention, CNN and RNN"). Read from the
sources: the navigation's ``st.Page(page(file), title=_(name), icon=icon)`` in app.py and each page's
``st.title(...)``, evaluated with the catalog's ``_``."""

from __future__ import annotations

import ast

import pytest

from attention_atlas import i18n
from tests.support import PACKAGE


def navigation() -> dict[str, tuple[str, str]]:
    """file → (name as marked, icon) for every page but Home, whose title is the app's name."""
    found = {}
    for call in ast.walk(ast.parse((PACKAGE / "app.py").read_text(encoding="utf-8"))):
        if isinstance(call, ast.Call) and getattr(call.func, "attr", None) == "Page":
            keywords = {k.arg: k.value for k in call.keywords}
            file = call.args[0].args[0].value  # page("scoring.py")
            if file != "home.py":
                found[file] = (keywords["title"].args[0].value, keywords["icon"].value)
    return found


def title(file: str) -> str:
    """The page's ``st.title(...)`` argument, evaluated in the current language."""
    tree = ast.parse((PACKAGE / "app_pages" / file).read_text(encoding="utf-8"))
    (call,) = [
        c for c in ast.walk(tree) if isinstance(c, ast.Call) and getattr(c.func, "attr", None) == "title"
    ]
    return eval(compile(ast.Expression(call.args[0]), file, "eval"), {"_": i18n._})


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_pages_title_is_its_name_in_the_navigation(lang):
    pages = navigation()
    assert len(pages) == 13 and "complexity.py" in pages and "attribution.py" in pages
    with i18n.language(lang):
        assert {f: title(f) for f in pages} == {f: f"{icon} {i18n._(name)}" for f, (name, icon) in pages.items()}
