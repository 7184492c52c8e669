"""The docs say where everything is: every module of the package is named in docs/ARCHITECTURE.md
under its room, and nothing tracked points outside the repository."""

from __future__ import annotations

import re
import subprocess

from tests.support import PACKAGE, ROOT

ARCHITECTURE = ROOT / "docs" / "ARCHITECTURE.md"


def _modules() -> list[str]:
    """Every module of the package as a path from the package ('ui/cached.py'), __init__ left out."""
    return sorted(
        p.relative_to(PACKAGE).as_posix()
        for p in PACKAGE.rglob("*.py")
        if p.name != "__init__.py" and "__pycache__" not in p.parts
    )


def test_every_module_is_named_in_the_architecture_doc():
    text = ARCHITECTURE.read_text(encoding="utf-8")
    named = set(re.findall(r"[\w/]+\.py", text))
    missing = []
    for module in _modules():
        room, _, rest = module.rpartition("/")
        # named by its path from the package, or by its file name in its room's row (`cached.py`)
        if module not in named and not (rest in named and _room_mentions(text, room, rest)):
            missing.append(module)
    assert not missing, f"modules docs/ARCHITECTURE.md does not name: {missing}"


def _room_mentions(text: str, room: str, name: str) -> bool:
    """Whether a table row or paragraph about ``room`` (its folder, e.g. `ui/`) names ``name``."""
    if not room:
        return True
    folder = room.split("/")[-1] + "/"
    return any(folder in block and name in block for block in text.split("\n"))


def test_nothing_tracked_points_outside_the_repository():
    out = subprocess.run(
        ["git", "grep", "-n", "-I", "--", "../shared"], cwd=ROOT, capture_output=True, text=True
    )
    hits = [line for line in out.stdout.splitlines() if not line.startswith("tests/unit/test_docs.py")]
    assert not hits, hits
