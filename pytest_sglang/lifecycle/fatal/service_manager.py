"""The service manager's own lines in a unit's journal: systemd saying why the server never ran,
or how its process was ended.

A systemd deployment's journal (``journalctl -u <service>``) holds systemd's lines about the
unit beside the server's. Where systemd cannot set the process up (the program hidden or not
executable for the unit's user, its group or working directory missing) the server never
writes a line, and systemd's ``<unit>: Failed at step EXEC spawning <program>: Permission
denied`` is the whole record; its ``Main process exited, code=exited, status=203/EXEC`` says
the same where the step's own line was not kept. A unit's start can fail around the server too
(a missing ``EnvironmentFile=``, an ``ExecStartPre=`` check that fails, a ``Condition...=``
unmet): systemd says so in its own line, and ``systemctl start`` only points at the journal.
Where the kernel ends the process for a limit
or a filter the unit set (``SystemCallFilter=``: SIGSYS; ``LimitCPU=``: SIGXCPU;
``LimitFSIZE=``: SIGXFSZ), the process writes nothing either, and systemd's ``Main process
exited, code=killed, status=31/SYS`` is what an engineer reads it by.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

#: systemd failing to set up the unit's process (systemd.exec(5), "Process Exit Codes").
_FAILED_AT_STEP = re.compile(r"\.service: Failed at step (?P<step>[A-Z_]+) spawning (?P<rest>.*)$")
#: How the unit's main process ended, in the service manager's words (systemd names a signal
#: without its ``SIG``); the simulator's replay ends a journal by it too.
MAIN_PROCESS_ENDED = re.compile(
    r"\.service: Main process exited, code=(?P<how>exited|killed|dumped),"
    r" status=(?P<status>\d+)/(?P<name>\w+)"
)
#: systemd refusing or failing the unit's start around the server's own process, in its words:
#: an ``EnvironmentFile=`` it cannot read, a command it runs first (``ExecStartPre=``,
#: ``ExecCondition=``) or after (``ExecStartPost=``) failing, a ``Condition...=`` or
#: ``Assert...=`` unmet. Each, and what it says of the unit.
_START_REFUSED: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"\.service: Failed to load environment files: (?P<why>.*)$"),
        "the unit's EnvironmentFile= cannot be read: {why}",
    ),
    (
        re.compile(r"\.service: Control process exited, code=\w+, status=(?P<status>\d+/\w+)"),
        "a command the unit runs around the server (ExecStartPre=, ExecCondition=,"
        " ExecStartPost=) failed, status {status}",
    ),
    (
        re.compile(r" was skipped because of an unmet condition check \((?P<what>[^)]*)\)"),
        "systemd skipped the start: the unit's {what} is not met",
    ),
    (
        re.compile(r"\.service: Starting requested but asserts failed"),
        "systemd refused the start: an Assert...= setting of the unit is not met",
    ),
)
#: Signals the kernel sends for what a unit set, and which setting sends each.
_SETTING_SIGNALS = {
    "SYS": "a system call the unit's SystemCallFilter= denies (seccomp)",
    "XCPU": "the CPU time the unit's LimitCPU= allows, used up",
    "XFSZ": "a file written past the size the unit's LimitFSIZE= allows",
}
#: systemd's own exit statuses (systemd.exec(5), "Process Exit Codes"): the service manager failed
#: to set up the process before the server's program ran, so the cause is on the host (a missing
#: binary, a working directory, a user, a cgroup), never in the server's configuration.
SYSTEMD_STEPS = {
    200: "CHDIR", 201: "NICE", 202: "FDS", 203: "EXEC", 204: "MEMORY", 205: "LIMITS",
    206: "OOM_ADJUST", 207: "SIGNAL_MASK", 208: "STDIN", 209: "STDOUT", 210: "CHROOT",
    211: "IOPRIO", 212: "TIMERSLACK", 213: "SECUREBITS", 214: "SETSCHEDULER", 215: "CPUAFFINITY",
    216: "GROUP", 217: "USER", 218: "CAPABILITIES", 219: "CGROUP", 220: "SETSID", 221: "CONFIRM",
    222: "STDERR", 224: "PAM", 225: "NETWORK", 226: "NAMESPACE", 227: "NO_NEW_PRIVILEGES",
    228: "SECCOMP", 229: "SELINUX_CONTEXT", 230: "PERSONALITY", 231: "APPARMOR_PROFILE",
    232: "ADDRESS_FAMILIES", 233: "RUNTIME_DIRECTORY", 235: "CHOWN", 236: "SMACK_PROCESS_LABEL",
    237: "KEYRING", 238: "STATE_DIRECTORY", 239: "CACHE_DIRECTORY", 240: "LOGS_DIRECTORY",
    241: "CONFIGURATION_DIRECTORY", 242: "NUMA_POLICY", 243: "CREDENTIALS", 245: "BPF",
}  # fmt: skip


def service_setup_failed(texts: Sequence[str], start: int) -> tuple[int, str] | None:
    """(line, message) where systemd says it could not set the unit's process up: its ``Failed
    at step`` line, else its line refusing or failing the start around the server
    (:data:`_START_REFUSED`), else its ``Main process exited`` with one of its own statuses; None
    otherwise. The server never ran (or was stopped for it), so nothing else in the record is
    its cause."""
    for index in range(start, len(texts)):
        step = _FAILED_AT_STEP.search(texts[index])
        if step is not None:
            return index, (
                f"systemd failed at step {step['step']} before the server ran, spawning"
                f" {step['rest']}"
            )
    for index in range(start, len(texts)):
        for pattern, said in _START_REFUSED:
            refused = pattern.search(texts[index])
            status = (refused.groupdict().get("status") or "0/").split("/")[0] if refused else "0"
            if refused is not None and int(status) not in SYSTEMD_STEPS:  # a step: read below
                return index, said.format(**refused.groupdict())
    for index in range(start, len(texts)):
        exited = _setup_exit(texts[index])
        if exited is not None:
            name, status = exited
            return index, f"systemd failed at step {name} before the server ran (status {status})"
    return None


def setup_step(line: str) -> str | None:
    """The step systemd names on a line where it failed to set the process up (``CHDIR``,
    ``EXEC``, ``CGROUP``), else None: what a deployment retries by (a ``CGROUP`` step passes)."""
    step = _FAILED_AT_STEP.search(line)
    if step is not None:
        return step["step"]
    exited = _setup_exit(line)
    return None if exited is None else exited[0]


def _setup_exit(line: str) -> tuple[str, int] | None:
    """(step, status) of a ``Main process exited, code=exited`` line whose status is systemd's
    own (:data:`SYSTEMD_STEPS`), else None."""
    ended = MAIN_PROCESS_ENDED.search(line)
    if ended is None or ended["how"] != "exited" or int(ended["status"]) not in SYSTEMD_STEPS:
        return None
    return SYSTEMD_STEPS[int(ended["status"])], int(ended["status"])


def setting_signalled(name: str) -> str | None:
    """What a unit set that makes the kernel send the signal ``name`` (``SYS``, ``XCPU``: without
    its ``SIG``), else None."""
    return _SETTING_SIGNALS.get(name)


def ended_by_a_signal(texts: Sequence[str], start: int) -> tuple[str, int, str] | None:
    """(cause, line, message) where systemd says a signal ended the main process: one a unit's
    setting sends (:data:`_SETTING_SIGNALS`), *invalid config*, the setting named; SIGKILL or
    SIGTERM, *killed*; SIGBUS before the server wrote a line, *broken install*
    (:data:`_SHORT_FILE_MAPPED`); any other (a SIGSEGV before the server wrote a line:
    ``LimitSTACK=`` too small, among others), *crashed*. For a record where the server wrote
    nothing that names a cause; None where systemd says no signal."""
    for index in range(start, len(texts)):
        ended = MAIN_PROCESS_ENDED.search(texts[index])
        if not ended or ended["how"] == "exited":
            continue
        name = ended["name"]
        if name in _SETTING_SIGNALS:
            return "invalid config", index, f"killed by SIG{name}: {_SETTING_SIGNALS[name]}"
        if name == "BUS" and all(_said_by_systemd(text) for text in texts[start:index]):
            return "broken install", index, f"killed by SIGBUS {_SHORT_FILE_MAPPED}"
        return ("killed" if name in ("KILL", "TERM") else "crashed"), index, f"killed by SIG{name}"
    return None


#: What a SIGBUS says before the server wrote a line. The kernel sends it for a read of a mapped
#: file past its end; before its first line the process is loading the interpreter's and the
#: install's libraries (the model, shared memory and caches come later, after lines of their
#: own), so the file is one of them, cut short: a copy or a download interrupted, a disk full as
#: it was written, a package rewritten under the start.
_SHORT_FILE_MAPPED = (
    "before the server wrote a line: a library of its install is shorter than its own header"
    " says (a copy cut off, a disk full as it was written): reinstall the environment"
)
#: systemd's own lines about the unit (``Started ...``, ``<unit>.service: ...``).
_SYSTEMD_LINE = re.compile(r"^\s*$|^(Start(ed|ing)|Stopp(ed|ing)|Finished) |\.service: ")


def _said_by_systemd(text: str) -> bool:
    return bool(_SYSTEMD_LINE.search(text))
