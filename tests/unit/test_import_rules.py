"""The package's import rules, checked on every module (docs/ARCHITECTURE.md's rooms).

* What a room must not pull in: each room's modules are all imported, one after another, in a fresh
  interpreter, and the first module after which a forbidden library shows in ``sys.modules`` is
  named. ``viz_core`` (numpy, pandas, plotly) never imports torch or streamlit; ``models`` never
  plotly or streamlit; ``serve`` neither streamlit nor torch; ``cli`` none of the heavy libraries
  (its commands import them, so ``atlas --help`` stays fast); the bare package none of the three.
* No import cycle among the package's modules: every ``import`` and ``from … import`` in every
  file, inside functions too (a cycle deferred into a function is still a cycle), read from the
  source (nothing is imported), relative imports resolved and ``from package import module`` taken
  as an import of that module. A strongly connected component of more than one module is a cycle.
* The command line stays a package of small modules: none of ``cli/`` is over 300 lines.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import attention_atlas

PACKAGE = Path(attention_atlas.__file__).parent
ROOT = "attention_atlas"

# room → the top-level libraries none of its modules may import
RULES: dict[str, tuple[str, ...]] = {
    "attention_atlas.viz_core": ("torch", "streamlit"),
    "attention_atlas.models": ("plotly", "streamlit"),
    "attention_atlas.serve": ("streamlit", "torch"),
    "attention_atlas.notebook": ("streamlit",),
    "attention_atlas.cli": ("torch", "transformers", "plotly", "streamlit"),
}
BARE: tuple[str, ...] = ("torch", "streamlit", "plotly")


def module_files() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its ``__init__``), ``__main__`` left
    out: importing it runs the command line."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__main__" or "__pycache__" in parts:
            continue
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def room(prefix: str) -> list[str]:
    return [name for name in module_files() if name == prefix or name.startswith(prefix + ".")]


# Run in a fresh interpreter: import each module in turn; after each, the forbidden libraries that
# appeared. Prints one JSON object: {module: [libraries it brought in]} and import errors.
PROBE = """
import importlib, json, sys
modules, forbidden = json.loads(sys.argv[1]), json.loads(sys.argv[2])
def loaded():
    return {lib for lib in forbidden for name in sys.modules if name == lib or name.startswith(lib + ".")}
pulled, errors, seen = {}, {}, loaded()
for name in modules:
    try:
        importlib.import_module(name)
    except Exception as err:
        errors[name] = f"{type(err).__name__}: {err}"
    now = loaded()
    if now - seen:
        pulled[name] = sorted(now - seen)
    seen = now
print(json.dumps({"pulled": pulled, "errors": errors}))
"""


def probe(modules: list[str], forbidden: tuple[str, ...]) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(modules), json.dumps(list(forbidden))],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "prefix", [pytest.param(p, marks=pytest.mark.slow) if p == "attention_atlas.models" else p for p in RULES]
)  # models: 8 s here, left to make test
def test_no_module_of_a_room_imports_what_the_room_must_not(prefix):
    modules = room(prefix)
    assert len(modules) > 1, f"no modules found under {prefix}"
    result = probe(modules, RULES[prefix])
    assert result["errors"] == {}, result["errors"]  # a module that fails to import proves nothing
    assert result["pulled"] == {}, (
        f"{prefix}: these modules import what the room must not: {result['pulled']}"
    )


def test_the_bare_package_imports_none_of_the_heavy_libraries():
    result = probe([ROOT], BARE)
    assert result == {"pulled": {}, "errors": {}}, result


@pytest.mark.slow
def test_the_probe_names_the_module_that_breaks_a_rule():
    """The check itself can fail: ``models.attention.masks`` imports torch, which ``serve`` may not."""
    result = probe(["attention_atlas.serve.launcher", "attention_atlas.models.attention.masks"], ("torch",))
    assert result == {"pulled": {"attention_atlas.models.attention.masks": ["torch"]}, "errors": {}}


CLI_MOST_LINES = 300


def test_no_module_of_the_command_line_is_over_300_lines():
    """One module per command family (docs/ARCHITECTURE.md): the package cannot drift back into one file."""
    files = module_files()
    modules = room("attention_atlas.cli")
    assert len(modules) > 1, "no modules found under attention_atlas.cli"
    lines = {name: len(files[name].read_text(encoding="utf-8").splitlines()) for name in modules}
    long = {name: n for name, n in lines.items() if n > CLI_MOST_LINES}
    assert not long, f"modules of attention_atlas/cli/ over {CLI_MOST_LINES} lines: {long}"


# -- no import cycle ------------------------------------------------------------------------------


def imports_of(name: str, path: Path, modules: set[str]) -> set[str]:
    """The package modules that ``name`` (at ``path``) imports anywhere in its source."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()

    def nearest(dotted: str) -> str | None:  # the module itself, or the package that holds the name
        while dotted and dotted not in modules:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            # ``from package import module`` imports that module; ``from module import name`` the module
            targets = [
                f"{source}.{a.name}" if f"{source}.{a.name}" in modules else source for a in node.names
            ]
        else:
            continue
        found |= {t for t in map(nearest, targets) if t and (t == ROOT or t.startswith(ROOT + "."))}
    found.discard(name)
    return found


