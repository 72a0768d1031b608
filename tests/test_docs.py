"""The README and the quickstart run as written: their commands and code are executed here.

Every ``sh`` and ``python`` block of these pages carries a marker on the line above it, so that no
block goes unchecked (a block without one fails this test):

- ``<!-- docs-check: run -->``: a shell block, run with ``bash -e`` in a scratch directory that
  holds the files of the page's ``file`` blocks and ``.venv`` (this test's own venv), as the
  reader's clone would; ``run in the repository`` runs it in the repository itself;
- ``<!-- docs-check: file NAME -->``: a Python block saved as NAME for the commands after it;
- ``<!-- docs-check: pytest -->``: a Python block that is a test module on its own, run with
  pytest on the simulator; ``pytest, continues the block above`` adds to the previous one;
- ``<!-- docs-check: skip: REASON -->``: not run, for the reason given (a GPU host, or the CI
  job's own ``make`` commands).

The fixed port 30000 becomes a free one (runs on a shared machine stay apart), and every run has
``SGLANG_SIM_TIME_SCALE=0.1`` (the simulator's decoding 10x faster: these check that the
commands work, not the figures) and, where the page gives no command (pytest blocks),
``SGLANG_SIM_STARTUP_SCALE=0.02``.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = ("README.md", "docs/quickstart.md", "docs/topologies.md")
_BLOCK = re.compile(
    r"(?:<!-- docs-check: (?P<marker>.*?) -->\n)?```(?P<lang>[a-z]*)\n(?P<body>.*?)^```",
    re.S | re.M,
)


@dataclass
class Block:
    page: str
    lang: str
    marker: str
    body: str


def blocks(page: str) -> list[Block]:
    text = (REPO / page).read_text()
    return [
        Block(page, m["lang"], (m["marker"] or "").strip(), m["body"])
        for m in _BLOCK.finditer(text)
    ]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


#: What every run of a page gets in its environment (see the module's docstring).
FAST = {"SGLANG_SIM_TIME_SCALE": "0.1"}


def run_shell(script: str, cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    """``bash -e`` in its own process group, which goes at the end (a server it started in
    the background included, also when the script fails halfway)."""
    proc = subprocess.Popen(
        ["bash", "-e", "-c", script],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, **FAST},
        text=True,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"timed out after {timeout:.0f}s:\n{script}\n--- output ---\n{out}")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, "")


@pytest.mark.parametrize("page", PAGES)
def test_every_block_says_how_it_is_checked(page: str) -> None:
    code = [b for b in blocks(page) if b.lang in ("sh", "python")]
    unmarked = [b.body.splitlines()[0] for b in code if not b.marker]
    assert not unmarked, f"{page}: blocks without a <!-- docs-check: ... --> marker: {unmarked}"
    for b in blocks(page):
        if b.marker.startswith("skip"):
            assert b.marker.removeprefix("skip").strip(": "), f"{page}: a skip gives its reason"


def test_no_page_installs_from_a_package_index() -> None:
    """pytest-sglang is installed from the clone (``pip install -e``), never by a name that no
    index serves; commands use the project's venv, whose pytest has the plugin."""
    for page in PAGES:
        for b in blocks(page):
            if b.lang != "sh":
                continue
            for line in b.body.splitlines():
                assert not re.search(r"pip install (?!-e)['\"]?pytest-sglang", line), line
                assert not re.match(r"\s*(\S+=\S+\s+)*pytest\b", line), f"bare pytest: {line}"


