"""Render what a deployment would change as unified diffs, for ``--sglang-dry-run``."""

from __future__ import annotations

import difflib

__all__ = ["render_diff"]


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