def import_graph() -> dict[str, set[str]]:
    files = module_files()
    return {name: imports_of(name, path, set(files)) for name, path in files.items()}


def components(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []

    def visit(v: str) -> None:  # recursive: the package is a few hundred modules at most
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(component)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def cycles(graph: dict[str, set[str]], most: int = 50) -> list[list[str]]:
    """Every elementary cycle (up to ``most`` per component) of the components above, each a closed
    path that starts and ends at its alphabetically first module; sorted."""
    found: list[list[str]] = []

    def walk(path: list[str], allowed: set[str], paths: list[list[str]]) -> None:
        for w in sorted(graph.get(path[-1], ())):
            if len(paths) >= most:
                return
            if w == path[0]:
                paths.append([*path, w])
            elif w in allowed and w not in path:
                walk([*path, w], allowed, paths)

    for component in components(graph):
        paths: list[list[str]] = []
        for start in sorted(component):
            walk([start], {m for m in component if m > start}, paths)  # each cycle from its first module
        found += paths
    return sorted(found)


def describe(found: list[list[str]]) -> str:
    return "\n".join(" → ".join(p.removeprefix(ROOT + ".") for p in path) for path in found)


def test_the_cycle_finder_finds_a_cycle_through_a_function_level_import(tmp_path):
    """The check itself can fail: a two-module cycle whose second half is inside a function."""
    graph = {
        "attention_atlas.a": {"attention_atlas.b"},
        "attention_atlas.b": {"attention_atlas.c"},
        "attention_atlas.c": {"attention_atlas.a"},
        "attention_atlas.d": {"attention_atlas.a"},
    }
    assert cycles(graph) == [
        ["attention_atlas.a", "attention_atlas.b", "attention_atlas.c", "attention_atlas.a"]
    ]
    pkg = tmp_path / "attention_atlas"
    (pkg / "ui").mkdir(parents=True)
    (pkg / "ui" / "x.py").write_text("from . import y\n")
    (pkg / "ui" / "y.py").write_text("def f():\n    from attention_atlas.ui.x import thing\n")
    modules = {"attention_atlas.ui.x", "attention_atlas.ui.y", "attention_atlas.ui", "attention_atlas"}
    graph = {
        "attention_atlas.ui.x": imports_of("attention_atlas.ui.x", pkg / "ui" / "x.py", modules),
        "attention_atlas.ui.y": imports_of("attention_atlas.ui.y", pkg / "ui" / "y.py", modules),
    }
    assert graph == {
        "attention_atlas.ui.x": {"attention_atlas.ui.y"},
        "attention_atlas.ui.y": {"attention_atlas.ui.x"},
    }
    assert cycles(graph) == [["attention_atlas.ui.x", "attention_atlas.ui.y", "attention_atlas.ui.x"]]


def test_the_graph_sees_the_imports_it_should():
    graph = import_graph()
    assert "attention_atlas.viz_core.export" in graph["attention_atlas.ui.widgets"]
    assert len(graph) > 100 and sum(map(len, graph.values())) > 200


def test_no_import_cycle_among_the_package_modules():
    graph = import_graph()
    found = cycles(graph)
    assert not found, (
        f"{len(found)} import cycle(s) in {len(components(graph))} group(s) of modules that import "
        f"each other:\n{describe(found)}"
    )
