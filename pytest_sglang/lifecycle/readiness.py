"""Waiting for a server that can really serve, and failing fast when it never will.

Ready means: the journal since the restart shows SGLang's ready line and ``/health`` answers
200 (``/v1/models`` answers long before the server can generate). The wait is driven by the
journal itself: one follower per deployment (``journalctl -f`` on its own SSH channel, ``tail
-F`` of a process's log) hands over each line as the host writes it, so the ready line triggers
the ``/health`` confirmation at once, a fatal line or the unit's exit record triggers the
classification at once, and the same lines feed the live phase progress. Asking the host for the
service's state is only a slow safety net (every ``SAFETY_POLL_S``), for a stream that stalls.

The one loop also fails fast with a reason: a fatal journal line or a dead process ends the wait
with the classified cause and the journal excerpt; a connection that drops mid-stream is
reopened from the last cursor (nothing lost, nothing read twice), and a host that cannot be
reached again is reported as such, never as "not ready in time".
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import requests

from ..errors import ServerStartError, TransportError
from .deployer import Deployer, ServiceState
from .follow import JournalFollower
from .journal import READY_LINE, StartupJournal, find_fatal, phase_of
from .unit import EXIT_MARKER

__all__ = ["ReadyResult", "describe_exit", "last_words", "wait_until_ready"]

#: How often the service's state is asked for while the journal stream is quiet.
SAFETY_POLL_S = 2.0
#: After the ready line, /health is retried this often while it is not yet 200 ...
HEALTH_RETRY_S = 0.05
#: ... for this long; after that only at the safety net's pace.
HEALTH_CONFIRM_S = 10.0
#: How long to keep reading after the process ended, for its last words (a fatal line).
EXIT_GRACE_S = 0.6
#: Bound on reading after a fatal line for the traceback that names the cause (until
#: ``Fatal.complete``, journal.traceback_complete); the process's exit ends it sooner.
FATAL_SETTLE_S = 0.8
#: After an exit record, how long the state is looked at every HEALTH_RETRY_S until the
#: service reads as ended.
EXIT_RECHECK_S = 1.0
#: Reopenings of a journal stream that ended while the service still ran, without a line
#: arriving in between, before the host counts as lost.
MAX_REOPENS = 3


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
    """The cause of a process that ended: its fatal line's, else what the exit itself says (a kill
    by signal 9 with no line naming a cause is the kernel's OOM killer, most often)."""
    fatal = find_fatal(journal.lines)
    if fatal is not None:
        return fatal.reason
    if state.exec_main_code == "exited" and state.exec_main_status == 2:
        return "bad flag"
    if state.exec_main_code == "killed" and state.exec_main_status == 9:
        return "killed"
    return "crashed"


def describe_exit(state: ServiceState) -> str:
    if state.exec_main_code == "killed":
        return f"process killed by signal {state.exec_main_status}"
    if state.exec_main_code:
        return f"process {state.exec_main_code} with status {state.exec_main_status}"
    return f"service {state.active_state}/{state.sub_state}"


