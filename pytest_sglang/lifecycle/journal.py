"""The startup journal: what the server logged after this restart, and what it proves.

Only entries after the cursor taken just before the restart are ever read, never a time window,
so lines from an earlier start cannot satisfy (or fail) a check. The ``server_args`` line is
parsed, not grepped, and compared value by value with what SGLang's resolution rules say the
requested config must become.

Why a failed start failed is the failure classifier's job (:mod:`.fatal`); the names the rest
of the package and its tests know it by (:func:`find_fatal`, :class:`Fatal`, ...) are
re-exported here.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

from ..errors import JournalError
from ..resolution import ExpectedJournal
from ..server_args import parse_server_args
from .fatal import FATAL_PATTERNS, Fatal, find_fatal, traceback_complete
from .fatal.patterns import READY_LINE

__all__ = [
    "FATAL_PATTERNS",
    "FOLLOWER_READY_LINE",
    "READY_LINE",
    "Fatal",
    "StartupJournal",
    "find_fatal",
    "phase_of",
    "same_value",
    "traceback_complete",
]

#: What a multi-node server's other nodes log once they serve: only a health server
#: (0.5.23 ``launch_dummy_health_check_server``); the first node serves the API.
FOLLOWER_READY_LINE = "Dummy health check server started"

_PHASES: tuple[tuple[str, str], ...] = (
    ("fired up and ready to roll", "ready"),
    ("Uvicorn running on", "warmup"),
    ("max_total_num_tokens=", "starting HTTP server"),
    ("uda graph begin", "CUDA graphs"),
    ("CUDA graph begin", "CUDA graphs"),
    ("KV Cache is allocated", "KV cache"),
    ("Load weight begin", "loading weights"),
    ("Init parallel begin", "initialising"),
    ("Init torch distributed", "initialising"),
    ("server_args=", "initialising"),
)

_SCHEDULER_LINE = re.compile(r"max_total_num_tokens=(\d+).*?max_running_requests=(\d+)")


def phase_of(lines: Iterable[str]) -> str:
    """The furthest startup phase the lines reach (loading weights, KV cache, CUDA graphs...)."""
    best = "starting"
    rank = {name: i for i, (_, name) in enumerate(reversed(_PHASES))}
    for line in lines:
        for needle, name in _PHASES:
            if needle in line and rank[name] > rank.get(best, -1):
                best = name
                break
    return best


def same_value(expected: Any, logged: Any) -> bool:
    """Whether a logged value is the expected one (floats within rounding)."""
    if isinstance(expected, float) or isinstance(logged, float):
        try:
            return math.isclose(float(expected), float(logged), rel_tol=1e-9, abs_tol=1e-12)
        except (TypeError, ValueError):
            return False
    return bool(expected == logged)


class StartupJournal:
    """The server's output since the restart, with checks a test can make on it."""

    def __init__(self, lines: Sequence[str], *, where: str = "") -> None:
        self.lines: list[str] = list(lines)
        self.where = where

    def __repr__(self) -> str:
        return f"StartupJournal({len(self.lines)} lines{', ' + self.where if self.where else ''})"

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def extend(self, lines: Iterable[str]) -> None:
        self.lines.extend(lines)

    @property
    def ready(self) -> bool:
        return any(READY_LINE in line for line in self.lines)

    def server_args(self) -> dict[str, Any]:
        """The parsed ``server_args`` line of this start; JournalError when it is missing."""
        for line in reversed(self.lines):
            if "server_args=" in line:
                try:
                    return parse_server_args(line)
                except ValueError as exc:
                    raise JournalError(f"{self._at()}unreadable server_args line: {exc}") from None
        raise JournalError(f"{self._at()}no server_args line since the restart")

    def scheduler_limits(self) -> dict[str, int]:
        """``max_total_num_tokens`` and the *effective* ``max_running_requests`` (rank 0)."""
        for line in reversed(self.lines):
            match = _SCHEDULER_LINE.search(line)
            if match:
                return {
                    "max_total_num_tokens": int(match.group(1)),
                    "max_running_requests": int(match.group(2)),
                }
        return {}

    def excerpt(self, around: int | None = None, *, lines: int = 12) -> str:
        """A short excerpt: the last ``lines`` lines, or the ones around index ``around``."""
        if around is None:
            chosen = self.lines[-lines:]
        else:
            chosen = self.lines[max(0, around - lines // 2) : around + lines // 2]
        return "\n".join(chosen)

    def _at(self) -> str:
        return f"{self.where}: " if self.where else ""

    # -- assertions ---------------------------------------------------------------------------

    def expect(self, pattern: str | re.Pattern[str]) -> str:
        """The first line matching ``pattern``; JournalError when none does."""
        __tracebackhide__ = True
        regex = re.compile(pattern) if isinstance(pattern, str) else pattern
        for line in self.lines:
            if regex.search(line):
                return line
        raise JournalError(
            f"{self._at()}no journal line since the restart matches {regex.pattern!r}"
        )

    def forbid(self, pattern: str | re.Pattern[str]) -> None:
        """JournalError naming the first line that matches ``pattern``."""
        __tracebackhide__ = True
        regex = re.compile(pattern) if isinstance(pattern, str) else pattern
        for line in self.lines:
            if regex.search(line):
                raise JournalError(
                    f"{self._at()}forbidden pattern {regex.pattern!r} in journal: {line.strip()}"
                )

    def verify(self, expected: ExpectedJournal) -> dict[str, Any]:
        """Check the startup against ``expected``; returns the parsed ``server_args``.

        Fails with a requested-vs-logged diff when a value differs, when a resolution warning
        SGLang must print is missing, when the scheduler's effective limit exceeds the requested
        one, or when a fatal line is present.
        """
        __tracebackhide__ = True
        fatal = find_fatal(self.lines)
        if fatal is not None:
            raise JournalError(f"{self._at()}{fatal.summary}")
        logged = self.server_args()
        diffs = []
        for key, want in expected.server_args.items():
            if key not in logged:
                diffs.append(f"{key} requested {want!r}, not logged")
            elif not same_value(want, logged[key]):
                diffs.append(f"{key} requested {want!r}, logged {logged[key]!r}")
        if diffs:
            raise JournalError(
                f"{self._at()}{len(diffs)} value(s) in server_args differ from the request "
                f"(after SGLang's resolution rules): " + "; ".join(diffs)
            )
        args_index = max(i for i, line in enumerate(self.lines) if "server_args=" in line)
        before = self.lines[:args_index]
        for warning in expected.warnings:
            if not any(warning in line for line in before):
                raise JournalError(f"{self._at()}expected warning missing: {warning!r}")
        limits = self.scheduler_limits()
        bound = expected.max_running_requests
        if bound is not None and limits and limits["max_running_requests"] > bound:
            raise JournalError(
                f"{self._at()}scheduler runs max_running_requests="
                f"{limits['max_running_requests']}, above the requested {bound}"
            )
        return logged
