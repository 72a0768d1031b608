"""One log line as SGLang wrote it, whatever carried it here.

The stack that relays SGLang's output puts its own marks before each line (Ray's actor tag,
torch's rank, docker compose's service, syslog's prefix as journald prints it), a terminal adds
colours, Python's exception groups a ``|`` gutter, and SGLang itself a timestamp. The rules and
the traceback reading need the line without them; taking them off is this module's one job, so
every reader sees a line the same way.
"""

from __future__ import annotations

import re

#: SGLang's line prefix: ``[YYYY-MM-DD HH:MM:SS{ DPn TPn}]``, or ``[MM-DD HH:MM:SS]`` as its
#: diffusion runtime writes it.
_TS_PREFIX = re.compile(r"^\[(?:\d{4}-)?\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?(?: [A-Z0-9 ]+)?\] ")

#: Prefixes that the stack carrying SGLang's output puts before every line it relays, whatever
#: the line says: Ray's actor tag (``(WorkerDict pid=7, ip=10.0.0.1) ``), torch distributed's rank
#: (``[rank0]: ``), docker compose's service (``sglang-1  | ``), syslog's as journald prints it
#: (``Dec 03 10:00:00 gpu1 sglang[123]: ``, or ``journalctl -o short-iso``'s), the RFC 3339 time
#: ``kubectl logs --timestamps``, ``docker logs -t`` and CI runners put first
#: (``2026-01-01T10:00:00.123456789Z ``), ``kubectl logs --prefix``'s ``[pod/name/container] ``,
#: FastChat's workers relaying SGLang's output (``2024-06-02 00:26:10 | ERROR | stderr | ``).
#: A traceback relayed this way is still a traceback: the tags are taken off before the line is
#: read (several, where stacks nest), and so are a terminal's colour codes.
_CARRIER = re.compile(
    r"^(\(\w+ pid=\d+(, ip=[\d.]+)?\) |\[rank\d+\]: ?|[\w.-]+-\d+ +\| "
    r"|[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \S+ [\w.@/-]+(\[\d+\])?: "
    r"|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:?\d\d)? (\S+ [\w.@/-]+\[\d+\]: )?"
    r"|\[pod/[\w.-]+/[\w.-]+\] "
    r"|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \| [A-Z]+ \| [\w.]+ \| )"
)
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")

#: Python's exception-group traceback (3.11+; anyio's task groups under uvicorn raise one): each
#: line behind a ``|`` gutter, opened by ``+ Exception Group Traceback ...`` and each
#: sub-exception's traceback framed by ``+---- n ----`` rules. The gutter is taken off so the
#: tracebacks inside read as any other; a rule is a blank line.
_GROUP_GUTTER = re.compile(r"^ {2,}(\|( |$)|\+ (?=Exception Group Traceback))")
_GROUP_RULE = re.compile(r"^ {2,}\+[-+]*-[-+\d ]*$")


def _unwrap(line: str) -> str:
    """The line as SGLang wrote it, without a carrier's tag (:data:`_CARRIER`), colours or an
    exception group's gutter (:data:`_GROUP_GUTTER`)."""
    line = _ANSI.sub("", line)
    for _ in range(3):  # a pod's prefix, then the runtime's time, then Ray's tag
        unwrapped = _CARRIER.sub("", line, count=1)
        if unwrapped == line:
            break
        line = unwrapped
    if _GROUP_RULE.match(line):
        return ""
    return _GROUP_GUTTER.sub("", line, count=1)


def _strip_prefix(line: str) -> str:
    """The line as :func:`_unwrap` gives it, without SGLang's timestamp prefix either: the
    words the rules and the traceback reading see."""
    return _TS_PREFIX.sub("", _unwrap(line), count=1)


def words_of(text: str) -> list[str]:
    """``text``'s words, lower-cased, split at everything but letters and digits
    (``torch_native_backend.py`` -> torch, native, backend, py): how a setting's value, a
    package's or a module's name and a message are compared word by word."""
    return [part for part in re.split(r"[^a-z0-9]+", text.lower()) if part]
