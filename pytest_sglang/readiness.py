"""Waiting for a server that can really serve, and failing fast when it never will.

Ready means all three at once: the service is running, ``/health`` answers 200 (``/v1/models``
answers long before the server can generate) and the journal since the restart shows SGLang's
ready line. The same poll loop watches for the opposite: a fatal journal line or a dead process
ends the wait at once with a classified reason and the journal excerpt, instead of a timeout.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import requests

from .deploy.base import Deployer, ServiceState
from .errors import ServerStartError, TransportError
from .journal import READY_LINE, StartupJournal, find_fatal, phase_of

__all__ = ["ReadyResult", "wait_until_ready"]

POLL_INTERVAL_S = 0.2
#: How long a process may have exited before its last lines are surely in the journal.
EXIT_GRACE_S = 0.6
#: How long to keep reading after a fatal line for the traceback that names the cause.
FATAL_SETTLE_S = 0.8


@dataclass
class ReadyResult:
    """What the wait observed: when the server was ready, each startup phase's start, and the
    journal so far."""

    journal: StartupJournal
    cursor: str
    ready_s: float
    phases: dict[str, float] = field(default_factory=dict)


ProgressCallback = Callable[[str, float], None]


def _health(http: requests.Session, base_url: str) -> int | None:
    try:
        return http.get(base_url + "/health", timeout=2).status_code
    except requests.RequestException:
        return None


def _exit_reason(state: ServiceState, journal: StartupJournal) -> str:
    fatal = find_fatal(journal.lines)
    if fatal is not None:
        return fatal.reason
    if state.exec_main_code == "exited" and state.exec_main_status == 2:
        return "bad flag"
    return "crashed"


def _describe_exit(state: ServiceState) -> str:
    if state.exec_main_code == "killed":
        return f"process killed by signal {state.exec_main_status}"
    if state.exec_main_code:
        return f"process {state.exec_main_code} with status {state.exec_main_status}"
    return f"service {state.active_state}/{state.sub_state}"


def wait_until_ready(
    deployer: Deployer,
    base_url: str,
    cursor: str,
    *,
    where: str,
    timeout: float,
    on_progress: ProgressCallback | None = None,
    http: requests.Session | None = None,
) -> ReadyResult:
    """Poll (every 0.2 s) until the server is ready; ServerStartError when it cannot be.

    ``cursor`` is the journal position taken before the restart; nothing before it is read.
    """
    http = http or requests.Session()
    journal = StartupJournal([], where=where)
    start = time.monotonic()
    phase = ""
    phases: dict[str, float] = {}
    ready_line_s: float | None = None
    exited_at: float | None = None
    fatal_at: float | None = None
    scanned = 0
    while True:
        now = time.monotonic()
        elapsed = now - start
        try:
            entries, cursor = deployer.read_journal(cursor)
            state = deployer.state()
        except TransportError as exc:
            raise ServerStartError(
                f"{where}: lost the host while waiting for readiness: {exc}",
                reason="SSH/infrastructure",
                excerpt=journal.excerpt(),
            ) from exc
        journal.extend(entry.message for entry in entries)

        if fatal_at is None and find_fatal(journal.lines, scanned) is not None:
            fatal_at = now
        scanned = len(journal.lines)
        # A fatal line is followed by its traceback and the process's death: collect those
        # briefly (bounded) so the error names the most specific cause.
        if fatal_at is not None and (state.exited or now - fatal_at >= FATAL_SETTLE_S):
            fatal = find_fatal(journal.lines)
            assert fatal is not None
            raise ServerStartError(
                f"{where}: {fatal.reason} after {elapsed:.1f}s: {fatal.line.strip()[:300]}",
                reason=fatal.reason,
                excerpt=journal.excerpt(fatal.index),
            )
        new_phase = phase_of(journal.lines)
        if new_phase != phase:
            phase = new_phase
            phases[phase] = round(elapsed, 3)
            if on_progress is not None:
                on_progress(phase, elapsed)
        if ready_line_s is None and any(READY_LINE in e.message for e in entries):
            ready_line_s = elapsed

        if state.exited:
            # Let the journal catch up with the dead process's last words, then classify.
            exited_at = exited_at or now
            if now - exited_at >= EXIT_GRACE_S:
                raise ServerStartError(
                    f"{where}: {_exit_reason(state, journal)} ({_describe_exit(state)}) after "
                    f"{elapsed:.1f}s; last line: {(journal.lines or ['(none)'])[-1].strip()[:300]}",
                    reason=_exit_reason(state, journal),
                    excerpt=journal.excerpt(),
                )
        elif state.running and ready_line_s is not None and _health(http, base_url) == 200:
            return ReadyResult(
                journal=journal,
                cursor=cursor,
                ready_s=time.monotonic() - start,
                phases=phases,
            )

        if elapsed > timeout:
            raise ServerStartError(
                f"{where}: not ready in time ({timeout:.0f}s; stuck at phase '{phase}'); "
                "raise --sglang-ready-timeout if the host is just slow",
                reason="not ready in time",
                excerpt=journal.excerpt(),
            )
        time.sleep(max(0.0, POLL_INTERVAL_S - (time.monotonic() - now)))