def last_words(journal: StartupJournal) -> str:
    """The server's last line (the deployer's own exit record is not the server's)."""
    for line in reversed(journal.lines):
        if not line.startswith(EXIT_MARKER):
            return line.strip()[:300]
    return "(none)"


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
    """Follow the journal until the server is ready; ServerStartError when it cannot be.

    ``cursor`` is the journal position taken before the restart; nothing before it is read.
    """
    http = http or requests.Session()
    journal = StartupJournal([], where=where)
    start = time.monotonic()
    phase = ""
    phases: dict[str, float] = {}
    ready_line_at: float | None = None
    fatal_at: float | None = None
    exited: ServiceState | None = None
    exited_at: float | None = None
    next_state = start + SAFETY_POLL_S
    next_health = start
    exit_record_at: float | None = None
    reopens = 0
    scanned = 0

    def lost(exc: Exception) -> ServerStartError:
        return ServerStartError(
            f"{where}: lost the host while waiting for readiness: {exc}",
            reason="SSH/infrastructure",
            excerpt=journal.excerpt(),
        )

    def settle_fatal(now: float, exited: bool) -> None:
        """A fatal line is followed by its traceback and the process's death: collect those
        briefly (bounded) so the error names the most specific cause, then raise it."""
        fatal = find_fatal(journal.lines) if fatal_at is not None else None
        if fatal is None or fatal_at is None:
            return
        if exited or fatal.complete or now - fatal_at >= FATAL_SETTLE_S:
            raise ServerStartError(
                f"{where}: {fatal.reason} after {now - start:.1f}s: {fatal.line.strip()[:300]}",
                reason=fatal.reason,
                excerpt=journal.excerpt(fatal.index),
            )

    try:
        follower: JournalFollower = deployer.follow(cursor)
    except TransportError as exc:
        raise lost(exc) from exc
    try:
        while True:
            now = time.monotonic()
            # Block until the next line arrives, or until something is due.
            due = [start + timeout]
            if exited is None:  # once it ended, the state is known
                due.append(next_state)
            if ready_line_at is not None:
                due.append(next_health)
            if fatal_at is not None:
                due.append(fatal_at + FATAL_SETTLE_S)
            if exited_at is not None:
                due.append(exited_at + EXIT_GRACE_S)
            pause = max(0.0, min(due) - now)
            if follower.ended:  # ended for good (the service is gone): nothing to wake on
                time.sleep(pause)
                entries = []
            else:
                try:
                    entries = follower.wait(pause)
                except TransportError as exc:  # a polling follower's read
                    raise lost(exc) from exc
            now = time.monotonic()
            elapsed = now - start
            if entries:
                reopens = 0
            journal.extend(entry.message for entry in entries)

            new_phase = phase_of(journal.lines)
            if new_phase != phase:
                phase = new_phase
                phases[phase] = round(elapsed, 3)
                if on_progress is not None:
                    on_progress(phase, elapsed)
            if ready_line_at is None and any(READY_LINE in e.message for e in entries):
                ready_line_at = next_health = now
            if fatal_at is None and find_fatal(journal.lines, scanned) is not None:
                fatal_at = now
            scanned = len(journal.lines)

            settle_fatal(now, exited is not None)
            # The state is asked for on the unit's exit record, when the stream ended (the
            # connection, or the command), and as the safety net; never per line.
            if any(e.message.startswith(EXIT_MARKER) for e in entries):
                exit_record_at = now
            ask = now >= next_state or bool(follower.ended) or exit_record_at == now
            if ask and exited is None:
                # systemd reports the unit gone only once its stop commands have run: after an
                # exit record, look again soon (briefly: the record may be an earlier run's)
                soon = exit_record_at is not None and now - exit_record_at < EXIT_RECHECK_S
                next_state = now + (HEALTH_RETRY_S if soon else SAFETY_POLL_S)
                try:
                    state = deployer.state()
                except TransportError as exc:
                    raise lost(exc) from exc
                if state.exited:
                    exited, exited_at = state, now
                    if follower.ended:  # what the stream could not deliver any more
                        try:
                            late, _ = deployer.read_journal(follower.cursor)
                        except TransportError as exc:
                            raise lost(exc) from exc
                        journal.extend(entry.message for entry in late)
                        if fatal_at is None and find_fatal(journal.lines, scanned) is not None:
                            fatal_at = now
                        scanned = len(journal.lines)
                elif follower.ended:
                    # Still running: the stream (its connection) dropped. Resume after the last
                    # line it delivered; a host that keeps dropping it is lost.
                    reopens += 1
                    if reopens > MAX_REOPENS:
                        raise ServerStartError(
                            f"{where}: the journal stream of the host keeps ending "
                            f"({follower.ended}); lost the host while waiting for readiness",
                            reason="SSH/infrastructure",
                            excerpt=journal.excerpt(),
                        )
                    follower.close()
                    try:
                        follower = deployer.follow(follower.cursor)
                    except TransportError as exc:
                        raise lost(exc) from exc

            settle_fatal(now, exited is not None)
            if exited is not None and exited_at is not None and now - exited_at >= EXIT_GRACE_S:
                reason = _exit_reason(exited, journal)
                raise ServerStartError(
                    f"{where}: {reason} ({describe_exit(exited)}) after {elapsed:.1f}s; "
                    f"last line: {last_words(journal)}",
                    reason=reason,
                    excerpt=journal.excerpt(),
                )

            if ready_line_at is not None and exited is None and now >= next_health:
                if _health(http, base_url) == 200:
                    return ReadyResult(
                        journal=journal,
                        cursor=follower.cursor,
                        ready_s=time.monotonic() - start,
                        phases=phases,
                    )
                retrying = time.monotonic() - ready_line_at < HEALTH_CONFIRM_S
                next_health = time.monotonic() + (HEALTH_RETRY_S if retrying else SAFETY_POLL_S)

            if elapsed > timeout:
                raise ServerStartError(
                    f"{where}: not ready in time ({timeout:.0f}s; stuck at phase '{phase}'); "
                    "raise --sglang-ready-timeout if the host is just slow",
                    reason="not ready in time",
                    excerpt=journal.excerpt(),
                )
    finally:
        follower.close()
