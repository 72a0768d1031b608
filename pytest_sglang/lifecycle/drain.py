"""Let a serving SGLang finish its in-flight requests before the deployer stops it.

Why: the host may be a production server; stopping it mid-request fails real users. Before a
stop, the deployer reads how many requests are running or queued (``/metrics``:
``sglang:num_running_reqs`` + ``sglang:num_queue_reqs``, the gauges SGLang exports with
``--enable-metrics``) and waits, bounded by ``--sglang-drain-timeout``, until none are left.
A server that does not export them (or does not answer) cannot be drained: the deployer says so
and goes on, rather than waiting for a number it can never read. ``--sglang-force`` skips all of it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import requests

__all__ = ["drain", "in_flight", "serving_port"]

_GAUGE = re.compile(r"^sglang:(num_running_reqs|num_queue_reqs)(?:\{[^}]*\})?\s+([0-9.eE+-]+)\s*$")
_SGLANG_DEFAULT_PORT = 30000


def in_flight(base_url: str, *, timeout: float = 3.0) -> int | None:
    """Requests running or waiting on the server, or None when it cannot tell."""
    try:
        response = requests.get(base_url + "/metrics", timeout=timeout)
    except requests.RequestException:
        return None
    if response.status_code != 200:
        return None
    total = 0.0
    seen = False
    for line in response.text.splitlines():
        match = _GAUGE.match(line.strip())
        if match:
            seen = True
            total += float(match.group(2))
    return round(total) if seen else None


def serving_port(argv: list[str]) -> tuple[str, int]:
    """(host, port) a ``launch_server`` argv serves on (SGLang's defaults when absent)."""
    host, port = "127.0.0.1", _SGLANG_DEFAULT_PORT
    for i, word in enumerate(argv):
        flag, eq, value = word.partition("=")
        if not eq:
            value = argv[i + 1] if i + 1 < len(argv) else ""
        if flag == "--port" and value.isdigit():
            port = int(value)
        elif flag == "--host" and value:
            host = value
    return host, port


def drain(
    read: Callable[[], int | None],
    *,
    what: str,
    timeout: float,
    say: Callable[[str], None],
    poll_s: float = 0.5,
) -> bool:
    """Wait until ``read()`` reports 0 in-flight requests, at most ``timeout`` s.

    Returns True when drained (or idle), False when it gave up or could not tell.
    """
    count = read()
    if count is None:
        say(f"[sglang] {what}: in-flight requests unknown (no /metrics); stopping without drain")
        return False
    if count == 0:
        return True
    say(f"[sglang] {what}: {count} request(s) in flight; draining for up to {timeout:.0f}s")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(poll_s)
        count = read()
        if count is None:  # /metrics stopped answering: that is not "drained"
            say(f"[sglang] {what}: in-flight requests unknown now; stopping without drain")
            return False
        if count == 0:
            say(f"[sglang] {what}: drained")
            return True
    say(f"[sglang] {what}: still {count} request(s) after {timeout:.0f}s; stopping anyway")
    return False
