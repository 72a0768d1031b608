"""How SGLang dies, replayed exactly: the messages it logs, then a SIGKILL of itself.

``replay`` plays back a real failure log (tests/data/failures/) as the server's own output and
ends the process the way that failure ended SGLang, so a real crash can run through any deployer.

Why SIGKILL: SGLang's parent process ends with ``kill_process_tree(os.getpid())``, which kills
its children and then itself, so systemd records ``code=killed, status=9/KILL`` rather than an
exit code (sglang-facts.md section 3, "Fatal errors"). Deployers classify failures from these
exact lines, so the texts come from SGLang's source.
"""

from __future__ import annotations

import os
import re
import signal
import sys
from pathlib import Path
from typing import NoReturn

from ..lifecycle.fatal.patterns import _CHILD_DIED
from ..lifecycle.fatal.service_manager import MAIN_PROCESS_ENDED
from .logs import log, rank_log, raw_stderr

__all__ = [
    "CUDA_GRAPH_SOLUTIONS",
    "die",
    "kill_self",
    "replay",
    "replay_exit",
    "scheduler_exception",
]

CUDA_GRAPH_SOLUTIONS = (
    "Possible solutions:\n"
    "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n"
    "2. set --cuda-graph-max-bs to a smaller value (e.g., 16)\n"
    "3. disable torch compile by not using --enable-torch-compile\n"
    "4. disable CUDA graph by --disable-cuda-graph. (Not recommended. Huge performance loss)\n"
    "Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose \n"
)


def _signal_self(signum: signal.Signals) -> NoReturn:
    """End this process by ``signum``, its output flushed first."""
    sys.stdout.flush()
    sys.stderr.flush()
    os.kill(os.getpid(), signum)
    raise SystemExit(128 + signum)  # not reached; keeps type checkers and odd platforms honest


def kill_self() -> NoReturn:
    """End like ``kill_process_tree(include_parent=True)``: SIGKILL this process."""
    _signal_self(signal.SIGKILL)


def scheduler_exception(frames: list[tuple[str, int, str, str]], error: str, tp_size: int) -> None:
    """``Scheduler hit an exception: Traceback ...`` from TP0 as one multi-line message."""
    lines = ["Scheduler hit an exception: Traceback (most recent call last):"]
    for path, lineno, func, code in frames:
        lines.append(f'  File "{path}", line {lineno}, in {func}')
        lines.append(f"    {code}")
    lines.append(error)
    rank_log("\n".join(lines), 0, tp_size)


def die(during_startup: bool) -> NoReturn:
    """The parent's reaction to a dead scheduler, then the SIGKILL of itself."""
    if during_startup:
        log("Received sigquit from a child process. It usually means the child failed.")
    else:
        log("SIGQUIT received. signum=None, frame=None. It usually means one child failed.")
    kill_self()


READY_LINE = "The server is fired up and ready to roll!"
#: The parent kills its process tree after these: a child's death in the words the classifier
#: reads (:data:`~pytest_sglang.lifecycle.fatal.patterns._CHILD_DIED`, the HTTP and the gRPC
#: server's), or a failed warmup.
_PARENT_KILLS = re.compile(rf"{_CHILD_DIED}|Initialization failed\. warmup error")
#: A scheduler found dead: at start the launcher raises (exit 1); after the ready line the
#: serving watchdog of releases and forks that have one (ktransformers') ends the tree.
_SCHEDULER_DEAD = re.compile(r"Rank \d+ scheduler is dead\. Please check")
#: argparse's last line, after its program's name: a script's path, or 0.5.23's ``sglang serve``.
_ARGPARSE = re.compile(r"^\S+(?: \w+)?: error: ")
#: Uvicorn's words when the app's own startup (its lifespan) raised: it exits 3
#: (``STARTUP_FAILURE``), as a tool-call parser whose chat encoding cannot be built ends 0.5.23.
_APP_STARTUP_FAILED = "Application startup failed. Exiting."
#: The C++ runtime's words as it aborts a process for an exception no code caught (torch's
#: ``c10::Error`` reading a malformed ``PYTORCH_CUDA_ALLOC_CONF`` as its library loads). As a
#: log's first line, it is the main process's, as its imports load the library; later, most
#: often a child's or a thread's (NCCL's watchdog), whose death is reported its own way.
_CXX_TERMINATE = "terminate called after throwing an instance of "


def replay_exit(lines: list[str]) -> str | int:
    """How the process that wrote ``lines`` ended: a signal's name (``"SIGKILL"``), an exit
    code, or ``"ready"``.

    A unit's journal says it in the service manager's own words (``Main process exited,
    code=killed, status=31/SYS``), whatever the server wrote. Otherwise, by the server's lines:
    SGLang's parent kills its own process tree after a child's SIGQUIT or a failed warmup
    (SIGKILL, as :func:`die`); argparse exits 2; uvicorn exits 3 where the app's startup raised;
    a Python exception in the main process exits 1; the C++ runtime aborting the main process
    ends it by SIGABRT; a log that reaches the ready line is a server that came up.
    """
    ended = next((m for m in map(MAIN_PROCESS_ENDED.search, lines) if m is not None), None)
    if ended is not None:
        how, status, name = ended.groups()
        return int(status) if how == "exited" else f"SIG{name}"
    if any(_PARENT_KILLS.search(line) for line in lines):
        return "SIGKILL"
    ready = next((i for i, line in enumerate(lines) if READY_LINE in line), None)
    if ready is not None and any(_SCHEDULER_DEAD.search(line) for line in lines[ready:]):
        return "SIGKILL"
    if any(line.startswith("usage: ") for line in lines) and any(
        _ARGPARSE.match(line) for line in lines
    ):
        return 2
    if any(READY_LINE in line for line in lines):
        return "ready"
    if any(_APP_STARTUP_FAILED in line for line in lines):
        return 3
    if next((line for line in lines if line.strip()), "").startswith(_CXX_TERMINATE):
        return "SIGABRT"
    return 1


def replay(path: str) -> None:
    """Write the log at ``path`` to stderr as this server's startup output, then end as it did.

    A log that reached the ready line is replayed up to it and the simulator then starts for real
    (its own milestones and ready line follow); any other log ends the process like the original.
    """
    lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    outcome = replay_exit(lines)
    if outcome == "ready":
        lines = lines[: next(i for i, line in enumerate(lines) if READY_LINE in line)]
    raw_stderr("".join(line + "\n" for line in lines))
    if outcome == "ready":
        return
    if isinstance(outcome, str):
        _signal_self(signal.Signals[outcome])
    raise SystemExit(outcome)
