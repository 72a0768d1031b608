"""Plain-text tables and live status lines for the terminal: what a person reads after a run.

Each plugin module fills a :class:`TextTable` for its own concern (deployments, benchmarks,
baseline comparisons) and writes it with :func:`write_table`; columns size themselves to their
widest cell, so test ids are never cut, and a column left empty in every row is dropped (the
deployments' ``reason`` when all are ready). :class:`LiveLine` is one status line that rewrites
itself on a terminal and falls back to plain, spaced-out lines in CI logs.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "Column",
    "LiveLine",
    "TextTable",
    "display_test_ids",
    "write_lines",
    "write_table",
]

#: Between two columns.
GAP = "  "


@dataclass(frozen=True)
class Column:
    """One column: its header, and ``>`` for numbers (right-aligned) or ``<`` for text."""

    header: str
    align: Literal["<", ">"] = "<"
    #: Dropped from the table when every row leaves it empty.
    optional: bool = False


@dataclass
class TextTable:
    """Rows of text cells under a header; ``lines()`` renders them with fitted widths."""

    columns: Sequence[Column]
    rows: list[tuple[list[str], dict[str, bool]]] = field(default_factory=list)

    def add(self, *cells: str, **markup: bool) -> None:
        """A row; ``markup`` (``red=True``, ``green=True``) colours it on a terminal."""
        if len(cells) != len(self.columns):
            raise ValueError(f"a row of {len(self.columns)} cells, got {len(cells)}")
        self.rows.append((list(cells), markup))

    def lines(self) -> list[tuple[str, dict[str, bool]]]:
        """The header, then each row with its markup; trailing spaces stripped."""
        keep = [
            i
            for i, col in enumerate(self.columns)
            if not col.optional or any(cells[i] for cells, _ in self.rows)
        ]
        widths = {
            i: max([len(self.columns[i].header), *(len(cells[i]) for cells, _ in self.rows)])
            for i in keep
        }

        def render(cells: Sequence[str]) -> str:
            return GAP.join(f"{cells[i]:{self.columns[i].align}{widths[i]}}" for i in keep).rstrip()

        header = render([c.header for c in self.columns])
        return [(header, {"bold": True})] + [(render(cells), m) for cells, m in self.rows]


def write_table(terminalreporter: Any, title: str, table: TextTable) -> None:
    """A titled section with the table (nothing when it has no rows)."""
    if not table.rows:
        return
    terminalreporter.section(title)
    for line, markup in table.lines():
        write_lines(terminalreporter, line, **markup)


def write_lines(terminalreporter: Any, *lines: str, **markup: bool) -> None:
    """Whole lines in the summary: ``write_line`` would first end the line of test results it
    thinks is still open (a blank line under the title); these end it themselves."""
    for line in lines:
        terminalreporter.line(line, **markup)
    terminalreporter.currentfspath = None


def display_test_ids(nodeids: Iterable[str]) -> dict[str, str]:
    """Node id -> what a table shows: the test's name with its parameters (``test_decode[eagle-
    s1-k1]``), or the whole node id where two files have a test of that name. The group suffix
    that ``--dist loadgroup`` adds (``@sglang-<digest>``) is left out."""
    ids = list(dict.fromkeys(nodeids))
    plain = {nodeid: nodeid.split("@sglang-", 1)[0] for nodeid in ids}
    short = {nodeid: full.rsplit("::", 1)[-1] for nodeid, full in plain.items()}
    seen: dict[str, set[str]] = {}
    for nodeid in ids:
        seen.setdefault(short[nodeid], set()).add(plain[nodeid])
    return {n: short[n] if len(seen[short[n]]) == 1 else plain[n] for n in ids}


class LiveLine:
    """A status line for something that takes a while (a deployment starting, a benchmark).

    On a terminal it rewrites itself in place and ``done`` leaves the last text as a line; in a
    log (not a terminal) each update is a plain line, at most one per ``every_s`` unless it says
    something new (``force``), so CI logs show progress without flooding. Output capture is
    lifted while writing, as pytest's live logging does, or a running test would swallow it.
    """

    def __init__(self, config: Any, *, every_s: float = 30.0) -> None:
        self.config = config
        self.every_s = every_s
        self._shown = False
        self._last = float("-inf")

    @property
    def _reporter(self) -> Any:
        return self.config.pluginmanager.get_plugin("terminalreporter")

    @property
    def tty(self) -> bool:
        reporter = self._reporter
        return bool(reporter is not None and reporter.isatty)

    @contextlib.contextmanager
    def _uncaptured(self) -> Iterator[Any]:
        capman = self.config.pluginmanager.get_plugin("capturemanager")
        with capman.global_and_fixture_disabled() if capman else contextlib.nullcontext():
            yield self._reporter

    def update(self, text: str, *, force: bool = False) -> None:
        reporter = self._reporter
        if reporter is None:
            return
        now = time.monotonic()
        with self._uncaptured():
            if self.tty:
                if not self._shown:
                    reporter.ensure_newline()
                reporter.rewrite(text, erase=True)
                self._shown = True
            elif force or now - self._last >= self.every_s:
                reporter.write_line(text)
                self._last = now

    @property
    def shown(self) -> bool:
        """True while a line is up on the terminal (it ends with ``done`` or ``clear``)."""
        return self._shown

    def clear(self) -> None:
        """Take the line away (on a terminal); nothing was kept to clear in a log."""
        reporter = self._reporter
        if reporter is not None and self._shown:
            with self._uncaptured():
                reporter.rewrite("", erase=True)
        self._shown = False
        self._last = float("-inf")

    def done(self, text: str | None = None) -> None:
        """End the line: on a terminal the last text stays (or ``text`` replaces it)."""
        reporter = self._reporter
        if reporter is None:
            return
        with self._uncaptured():
            if self.tty and self._shown:
                if text is not None:
                    reporter.rewrite(text, erase=True)
                reporter.write_line("")
            elif text is not None:
                reporter.write_line(text)
        self._shown = False
        self._last = float("-inf")