@pytest.mark.server  # the pages start the simulator and run pytest sessions
@pytest.mark.parametrize("page", PAGES)
def test_page_runs_as_written(page: str, tmp_path: Path) -> None:
    """The page's commands and code, in order, on the simulator."""
    venv = Path(sys.executable).parent.parent
    (tmp_path / ".venv").symlink_to(venv)
    modules: list[list[str]] = []
    ran = 0
    for b in blocks(page):
        body = b.body.replace("30000", str(free_port()))
        if b.marker.startswith("file "):
            (tmp_path / b.marker.removeprefix("file ").strip()).write_text(body)
        elif b.marker == "pytest":
            modules.append([body])
        elif b.marker.startswith("pytest, continues"):
            modules[-1].append(body)
        elif b.marker.startswith("run"):
            cwd = REPO if b.marker == "run in the repository" else tmp_path
            result = run_shell(body, cwd, timeout=300)
            assert result.returncode == 0, f"{page}:\n{body}\n--- output ---\n{result.stdout}"
            ran += 1
    for i, parts in enumerate(modules):
        module = tmp_path / f"test_{Path(page).stem.lower()}_{i}.py"
        module.write_text("\n".join(parts))
        env = {**os.environ, **FAST, "SGLANG_SIM_STARTUP_SCALE": "0.02"}
        result = subprocess.run(
            [sys.executable, "-m", "pytest", module.name, "-q", "-p", "no:cacheprovider"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert result.returncode == 0, f"{page} module {i}:\n{result.stdout}\n{result.stderr}"
        ran += 1
    assert ran, f"{page}: nothing was run"


def test_api_reference_is_current() -> None:
    """docs/api.md is what docs/api_reference.py makes of today's docstrings."""
    proc = subprocess.run(
        [sys.executable, str(REPO / "docs" / "api_reference.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "(no docstring)" not in (REPO / "docs" / "api.md").read_text()


#: Where scenarios and the docs may import from: the package and the simulator's public part.
_PUBLIC_MODULES = {"pytest_sglang", "pytest_sglang.sim"}
_CODE = re.compile(r"```python\n(.*?)^```", re.S | re.M)


def _imports(code: str) -> list[tuple[str, list[str]]]:
    """(module, names) of every ``pytest_sglang`` import in ``code`` (a block that does not
    parse alone is read line by line)."""
    import ast

    try:
        tree = ast.parse(code)
    except SyntaxError:
        lines = re.findall(r"^\s*from\s+(pytest_sglang[\w.]*)\s+import\s+(.+)$", code, re.M)
        return [(m, [n.strip(" ()") for n in names.split(",")]) for m, names in lines]
    found: list[tuple[str, list[str]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pytest_sglang"):
            found.append((node.module or "", [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            found += [(a.name, []) for a in node.names if a.name.startswith("pytest_sglang")]
    return found


def test_scenarios_and_docs_import_only_the_public_api() -> None:
    """Every ``pytest_sglang`` import in scenarios/, docs/ and the README names a public module
    and a name it exports, so the docs never teach an internal path that may move."""
    import importlib

    sources = [*sorted((REPO / "scenarios").glob("*.py")), *sorted((REPO / "docs").glob("*.md"))]
    sources.append(REPO / "README.md")
    wrong = []
    for path in sources:
        text = path.read_text()
        blocks = [text] if path.suffix == ".py" else _CODE.findall(text)
        for module, names in (imp for block in blocks for imp in _imports(block)):
            where = path.relative_to(REPO)
            if module not in _PUBLIC_MODULES:
                wrong.append(f"{where}: imports {module}")
                continue
            exported = set(importlib.import_module(module).__all__)
            wrong += [
                f"{where}: {n} is not in {module}.__all__" for n in names if n not in exported
            ]
    assert not wrong, "\n".join(wrong)


def _listed_modules(package: Path) -> set[str]:
    import ast

    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""
    return set(re.findall(r":mod:`\.([A-Za-z_][\w]*)`", doc))


@pytest.mark.parametrize(
    "package",
    sorted(
        p.parent.relative_to(REPO).as_posix()
        for p in (REPO / "pytest_sglang").rglob("__init__.py")
        if p.parent.name != "data"
    ),
)
def test_each_package_docstring_lists_what_is_there(package: str) -> None:
    """A newcomer reads a package's ``__init__`` first: it names every module and subpackage
    there, and none that has moved away."""
    root = REPO / package
    present = {p.stem for p in root.glob("*.py") if p.name != "__init__.py"}
    present |= {p.parent.name for p in root.glob("*/__init__.py")}
    listed = _listed_modules(root)
    assert (sorted(present - listed), sorted(listed - present)) == ([], [])
