"""The engine's shape, checked on its source: import cycles, forbidden imports; and module and
function size in the whole repository.

Every ``mangaka/**/*.py`` is parsed with ``ast``; each ``import``/``from`` statement is resolved
to the engine module it loads (relative imports included) and marked as module-level (it runs
when the module is imported; ``if TYPE_CHECKING:`` blocks count) or function-level (inside a
``def``: how a load-time cycle is broken on purpose).
"""

from __future__ import annotations

import ast
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ROOT / "mangaka"
FORBIDDEN = ("nodes", "comfy", "comfy_api", "folder_paths", "server", "torch")
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


PATHS = {module_name(p): p for p in sorted(ENGINE.rglob("*.py"))}


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the module imported, resolved (an engine module, or the top name outside)
    line: int
    module_level: bool


def _resolve(name: str) -> str:
    """The engine module ``name`` loads (the longest known prefix), or ``name`` if outside."""
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        candidate = ".".join(parts[:n])
        if candidate in PATHS:
            return candidate
    return name


class _Collector(ast.NodeVisitor):
    def __init__(self, module: str, is_package: bool) -> None:
        self.module = module
        self.package = module if is_package else module.rpartition(".")[0]
        self.depth = 0  # how many function bodies enclose the node
        self.found: list[Import] = []

    def _add(self, target: str, line: int) -> None:
        self.found.append(Import(self.module, _resolve(target), line, self.depth == 0))

    def _nested(self, node: ast.AST) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _nested

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name, node.lineno)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            base = self.package.split(".")
            if node.level - 1 >= len(base):  # above the engine package: e.g. ``from ... import nodes``
                base_name = "<outside>." + (node.module or "")
            else:
                base_name = ".".join(base[: len(base) - (node.level - 1)])
            base_name = f"{base_name}.{node.module}" if node.module else base_name
        else:
            base_name = node.module or ""
        for alias in node.names:
            sub = f"{base_name}.{alias.name}"
            self._add(sub if sub in PATHS else base_name, node.lineno)


def engine_imports() -> list[Import]:
    found: list[Import] = []
    for name, path in PATHS.items():
        collector = _Collector(name, path.name == "__init__.py")
        collector.visit(ast.parse(path.read_text(encoding="utf-8"), str(path)))
        found += collector.found
    return found


IMPORTS = engine_imports()


def find_cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (or a module importing itself)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1 or node in edges.get(node, ()):
                groups.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return groups


def _graph(imports: list[Import]) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for imp in imports:
        if imp.target in PATHS and imp.target != imp.source:
            edges.setdefault(imp.source, set()).add(imp.target)
    return edges


def _describe(groups: list[list[str]], imports: list[Import]) -> str:
    lines = []
    for group in groups:
        members = set(group)
        lines.append("cycle among " + ", ".join(group) + ":")
        lines += [
            f"  {i.source} line {i.line} imports {i.target}"
            for i in imports
            if i.source in members and i.target in members
        ]
    return "\n".join(lines)


def test_the_cycle_finder_finds_cycles():
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert find_cycles({"a": {"b"}, "b": set()}) == []


def test_relative_imports_resolve_to_engine_modules():
    inprocess = {i.target for i in IMPORTS if i.source == "mangaka.llm.inprocess"}
    assert {"mangaka.errors", "mangaka.llm.base", "mangaka.llm.loading"} <= inprocess


def test_no_import_cycle_at_load_time():
    """Module-level imports only: a function-level import is how a load-time cycle is broken."""
    imports = [i for i in IMPORTS if i.module_level]
    groups = find_cycles(_graph(imports))
    assert not groups, _describe(groups, imports)


def test_no_import_cycle_counting_every_import():
    """Function-level imports too: the dependencies point one way."""
    groups = find_cycles(_graph(IMPORTS))
    assert not groups, _describe(groups, IMPORTS)


