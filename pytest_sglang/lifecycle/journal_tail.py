"""``python3 -c <this file> UNIT CURSOR`` on the host: the unit's journal entries after CURSOR, as
``journalctl -u UNIT -f -o json --after-cursor=CURSOR`` prints them, but within ~10 ms.

Why not ``journalctl -f`` alone: journald tells readers about new entries with a timer that
fires 250 ms after the first write (``DEFAULT_POST_CHANGE_TIMER_INTERVAL_USEC``), so a reader
woken by inotify learns of SGLang's ready line (or its fatal line) 0-250 ms late. The entries are
in the journal's memory-mapped files at once; this reader, through libsystemd's own API, looks
at them every ``STEP_US`` as well as on journald's notification. It imports nothing from the
package (it runs in the host's ``python3``, any 3.x) and exits 97 before printing anything when
libsystemd cannot be used, so that the command falls back to ``journalctl -f``
(:meth:`pytest_sglang.lifecycle.systemd.SystemdDeployer.follow`). It ends when its reader (the SSH
channel) hangs up.
"""

import contextlib
import ctypes
import ctypes.util
import json
import select
import sys
from typing import Any, Optional, Tuple  # noqa: UP035 - any python3 on the host

STEP_US = 10000
CANNOT = 97


def _open(unit: str) -> Tuple[Any, ctypes.c_void_p]:  # noqa: UP006
    try:
        lib = ctypes.CDLL(ctypes.util.find_library("systemd") or "libsystemd.so.0")
    except OSError:
        sys.exit(CANNOT)
    lib.sd_journal_wait.argtypes = [ctypes.c_void_p, ctypes.c_uint64]
    for name in ("sd_journal_next", "sd_journal_add_disjunction", "sd_journal_seek_head"):
        getattr(lib, name).argtypes = [ctypes.c_void_p]
    journal = ctypes.c_void_p()
    if lib.sd_journal_open(ctypes.byref(journal), 1) < 0:  # SD_JOURNAL_LOCAL_ONLY
        sys.exit(CANNOT)
    # what `journalctl -u UNIT` matches: the unit's own lines, and PID 1's lines about it
    for group in ([f"_SYSTEMD_UNIT={unit}"], ["_PID=1", f"UNIT={unit}"]):
        for match in group:
            data = match.encode()
            lib.sd_journal_add_match(journal, data, ctypes.c_size_t(len(data)))
        lib.sd_journal_add_disjunction(journal)
    return lib, journal


def _field(lib: Any, journal: ctypes.c_void_p, name: str) -> Optional[Any]:  # noqa: UP045
    data, size = ctypes.c_void_p(), ctypes.c_size_t()
    if lib.sd_journal_get_data(journal, name.encode(), ctypes.byref(data), ctypes.byref(size)) < 0:
        return None
    raw = ctypes.string_at(data, size.value)[len(name) + 1 :]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return list(raw)  # as journalctl's JSON gives a value that is not UTF-8


def _entry(lib: Any, journal: ctypes.c_void_p) -> str:
    cursor, usec = ctypes.c_char_p(), ctypes.c_uint64()
    lib.sd_journal_get_cursor(journal, ctypes.byref(cursor))
    lib.sd_journal_get_realtime_usec(journal, ctypes.byref(usec))
    text = (cursor.value or b"").decode()
    ctypes.CDLL(None).free(cursor)
    record: dict[str, Any] = {"__CURSOR": text, "__REALTIME_TIMESTAMP": str(usec.value)}
    for name in ("MESSAGE", "MESSAGE_ID"):
        value = _field(lib, journal, name)
        if value is not None:
            record[name] = value
    return json.dumps(record)


def main() -> None:
    unit, after = sys.argv[1], sys.argv[2]
    lib, journal = _open(unit)
    if after:
        if lib.sd_journal_seek_cursor(journal, after.encode()) < 0:
            sys.exit(CANNOT)
        # at the cursor's own entry (when it matches the unit): it is not "after" it
        if (
            lib.sd_journal_next(journal) > 0
            and lib.sd_journal_test_cursor(journal, after.encode()) <= 0
        ):
            sys.stdout.write(_entry(lib, journal) + "\n")
    else:
        lib.sd_journal_seek_head(journal)
    hangup = select.poll()
    hangup.register(sys.stdout.fileno(), 0)  # reports only POLLERR/POLLHUP: the reader left
    while True:
        while lib.sd_journal_next(journal) > 0:
            sys.stdout.write(_entry(lib, journal) + "\n")
        sys.stdout.flush()
        if hangup.poll(0):
            return
        lib.sd_journal_wait(journal, STEP_US)


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError, KeyboardInterrupt):
        main()
