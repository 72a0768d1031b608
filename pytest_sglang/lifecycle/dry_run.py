"""Render what a deployment would change as unified diffs, for ``--sglang-dry-run``."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from ..cmdline import flag_groups

__all__ = ["render_diff", "render_flag_diff"]


def render_diff(path: str, old: str | None, new: str) -> str:
    """A unified diff of ``path`` from ``old`` (None: the file does not exist) to ``new``."""
    if old == new:
        return f"unchanged: {path}"
    before = [] if old is None else old.splitlines(keepends=True)
    after = new.splitlines(keepends=True)
    diff = difflib.unified_diff(
        before,
        after,
        fromfile="/dev/null" if old is None else f"a{path}",
        tofile=f"b{path}",
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in diff).rstrip("\n")


def _flag_groups(argv: Sequence[str]) -> list[str]:
    """``--flag value ...`` groups of an argv, one string each (words before the first flag,
    the launcher, are left out)."""
    return [" ".join(group.words) for group in flag_groups(argv)]


def render_flag_diff(old_argv: Sequence[str], new_argv: Sequence[str]) -> str:
    """The flags that differ between two command lines: ``- --flag old`` / ``+ --flag new``
    lines, in the new command line's order; empty when they are the same."""
    old, new = _flag_groups(old_argv), _flag_groups(new_argv)
    lines = [f"  - {group}" for group in old if group not in new]
    lines += [f"  + {group}" for group in new if group not in old]
    return "\n".join(lines)
