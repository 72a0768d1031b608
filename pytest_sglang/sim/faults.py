"""How SGLang dies, replayed exactly: the messages it logs, then a SIGKILL of itself.

Why SIGKILL: SGLang's parent process ends with ``kill_process_tree(os.getpid())``, which kills
its children and then itself, so systemd records ``code=killed, status=9/KILL`` rather than an
exit code (sglang-facts.md section 3, "Fatal errors"). Deployers classify failures from these
exact lines, so the texts come from SGLang's source.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import NoReturn

from .logs import log, rank_log

__all__ = [
    "CUDA_GRAPH_SOLUTIONS",
    "die",
    "kill_self",
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


def kill_self() -> NoReturn:
    """End like ``kill_process_tree(include_parent=True)``: SIGKILL this process."""
    sys.stdout.flush()
    sys.stderr.flush()
    os.kill(os.getpid(), signal.SIGKILL)
    raise SystemExit(137)  # not reached; keeps type checkers and odd platforms honest


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
