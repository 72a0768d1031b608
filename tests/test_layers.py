"""The package's shape, held: the measurement packages import in one direction only
(sim < bench < baseline < quality < report), the lifecycle imports none of them, and no function
is longer than 80 lines.

Why a test and not a convention: an upward import (the load generator reaching into the report
stack, the simulator into the quality package) closes a cycle between packages that each look
fine alone, and nobody sees it until a module can no longer be imported on its own (the simulator
and the on-host load generator run in processes without pytest). The graph is read from the
source with :mod:`ast`, so nothing is imported to check it.

Rules, for a module in layer *i*:

- it imports nothing from a layer above *i*, at any place (module level, ``TYPE_CHECKING``
  blocks, inside functions);
- through the package's root modules (``config``, ``deployment``, ...), what it imports at run
  time reaches nothing above *i* either; a root module's type-only imports do not count, since
  they never run.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "pytest_sglang"

#: Lowest first: each may import the ones before it, never the ones after.
LAYERS = ("sim", "bench", "baseline", "quality", "report")


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(module: str, is_package: bool, level: int, name: str | None) -> str:
    """The absolute module a ``from ... import`` names (relative imports resolved)."""
    if level == 0:
        return name or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(source: str, module: str, is_package: bool) -> Iterator[tuple[str, bool]]:
    """Every module ``source`` imports, with whether the import runs (False: type-only)."""

    def visit(node: ast.AST, runs: bool) -> Iterator[tuple[str, bool]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for stmt in child.body:
                    yield from visit_stmt(stmt, False)
                for stmt in child.orelse:
                    yield from visit_stmt(stmt, runs)
            else:
                yield from visit_stmt(child, runs)

    def visit_stmt(node: ast.AST, runs: bool) -> Iterator[tuple[str, bool]]:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, runs
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, is_package, node.level, node.module)
            yield target, runs
            for alias in node.names:  # ``from . import radix`` names a module
                yield f"{target}.{alias.name}", runs
        else:
            yield from visit(node, runs)

    yield from visit(ast.parse(source), True)


def import_graph(root: Path = PACKAGE) -> dict[str, list[tuple[str, bool]]]:
    """Module → the package's own modules it imports (with whether each import runs)."""
    paths = {_module_name(p, root): p for p in root.rglob("*.py")}
    graph: dict[str, list[tuple[str, bool]]] = {}
    for name, path in paths.items():
        found = imports_of(path.read_text(), name, path.name == "__init__.py")
        graph[name] = sorted({(m, runs) for m, runs in found if m in paths})
    return graph


def layer_of(module: str, package: str = "pytest_sglang") -> int | None:
    """The module's layer index, or None for a root module (or a package outside the layers)."""
    parts = module.split(".")
    if len(parts) >= 2 and parts[0] == package and parts[1] in LAYERS:
        return LAYERS.index(parts[1])
    return None


def upward_imports(graph: dict[str, list[tuple[str, bool]]]) -> list[str]:
    """Each breach of the rules above, as ``importer -> imported (via ...)``."""
    breaches: list[str] = []
    for module, imported in sorted(graph.items()):
        own = layer_of(module)
        if own is None:
            continue
        for target, _ in imported:
            theirs = layer_of(target)
            if theirs is not None and theirs > own:
                breaches.append(f"{module} -> {target}")
        # Run-time closure through root modules.
        seen: set[str] = set()
        stack = [(t, [t]) for t, runs in imported if runs and layer_of(t) is None]
        while stack:
            current, via = stack.pop()
            if current in seen:
                continue
            seen.add(current)
            for target, runs in graph.get(current, []):
                if not runs:
                    continue
                theirs = layer_of(target)
                if theirs is None:
                    stack.append((target, [*via, target]))
                elif theirs > own:
                    breaches.append(f"{module} -> {target} (via {' -> '.join(via)})")
    return sorted(set(breaches))


def test_measurement_packages_import_only_downward() -> None:
    assert upward_imports(import_graph()) == []


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        pytest.param(
            {"sim/a.py": "from ..report import x\n"},
            ["pytest_sglang.sim.a -> pytest_sglang.report"],
            id="direct",
        ),
        pytest.param(
            {
                "sim/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..bench import b\n"
            },
            [
                "pytest_sglang.sim.a -> pytest_sglang.bench",
                "pytest_sglang.sim.a -> pytest_sglang.bench.b",
            ],
            id="type-checking-direct",
        ),
        pytest.param(
            {"bench/a.py": "def f():\n    import pytest_sglang.quality\n"},
            ["pytest_sglang.bench.a -> pytest_sglang.quality"],
            id="in-function",
        ),
        pytest.param(
            {"sim/a.py": "from .. import hub\n", "hub.py": "from .report import r\n"},
            [
                "pytest_sglang.sim.a -> pytest_sglang.report (via pytest_sglang.hub)",
                "pytest_sglang.sim.a -> pytest_sglang.report.r (via pytest_sglang.hub)",
            ],
            id="through-root",
        ),
        pytest.param(
            {
                "sim/a.py": "from .. import hub\n",
                "hub.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .report import r\n",
            },
            [],
            id="type-only-through-root-allowed",
        ),
        pytest.param(
            {"report/a.py": "from ..sim import s\nfrom ..bench import b\n"}, [], id="downward"
        ),
    ],
)
def test_the_checker_finds_each_kind_of_breach(
    tmp_path: Path, files: dict[str, str], expected: list[str]
) -> None:
    root = tmp_path / "pytest_sglang"
    for package in ("", *LAYERS):
        (root / package).mkdir(parents=True, exist_ok=True)
        (root / package / "__init__.py").write_text("")
    for name in ("report/r.py", "bench/b.py", "sim/s.py"):
        (root / name).write_text("")
    for name, text in files.items():
        (root / name).write_text(text)
    assert upward_imports(import_graph(root)) == expected


def test_the_lifecycle_imports_no_measurement_package() -> None:
    """Deploying a config does not need the load generator, baselines, quality or reports."""
    graph = import_graph()
    above = ("bench", "baseline", "quality", "report")
    found = [
        f"{module} -> {target}"
        for module, imported in graph.items()
        if module.startswith("pytest_sglang.lifecycle")
        for target, _ in imported
        if (layer := layer_of(target)) is not None and LAYERS[layer] in above
    ]
    assert found == []


#: The longest a function may be: one that needs more is doing more than one thing.
MAX_FUNCTION_LINES = 80


def test_no_function_is_longer_than_80_lines() -> None:
    long = [
        f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.name} ({length} lines)"
        for path in sorted(PACKAGE.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and (length := (node.end_lineno or node.lineno) - node.lineno + 1) > MAX_FUNCTION_LINES
    ]
    assert long == []