def test_only_the_command_line_and_the_dev_tools_import_the_command_line():
    """The surfaces layer (``mangaka/cli/``) sits on the engine: no engine module imports it, at
    load time or in a function (``devtools`` may: the docs are made from the parser)."""
    bad = [
        f"{i.source} line {i.line} imports {i.target}"
        for i in IMPORTS
        if i.target.startswith("mangaka.cli")
        and not i.source.startswith(("mangaka.cli", "mangaka.devtools", "mangaka.__main__"))
    ]
    assert not bad, "\n".join(bad)


def test_the_engine_imports_no_comfyui_and_no_torch():
    bad = [
        f"{i.source} line {i.line} imports {i.target}"
        for i in IMPORTS
        if i.target.split(".")[0] in FORBIDDEN or i.target.startswith("<outside>")
    ]
    assert not bad, "\n".join(bad)


def test_no_engine_module_imports_another_ones_private_names():
    """``from .x import _name`` reaches into ``x``; give ``x`` a public name for it instead."""
    bad = []
    for name, path in PATHS.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("mangaka")):
                private = [a.name for a in node.names if a.name[:1] == "_" and a.name[:2] != "__"]
                bad += [f"{name} line {node.lineno} imports {n}" for n in private]
    assert not bad, "\n".join(bad)


def repository_python() -> list[str]:
    """Every Python file git tracks or would track: the engine, ``nodes/``, ``native/``, ``lora/``,
    ``tests/`` and the top level (not the ignored venvs and caches)."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.py"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    return sorted(name for name in listed if (ROOT / name).is_file())


def test_the_size_rules_cover_the_whole_repository():
    files = repository_python()
    for part in ("mangaka/", "nodes/", "native/", "lora/", "tests/"):
        assert any(f.startswith(part) for f in files), part
    assert "__init__.py" in files and not any(".venv" in f for f in files)


@pytest.mark.parametrize("rel", repository_python())
def test_module_and_function_sizes(rel):
    """At most 600 lines a module and 80 a function, everywhere in the repository."""
    path = ROOT / rel
    text = path.read_text(encoding="utf-8")
    lines = len(text.splitlines())
    assert lines <= MAX_MODULE_LINES, f"{rel} has {lines} lines (at most {MAX_MODULE_LINES}): split it"
    long = [
        f"{rel}::{node.name} has {node.end_lineno - node.lineno + 1} lines"
        for node in ast.walk(ast.parse(text))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines: " + "; ".join(long)


def test_an_in_function_import_of_the_package_says_why():
    """The package imports its own modules at the top; one imported inside a function keeps a heavy
    library (Pillow, llama.cpp, gguf/numpy, the benchmark) off import time, and says so on its line."""
    bad = []
    for path in sorted(ENGINE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        for fn in ast.walk(ast.parse(text)):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                own = isinstance(node, ast.ImportFrom) and (
                    node.level > 0 or (node.module or "").startswith("mangaka")
                )
                if own and "#" not in lines[node.end_lineno - 1]:
                    bad.append(
                        f"{path.relative_to(ROOT)} line {node.lineno}: import it at the top, or say why not"
                    )
    assert not bad, "\n".join(bad)


def test_no_test_imports_another_tiers_modules():
    """A tier's tests import their own tier's support modules and the shared ones at ``tests/``'s
    top (``fakes.py``, ``servers.py``, ``background.py``, ``growth.py``), never another tier's."""
    bad = []
    for rel in repository_python():
        parts = rel.split("/")
        if parts[0] != "tests" or len(parts) < 3:
            continue
        for node in ast.walk(ast.parse((ROOT / rel).read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tests."):
                target = node.module.split(".")
                if len(target) > 2 and target[1] != parts[1]:
                    bad.append(f"{rel} line {node.lineno}: from {node.module} import …")
    assert bad == []


def test_no_test_module_imports_from_another():
    """Shared fakes, fixtures and helpers live in support modules (``tests/fakes.py``,
    ``tests/servers.py``, ``tests/*/support.py``) or conftest fixtures, never in a test file."""
    bad = []
    for rel in repository_python():
        if not rel.startswith("tests/"):
            continue
        for node in ast.walk(ast.parse((ROOT / rel).read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                if node.module.rsplit(".", 1)[-1].startswith("test_"):
                    bad.append(f"{rel} line {node.lineno}: from {node.module} import …")
    assert bad == []
