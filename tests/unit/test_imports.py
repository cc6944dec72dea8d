"""Import rules of the engine package, checked on the source.

Inside ComfyUI the pack folder is imported under a path-derived package name, so the engine must
import itself relatively (``from ..errors import …``): ``import mangaka`` works in tests and the
command line but fails inside ComfyUI. The engine imports llama_cpp only inside functions (where it
is used), never at module level. That it never imports ComfyUI or torch is checked once, with the
rest of the engine's shape, in ``test_architecture.py``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ENGINE = Path(__file__).resolve().parents[2] / "mangaka"
MODULES = sorted(ENGINE.rglob("*.py"))


def _imports(tree: ast.AST) -> list[tuple[int, str, int, bool]]:
    """(line, module, relative level, at module level) for every import."""
    top = set(map(id, getattr(tree, "body", [])))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, 0, id(node) in top) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append((node.lineno, node.module or "", node.level, id(node) in top))
    return found


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ENGINE)))
def test_engine_imports(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for line, module, level, top in _imports(tree):
        root = module.split(".")[0]
        where = f"{path.relative_to(ENGINE.parent)}:{line}"
        assert not (level == 0 and root == "mangaka"), f"{where}: import mangaka relatively"
        assert not (level == 0 and root == "llama_cpp" and top), f"{where}: import llama_cpp where it is used"


NODES = Path(__file__).resolve().parents[2] / "nodes"


@pytest.mark.parametrize(
    "path",
    [p for p in MODULES if "devtools" not in p.parts] + sorted(NODES.rglob("*.py")),
    ids=lambda p: str(p.relative_to(ENGINE.parent)),
)
def test_devtools_stay_out_of_the_runtime(path):
    """The benchmark and the tiny-model writers (``gguf``, dev-only) are development tooling:
    the nodes and the engine never import them; the bench command (``mangaka/cli/bench.py``) does,
    inside itself."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = set(map(id, tree.body))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [alias.name for alias in node.names]
            if isinstance(node, ast.ImportFrom):
                names.append(node.module or "")
            if any("devtools" in name.split(".") for name in names):
                where = f"{path.relative_to(ENGINE.parent)}:{node.lineno}"
                bench = path.relative_to(ENGINE) == Path("cli", "bench.py")
                assert bench and id(node) not in top, f"{where}: devtools imported"
