"""SGLang's log format: ``[YYYY-MM-DD HH:MM:SS] msg`` and ``[... TPn] msg`` on scheduler ranks.

Why exact: the plugin reads the journal of a real server with the same parsers it tests against
the simulator. SGLang logs through the root logger to stderr with no level or logger name
(``configure_logger`` in ``srt/utils/common.py``); uvicorn's access lines go to stdout
(``set_uvicorn_logging_configs``) and are written here unbuffered.
"""

from __future__ import annotations

import logging
import os
import sys
import time

__all__ = [
    "SglangFormatter",
    "access_log",
    "all_ranks",
    "log",
    "rank_log",
    "raw_stderr",
    "setup_logging",
]

LOGGER = logging.getLogger("sglang.sim")


class SglangFormatter(logging.Formatter):
    """``[%Y-%m-%d %H:%M:%S{ TPn}] message`` (``SGLANG_LOG_MS=1`` adds milliseconds)."""

    def __init__(self) -> None:
        super().__init__(datefmt="%Y-%m-%d %H:%M:%S")
        self._ms = os.environ.get("SGLANG_LOG_MS", "") not in ("", "0", "false")

    def format(self, record: logging.LogRecord) -> str:
        stamp = self.formatTime(record, self.datefmt)
        if self._ms:
            stamp += f".{int(record.msecs):03d}"
        prefix = getattr(record, "sglang_prefix", "")
        return f"[{stamp}{prefix}] {record.getMessage()}"


def setup_logging() -> None:
    """Route the simulator's logger to stderr in SGLang's format."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(SglangFormatter())
    LOGGER.handlers[:] = [handler]
    LOGGER.setLevel(logging.INFO)
    LOGGER.propagate = False


def log(message: str) -> None:
    """A main-process line (tokenizer manager, HTTP server): no prefix."""
    LOGGER.info(message)


def rank_log(message: str, rank: int, tp_size: int) -> None:
    """A scheduler line of ``rank``: `` TPn`` prefix only when tp > 1."""
    prefix = f" TP{rank}" if tp_size > 1 else ""
    LOGGER.info(message, extra={"sglang_prefix": prefix})


def all_ranks(message: str, tp_size: int) -> None:
    """The same model-runner line from every TP rank, as SGLang's schedulers each log it."""
    for rank in range(tp_size):
        rank_log(message, rank, tp_size)


def raw_stderr(text: str) -> None:
    """Unprefixed stderr output (tqdm bars, traceback continuation)."""
    sys.stderr.write(text)
    sys.stderr.flush()


def access_log(peer: str, method: str, path: str, status: int) -> None:
    """uvicorn's access line, on stdout: ``INFO:     127.0.0.1:5000 - "GET /x HTTP/1.1" 200 OK``."""
    reason = _REASONS.get(status, "")
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    sys.stdout.write(f'[{stamp}] INFO:     {peer} - "{method} {path} HTTP/1.1" {status} {reason}\n')
    sys.stdout.flush()


_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    405: "Method Not Allowed",
    500: "Internal Server Error",
    503: "Service Unavailable",
}
