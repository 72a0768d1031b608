"""Why a router failed, read from its log as an engineer reads it: the line that says so.

The router (``sglang-router``) writes a Rust log and, when its Python launcher refuses the
command line, argparse's usage; its failures are few and each has a line of its own
(tests/data/router/, captured from the real 0.3.2):

- ``invalid config``: argparse's ``error: argument --X: invalid int value: ...``, a known
  flag's value it cannot read (exit 2), as the server's own parser's refusal reads;
- ``bad flag``: argparse's ``error: unrecognized arguments: ...`` or ``error: argument --X:
  invalid choice ...`` (exit 2, before anything starts);
- ``port in use``: ``Error starting router: Address already in use (os error 98)``;
- ``worker unreachable``: ``Step failed: detect_connection_mode - Both HTTP and gRPC health
  checks failed for URL: ...``, repeated while it retries a server it cannot reach (the
  router itself runs; it never counts that server healthy).

Anything else is ``router failed`` with the log's last lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .fatal.patterns import VALUE_NOT_PARSED

__all__ = ["RouterCause", "router_cause"]

_ANSI = re.compile(r"\x1b\[[0-9;]*m")

#: (reason, pattern of the line that says it), the most specific first.
_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("invalid config", re.compile(r"\S*: " + VALUE_NOT_PARSED + ".*")),
    ("bad flag", re.compile(r"\S*: error: (?:unrecognized arguments|argument |the following).*")),
    ("port in use", re.compile(r"Error starting router: .*Address already in use.*")),
    ("worker unreachable", re.compile(r"(?:Both HTTP and gRPC )?[Hh]ealth checks? failed for .*")),
)
#: A quoted line is cut here (a health-check line carries every transport's error).
_MAX_QUOTE = 300


@dataclass(frozen=True)
class RouterCause:
    """``reason`` (a short category) and ``line`` (the log's own words; "" when none says)."""

    reason: str
    line: str = ""


def router_cause(log: str) -> RouterCause:
    """The cause ``log`` (the router's output) gives for its failure: the first rule that
    matches, quoting its latest such line."""
    lines = [_ANSI.sub("", line).strip() for line in log.splitlines()]
    for reason, pattern in _RULES:
        for line in reversed(lines):
            found = pattern.search(line)
            if found:
                quote = found.group(0).rstrip('"').split('" will_retry=')[0]
                return RouterCause(reason, quote[:_MAX_QUOTE])
    return RouterCause("router failed")
