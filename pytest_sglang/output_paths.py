"""The session's output paths, checked before anything runs.

Why at the start: the summary, the HTML report and the Allure results are written during or
after the run. An unwritable ``--sglang-summary`` used to end a whole run (deployments, hours of
benchmarks) in a ``FileNotFoundError`` traceback with the summary lost, and an unwritable
``--alluredir`` ended it in an INTERNALERROR; checked first, each is one usage error naming the
path before any host is touched.

The check writes nothing (the files and folders are created when written, as before): the
path must not be of the wrong kind, and the deepest folder of it that exists must be a folder
this process may create entries in.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from .errors import ConfigError

__all__ = ["check_output_path", "check_output_paths"]


def _unwritable(path: Path, *, folder: bool) -> str | None:
    """Why ``path`` (a file, or with ``folder`` a folder) cannot be written; None if it can."""
    if path.exists():
        if folder and not path.is_dir():
            return "it is not a folder"
        if not folder and path.is_dir():
            return "it is a folder"
        if not os.access(path, os.W_OK | (os.X_OK if folder else 0)):
            return "no permission to write it"
        return None
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        return f"{parent} is not a folder"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"no permission to write in {parent}"
    return None


def check_output_path(option: str, value: str | os.PathLike[str], *, folder: bool = False) -> None:
    """One-line ConfigError naming ``option`` and the path when it cannot be written."""
    path = Path(value).expanduser().absolute()
    reason = _unwritable(path, folder=folder)
    if reason is not None:
        raise ConfigError(f"{option} {value}: cannot be written ({reason}); give a writable path")


def check_output_paths(paths: Iterable[tuple[str, str | None, bool]]) -> None:
    """Check every ``(option, value, folder)`` whose value is given."""
    for option, value, folder in paths:
        if value:
            check_output_path(option, value, folder=folder)
