"""What the process's sandbox and limits deny the server: a refusal the unit's settings cause.

A production unit carries hardening and limits (``ProtectSystem=``, ``ProtectHome=``,
``ReadOnlyPaths=``, ``ProcSubset=``, ``LimitNOFILE=``, a ``User=`` that is not root) that a
server can meet as it starts, deep in a library: a cache it writes on a read-only file system
or where its user may not write, no temporary directory it can write, the open-file limit
reached as its processes open their sockets, ``/proc`` files it reads hidden. The exception
then says what was denied (``[Errno 30] Read-only file system``, ``[Errno 13] Permission
denied`` on a cache's path, ``No usable temporary directory found``, ``Too many open files``,
``No such file or directory: '/proc/stat'``), and an engineer reads it as the service's
configuration, not the install nor a crash: *invalid config*, with the settings that deny it
named.

A process that dies of a Bus error (SIGBUS) as it writes shared memory (its frames in a shared
memory writer: SGLang's load snapshot or broadcast queue, Python's or torch's) touched memory
mapped from ``/dev/shm`` with no room left for it: ``/dev/shm`` too small or full (a container's
``--shm-size``, a unit's own ``/dev/shm``). An engineer reads it as *no space left*, and says
where.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .tracebacks import _chain_of, _fault_frames

#: What an exception says was denied, and the settings that deny it.
_DENIED: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"\[Errno 30\] Read-only file system|\bEROFS\b"),
        "a path the server writes is on a read-only file system: the unit's ProtectSystem=,"
        " ProtectHome= or ReadOnlyPaths=, or a read-only mount",
    ),
    (
        re.compile(r"No usable temporary directory found in "),
        "no temporary directory the server can write: the unit's ProtectSystem=, PrivateTmp= or"
        " LimitFSIZE=, or TMPDIR",
    ),
    (
        # a cache or temporary path, not a model in the hub's cache (``models--org--name``)
        re.compile(
            r"\[Errno 13\] Permission denied: '(?![^']*/models--)[^']*/(\.cache|cache|tmp)/"
        ),
        "a path the server writes is not writable for the unit's user: its User=, and the HOME"
        " or cache directory it writes under",
    ),
    (
        re.compile(r"\bToo many open files\b"),
        "the open-file limit is too low: the unit's LimitNOFILE= (ulimit -n)",
    ),
)
#: A ``/proc`` file the kernel always has, found missing: hidden from the process.
_PROC_HIDDEN = re.compile(
    r"(?:No such file or directory: '|cannot open |from )(?P<file>/proc/(?:cpuinfo|meminfo|stat"
    r"|loadavg|uptime|version|mounts|filesystems|cgroups|vmstat|diskstats|partitions"
    r"|interrupts|zoneinfo|buddyinfo|sys/[\w/]+|net/[\w/]+))(?![\w-])"
)


#: faulthandler's header for a process ended by SIGBUS.
_BUS_ERROR = re.compile(r"^Fatal Python error: Bus error\b")
#: A frame that writes memory mapped from shared memory: SGLang's own writers there (its load
#: snapshot, its broadcast queue), Python's and torch's.
_SHARED_MEMORY_FRAME = re.compile(
    r"File \"[^\"]*/(load_snapshot|shm_broadcast|shared_memory)\.py\""
    r"|\bin _?share_(memory_|fd_cpu_|filename_cpu_)\b|/dev/shm/"
)
#: What a Bus error in such a frame says was short.
_SHARED_MEMORY_SHORT = (
    "a Bus error (SIGBUS) writing shared memory: /dev/shm too small or full (a container's"
    " --shm-size, a unit's own /dev/shm)"
)


def shared_memory_short(texts: Sequence[str], start: int) -> str | None:
    """What was short where a process of the record died of a Bus error (faulthandler's
    ``Fatal Python error: Bus error``) in a frame of the thread it hit that writes shared memory
    (:data:`_SHARED_MEMORY_FRAME`), else None. A Bus error elsewhere (a signal from outside, a
    model's mapped file) says nothing of shared memory."""
    for index in range(start, len(texts)):
        if _BUS_ERROR.match(texts[index]) and any(
            _SHARED_MEMORY_FRAME.search(frame) for frame in _fault_frames(texts, index)
        ):
            return _SHARED_MEMORY_SHORT
    return None


def sandbox_denied(texts: Sequence[str], start: int, index: int) -> tuple[str, str] | None:
    """*invalid config* and what the process's sandbox or limits denied, said in a phrase, where
    the exception on ``index`` (or a link of its chain) says so, or where the record shows a
    ``/proc`` file missing before it failed; None otherwise."""
    links = [texts[at] for at in _chain_of(texts, index)]
    for pattern, phrase in _DENIED:
        if any(pattern.search(link) for link in links):
            return "invalid config", phrase
    last = max(_chain_of(texts, index))
    for text in texts[start : last + 1]:
        hidden = _PROC_HIDDEN.search(text)
        if hidden is not None:
            return "invalid config", (
                f"{hidden['file']} is hidden from the server: the unit's ProcSubset=pid or"
                " ProtectProc=, or a container's /proc"
            )
    return None
