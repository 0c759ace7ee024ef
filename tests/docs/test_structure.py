"""The package's shape holds: rooms in one-way layers, no import cycle, no module over 400 lines, no function
over 80, no two classes of one name (CONTRIBUTING.md). It reads the source, so an arrow run back up fails here."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

from ..conftest import ROOT

PACKAGE = ROOT / "lazymcp"

LAYERS: tuple[tuple[str, ...], ...] = (
    ("protocol",),
    ("local",),
    ("tools",),
    ("search", "access"),
    ("surfaces",),
    ("core",),
    ("gateway",),
    ("top",),
    ("run",),
    ("cli",),
)
"""Bottom first. A room may import its own modules and any room of a lower layer; rooms of one layer are
independent of each other. ``lazymcp/__init__.py`` (the public names), ``__main__`` and ``version`` stand apart."""

APART = ("__init__", "__main__", "version")
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 80


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


MODULES = _modules()


def _imports(path: Path) -> set[str]:
    """Every lazymcp module ``path`` imports: at the top, inside a function, for type checking alone, or by name
    through ``importlib.import_module``."""
    named: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            named.update(alias.name for alias in node.names if alias.name.startswith("lazymcp"))
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("lazymcp"):
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                named.add(sub if sub in MODULES else node.module)
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            function = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if function == "import_module" and isinstance(node.args[0].value, str):
                named.add(node.args[0].value)
    return {name for name in named if name in MODULES}


GRAPH = {name: _imports(path) for name, path in MODULES.items()}


def _room(module: str) -> str:
    """The subpackage a module is in; ``top`` for the public modules at the top (client, sdk, ...)."""
    parts = module.split(".")
    if len(parts) == 1:
        return "__init__"
    return parts[1] if (PACKAGE / parts[1]).is_dir() or parts[1] in APART else "top"


def _layer(room: str) -> int | None:
    for rank, rooms in enumerate(LAYERS):
        if room in rooms:
            return rank
    return None


def test_every_room_has_a_layer_and_says_what_it_owns() -> None:
    rooms = {_room(name) for name in MODULES} - set(APART)
    assert sorted(room for room in rooms if _layer(room) is None) == []
    for room in rooms:
        path = PACKAGE / room / "__init__.py"
        if path.exists():
            doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
            assert "May import" in doc, f"{path.relative_to(ROOT)}: its docstring says what it may import"


def test_the_top_of_the_package_stays_small() -> None:
    assert len([name for name in MODULES if name.count(".") == 1 and not (PACKAGE / name.split(".")[1]).is_dir()]) < 10


def test_layers_are_one_way() -> None:
    upward = []
    for module, imported in GRAPH.items():
        here = _room(module)
        if here in APART:
            continue
        for target in imported:
            there = _room(target)
            if there in APART or there == here:
                continue
            mine, theirs = _layer(here), _layer(there)
            assert mine is not None and theirs is not None
            if theirs >= mine:
                upward.append(f"{module} -> {target}")
    assert upward == []


def test_no_import_cycle() -> None:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in GRAPH[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1 or node in GRAPH[node]:
                cycles.append(sorted(component))

    for module in GRAPH:
        if module not in index and module != "lazymcp":
            visit(module)
    assert [cycle for cycle in cycles if "lazymcp" not in cycle] == []


@pytest.mark.parametrize("module", sorted(MODULES))
def test_modules_and_functions_are_short(module: str) -> None:
    path = MODULES[module]
    source = path.read_text(encoding="utf-8")
    assert source.count("\n") <= MAX_MODULE_LINES, f"{path.relative_to(ROOT)} has {source.count(chr(10))} lines"
    long = [
        f"{node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert long == []


def test_no_two_classes_of_one_name() -> None:
    homes: defaultdict[str, list[str]] = defaultdict(list)
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                homes[node.name].append(module)
    assert {name: where for name, where in homes.items() if len(where) > 1} == {}
