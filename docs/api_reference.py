"""Generate docs/api.md, the API reference, from the public names' docstrings.

Run: ``python docs/api_reference.py > docs/api.md`` (``--check`` exits 1 when the page is stale;
tests/test_docs.py runs it). The public API is ``pytest_sglang.__all__`` plus the simulator's
performance model in ``pytest_sglang.sim.__all__``: scenarios and the docs import nothing else.

Why generated and checked, not written by hand: a reference written beside the code drifts from
it; this one is the docstrings and signatures themselves, so it cannot.
"""

from __future__ import annotations

import argparse
import inspect
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pytest_sglang  # noqa: E402
import pytest_sglang.sim  # noqa: E402

PAGE = ROOT / "docs" / "api.md"

#: Sections of the page, in the order data flows; a public name in no section fails the check.
SECTIONS: dict[str, list[str]] = {
    "Configurations": [
        "ServerConfig",
        "FileSpec",
        "production",
        "sweep",
        "load_configs",
        "parse_server_args",
        "ExpectedJournal",
        "ADJUST_DRAFT_TOKENS_WARNING",
    ],
    "Topologies": ["Topology", "Router"],
    "A deployed server": ["Deployment", "TopologyDeployment"],
    "Benchmarks": [
        "SglangBench",
        "Workload",
        "RandomPrompts",
        "JsonlPrompts",
        "ShareGPTPrompts",
        "SharedPrefixPrompts",
        "ConversationPrompts",
        "MooncakeTrace",
        "LongContextPrompts",
        "Slo",
        "BenchResult",
    ],
    "Quality": ["SglangQuality", "Task", "Item", "AccuracyResult", "EquivalenceResult"],
    "A session's results": [
        "bench_results",
        "quality_results",
        "tuning_verdicts",
        "best_per_workload",
    ],
    "Errors": [
        "SglangError",
        "ConfigError",
        "InventoryError",
        "TransportError",
        "ConnectError",
        "HostKeyError",
        "CommandTimeout",
        "PreflightError",
        "ConfigRefused",
        "DeployError",
        "ServerStartError",
        "StartAbandoned",
        "JournalError",
        "RestoreError",
        "BaselineError",
    ],
}


def _signature(obj: Any) -> str:
    try:
        return str(inspect.signature(obj))
    except (TypeError, ValueError):
        return "(...)"


def _doc(obj: Any) -> str:
    return inspect.getdoc(obj) or "(no docstring)"


def _first_paragraph(obj: Any) -> str:
    return _doc(obj).split("\n\n", 1)[0].replace("\n", " ")


def _members(cls: type) -> Iterator[str]:
    """The class's own public methods and properties, a line each."""
    for name, member in vars(cls).items():
        if name.startswith("_"):
            continue
        if isinstance(member, property):
            yield f"- `{name}` (property): {_first_paragraph(member)}"
        elif isinstance(member, (staticmethod, classmethod)):
            func = member.__func__
            yield f"- `{name}{_signature(getattr(cls, name))}`: {_first_paragraph(func)}"
        elif inspect.isfunction(member):
            yield f"- `{name}{_signature(member)}`: {_first_paragraph(member)}"


def _fields(cls: type) -> Iterator[str]:
    """A pydantic model's fields with their types and defaults (signatures would be one line)."""
    fields: dict[str, Any] = getattr(cls, "model_fields", {})
    for name, info in fields.items():
        kind = _type_name(info.annotation)
        if info.is_required():
            default = "required"
        elif info.default_factory is not None:
            default = "default: empty"
        else:
            default = f"default `{info.default!r}`"
        yield f"- `{name}`: `{kind}`, {default}"


def _type_name(annotation: Any) -> str:
    """``int | None``, ``tuple[str, ...]``: what a reader writes, not ``typing.Optional``."""
    if isinstance(annotation, type) and not getattr(annotation, "__args__", None):
        return annotation.__name__
    return str(annotation).replace("typing.", "").replace("pathlib.", "")


def entry(name: str, obj: Any) -> list[str]:
    """One public name's section of the page."""
    if inspect.isclass(obj) and issubclass(obj, BaseException):
        bases = ", ".join(b.__name__ for b in obj.__bases__)
        return [f"### `{name}({bases})`", "", _doc(obj), ""]
    if inspect.isclass(obj):
        out = [f"### class `{name}`", "", _doc(obj), ""]
        fields = list(_fields(obj))
        if fields:
            out += ["Fields:", "", *fields, ""]
        members = list(_members(obj))
        if members:
            out += ["Members:", "", *members, ""]
        return out
    if callable(obj):
        return [f"### `{name}{_signature(obj)}`", "", _doc(obj), ""]
    return [f"### `{name}`", "", f"A constant: `{obj!r}`.", ""]


def render() -> str:
    """The whole page."""
    public = {name: getattr(pytest_sglang, name) for name in pytest_sglang.__all__}
    public.pop("__version__")
    listed = {name for names in SECTIONS.values() for name in names}
    missing = sorted(set(public) - listed)
    if missing:
        raise SystemExit(f"docs/api_reference.py: public names in no section: {missing}")
    lines = [
        "# API reference",
        "",
        "<!-- generated by docs/api_reference.py from the docstrings; do not edit by hand -->",
        "",
        "Scenarios and the docs import only these names: `from pytest_sglang import ...`, and",
        "the simulator's performance model from `pytest_sglang.sim`. Everything else in the",
        "package is internal and may move between releases.",
        "",
    ]
    for section, names in SECTIONS.items():
        lines += [f"## {section}", ""]
        for name in names:
            lines += entry(name, public[name])
    lines += ["## The simulator (`pytest_sglang.sim`)", ""]
    for name in pytest_sglang.sim.__all__:
        lines += entry(name, getattr(pytest_sglang.sim, name))
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/api.md is stale")
    args = parser.parse_args(argv)
    page = render()
    if args.check:
        if not PAGE.exists() or PAGE.read_text() != page:
            print("docs/api.md is stale: run python docs/api_reference.py > docs/api.md")
            return 1
        return 0
    sys.stdout.write(page)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
