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

import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import requests

from ..errors import ServerStartError, StartAbandoned, TransportError
from .deployer import Deployer, ServiceState
from .fatal.service_manager import SYSTEMD_STEPS, setting_signalled, setup_step
from .follow import JournalEntry, JournalFollower
from .journal import READY_LINE, StartupJournal, find_fatal, phase_of
from .unit import EXIT_MARKER

__all__ = ["GiveUp", "ReadyResult", "describe_exit", "last_words", "wait_until_ready"]

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


class GiveUp:
    """Told from another thread that a start no longer matters: another part of the same
    topology failed. A wait for readiness ends at its next turn (within ``SAFETY_POLL_S``)
    with :class:`~.errors.StartAbandoned`, and a deploy that has not begun does not begin. The
    first :meth:`give_up` wins: its part is the one the topology's error names."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        #: The part whose failure gave up the others ("" until then).
        self.cause = ""

    def give_up(self, cause: str) -> bool:
        """Give up for ``cause`` (a part name); False when another cause came first."""
        with self._lock:
            if self._event.is_set():
                return False
            self.cause = cause
            self._event.set()
            return True

    @property
    def given_up(self) -> bool:
        return self._event.is_set()

    def check(self, where: str, excerpt: str = "") -> None:
        """StartAbandoned naming the cause once given up; nothing before."""
        if self._event.is_set():
            raise StartAbandoned(
                f"{where}: not waited for: topology part {self.cause} failed first",
                excerpt=excerpt,
            )


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


def _setup_step(state: ServiceState) -> str | None:
    """systemd's step that failed, when the exit status is one of systemd's own."""
    if state.exec_main_code != "exited" or state.result != "exit-code":
        return None
    return SYSTEMD_STEPS.get(state.exec_main_status)


def _exit_reason(state: ServiceState, journal: StartupJournal) -> str:
    """The cause of a process that ended: its fatal line's, else what the exit itself says (a kill
    by signal 9 with no line naming a cause is the kernel's OOM killer, most often; one by signal
    15 a stop from outside the start: an operator, a supervisor)."""
    fatal = find_fatal(journal.lines)
    if fatal is not None:
        return fatal.reason
    if state.exec_main_code == "exited" and state.exec_main_status == 2:
        return "bad flag"
    if state.exec_main_code == "killed" and state.exec_main_status in (9, 15):
        return "killed"  # SIGKILL or a SIGTERM from outside: the journal's reading agrees
    if _signalled_for_a_setting(state) is not None:
        return "invalid config"  # the kernel's signal for the unit's filter or limit
    if _setup_step(state) is not None:
        return "service setup failed"
    return "crashed"


def _signalled_for_a_setting(state: ServiceState) -> str | None:
    """What the unit set that made the kernel end the process by the signal it ended by (a
    system-call filter's SIGSYS, a limit's SIGXCPU or SIGXFSZ), else None."""
    if state.exec_main_code not in ("killed", "dumped"):
        return None
    try:
        name = signal.Signals(state.exec_main_status).name
    except ValueError:
        return None
    return setting_signalled(name.removeprefix("SIG"))


def describe_exit(state: ServiceState) -> str:
    if state.exec_main_code in ("killed", "dumped"):
        setting = _signalled_for_a_setting(state)
        return f"process killed by signal {state.exec_main_status}" + (
            f" ({setting})" if setting else ""
        )
    step = _setup_step(state)
    if step is not None:
        return (
            f"process exited with status {state.exec_main_status}: systemd failed at step {step}"
            " before the server ran"
        )
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
    ready_line: str = READY_LINE,
    give_up: GiveUp | None = None,
) -> ReadyResult:
    """Follow the journal until the server is ready; ServerStartError when it cannot be.

    ``cursor`` is the journal position taken before the restart; nothing before it is read.
    ``ready_line``: what the server logs once it serves (a multi-node follower logs
    :data:`~.journal.FOLLOWER_READY_LINE`, its health server's start), then ``/health``.
    ``give_up``: another thread's word that this start no longer matters (StartAbandoned).
    """
    watch = _Watch(deployer, base_url, where, timeout, on_progress, http or requests.Session())
    watch.ready_line = ready_line
    watch.give_up = give_up
    try:
        follower = deployer.follow(cursor)
    except TransportError as exc:
        raise watch.lost(exc) from exc
    watch.follower = follower
    try:
        return watch.run()
    finally:
        watch.follower.close()


class _Watch:
    """One wait for readiness: what has been seen so far, and what is due next.

    Each turn of :meth:`run` sleeps until a line arrives or something is due (the safety
    poll of the state, a /health retry, the end of a fatal line's settling or of the exit's
    grace), takes what arrived, then decides: ready, failed, or wait on."""

    follower: JournalFollower
    #: The line after which /health is asked (:func:`wait_until_ready`'s ``ready_line``).
    ready_line: str = READY_LINE
    #: Set when another part of the topology failed: the wait ends (StartAbandoned).
    give_up: GiveUp | None = None

    def __init__(
        self,
        deployer: Deployer,
        base_url: str,
        where: str,
        timeout: float,
        on_progress: ProgressCallback | None,
        http: requests.Session,
    ) -> None:
        self.deployer = deployer
        self.base_url = base_url
        self.where = where
        self.timeout = timeout
        self.on_progress = on_progress
        self.http = http
        self.journal = StartupJournal([], where=where)
        self.start = time.monotonic()
        self.phase = ""
        self.phases: dict[str, float] = {}
        self.ready_line_at: float | None = None
        self.fatal_at: float | None = None
        self.exited: ServiceState | None = None
        self.exited_at: float | None = None
        self.next_state = self.start + SAFETY_POLL_S
        self.next_health = self.start
        self.exit_record_at: float | None = None
        self.reopens = 0
        self.scanned = 0

    def lost(self, exc: Exception) -> ServerStartError:
        return ServerStartError(
            f"{self.where}: lost the host while waiting for readiness: {exc}",
            reason="SSH/infrastructure",
            excerpt=self.journal.excerpt(),
        )

    def run(self) -> ReadyResult:
        while True:
            entries = self._next_entries()
            now = time.monotonic()
            self._take(entries, now)
            self._settle_fatal(now)
            # The state is asked for on the unit's exit record, when the stream ended (the
            # connection, or the command), and as the safety net; never per line.
            if any(e.message.startswith(EXIT_MARKER) for e in entries):
                self.exit_record_at = now
            ask = now >= self.next_state or bool(self.follower.ended)
            if (ask or self.exit_record_at == now) and self.exited is None:
                self._ask_state(now)
            self._settle_fatal(now)
            self._fail_if_exited(now)
            ready = self._confirm_health(now)
            if ready is not None:
                return ready
            if self.give_up is not None:  # its own failure above comes first
                self.give_up.check(self.where, self.journal.excerpt())
            if now - self.start > self.timeout:
                raise ServerStartError(
                    f"{self.where}: not ready in time ({self.timeout:.0f}s; stuck at phase "
                    f"'{self.phase}'); raise --sglang-ready-timeout if the host is just slow",
                    reason="not ready in time",
                    excerpt=self.journal.excerpt(),
                )

    def _pause(self) -> float:
        """Seconds until the next thing is due (a line arriving wakes it sooner)."""
        due = [self.start + self.timeout]
        if self.exited is None:  # once it ended, the state is known
            due.append(self.next_state)
        if self.ready_line_at is not None:
            due.append(self.next_health)
        if self.fatal_at is not None:
            due.append(self.fatal_at + FATAL_SETTLE_S)
        if self.exited_at is not None:
            due.append(self.exited_at + EXIT_GRACE_S)
        return max(0.0, min(due) - time.monotonic())

    def _next_entries(self) -> list[JournalEntry]:
        pause = self._pause()
        if self.follower.ended:  # ended for good (the service is gone): nothing to wake on
            time.sleep(pause)
            return []
        try:
            return self.follower.wait(pause)
        except TransportError as exc:  # a polling follower's read
            raise self.lost(exc) from exc

    def _take(self, entries: list[JournalEntry], now: float) -> None:
        """Add what arrived: its phase, the ready line, a fatal line."""
        if entries:
            self.reopens = 0
        self.journal.extend(entry.message for entry in entries)
        new_phase = phase_of(self.journal.lines)
        if new_phase != self.phase:
            elapsed = now - self.start
            self.phase = new_phase
            self.phases[new_phase] = round(elapsed, 3)
            if self.on_progress is not None:
                self.on_progress(new_phase, elapsed)
        if self.ready_line_at is None and any(self.ready_line in e.message for e in entries):
            self.ready_line_at = self.next_health = now
        self._scan_for_fatal(now)

    def _scan_for_fatal(self, now: float) -> None:
        if self.fatal_at is None and find_fatal(self.journal.lines, self.scanned) is not None:
            self.fatal_at = now
        self.scanned = len(self.journal.lines)

    def _settle_fatal(self, now: float) -> None:
        """A fatal line is followed by its traceback and the process's death: collect those
        briefly (bounded) so the error names the most specific cause, then raise it."""
        fatal = find_fatal(self.journal.lines) if self.fatal_at is not None else None
        if fatal is None or self.fatal_at is None:
            return
        if self.exited is not None or fatal.complete or now - self.fatal_at >= FATAL_SETTLE_S:
            raise ServerStartError(
                f"{self.where}: {fatal.reason} after {now - self.start:.1f}s: "
                f"{(fatal.message or fatal.line.strip())[:400]}",
                reason=fatal.reason,
                excerpt=self.journal.excerpt(fatal.index),
                step=setup_step(fatal.line) if fatal.reason == "service setup failed" else None,
            )

    def _ask_state(self, now: float) -> None:
        # systemd reports the unit gone only once its stop commands have run: after an exit
        # record, look again soon (briefly: the record may be an earlier run's)
        soon = self.exit_record_at is not None and now - self.exit_record_at < EXIT_RECHECK_S
        self.next_state = now + (HEALTH_RETRY_S if soon else SAFETY_POLL_S)
        try:
            state = self.deployer.state()
        except TransportError as exc:
            raise self.lost(exc) from exc
        if state.exited:
            self.exited, self.exited_at = state, now
            if self.follower.ended:  # what the stream could not deliver any more
                try:
                    late, _ = self.deployer.read_journal(self.follower.cursor)
                except TransportError as exc:
                    raise self.lost(exc) from exc
                self.journal.extend(entry.message for entry in late)
                self._scan_for_fatal(now)
        elif self.follower.ended:
            self._reopen()

    def _reopen(self) -> None:
        """Still running: the stream (its connection) dropped. Resume after the last line it
        delivered; a host that keeps dropping it is lost."""
        self.reopens += 1
        if self.reopens > MAX_REOPENS:
            raise ServerStartError(
                f"{self.where}: the journal stream of the host keeps ending "
                f"({self.follower.ended}); lost the host while waiting for readiness",
                reason="SSH/infrastructure",
                excerpt=self.journal.excerpt(),
            )
        self.follower.close()
        try:
            self.follower = self.deployer.follow(self.follower.cursor)
        except TransportError as exc:
            raise self.lost(exc) from exc

    def _fail_if_exited(self, now: float) -> None:
        if self.exited is None or self.exited_at is None or now - self.exited_at < EXIT_GRACE_S:
            return
        reason = _exit_reason(self.exited, self.journal)
        raise ServerStartError(
            f"{self.where}: {reason} ({describe_exit(self.exited)}) after "
            f"{now - self.start:.1f}s; last line: {last_words(self.journal)}",
            reason=reason,
            excerpt=self.journal.excerpt(),
            step=_setup_step(self.exited),
        )

    def _confirm_health(self, now: float) -> ReadyResult | None:
        """After the ready line, /health must answer 200 (retried briefly, then at the safety
        net's pace)."""
        if self.ready_line_at is None or self.exited is not None or now < self.next_health:
            return None
        if _health(self.http, self.base_url) == 200:
            return ReadyResult(
                journal=self.journal,
                cursor=self.follower.cursor,
                ready_s=time.monotonic() - self.start,
                phases=self.phases,
            )
        retrying = time.monotonic() - self.ready_line_at < HEALTH_CONFIRM_S
        self.next_health = time.monotonic() + (HEALTH_RETRY_S if retrying else SAFETY_POLL_S)
        return None
