"""Render the systemd unit and its EnvironmentFile; pure functions, no I/O.

Quoting follows systemd's own rules, not the shell's, and is :mod:`pytest_sglang.cmdline`'s,
whose readers undo it: what the server receives is exactly the argv we built. Environment
values never appear in the unit
(``systemctl show`` and ``systemctl cat`` would print them); they live in an EnvironmentFile
written with mode 0600.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..cmdline import (
    check_unit_text,
    env_file_line,
    join_exec_start,
    quote_exec_arg,
)
from ..errors import ConfigError

__all__ = [
    "EXIT_MARKER",
    "render_dropin",
    "render_env_file",
    "render_unit",
]

#: Logged by ExecStopPost when the main process ends: ``result=.. code=.. status=..``.
EXIT_MARKER = "pytest-sglang: main process ended:"
EXIT_MARKER_COMMAND = (
    f'echo "{EXIT_MARKER} result=$SERVICE_RESULT code=$EXIT_CODE status=$EXIT_STATUS"'
)


def _one_line(what: str, text: str) -> str:
    check_unit_text(what, text)
    return text


def _header(config_id: str, digest: str, fate: str) -> list[str]:
    header = _one_line("config id", config_id)
    header_digest = _one_line("config digest", digest)
    return [
        f"# Written by pytest-sglang (config {header or '?'}, digest {header_digest or '?'}).",
        f"# {fate}",
    ]


def _owned(environment_file: str) -> list[str]:
    """The service settings the plugin must own, whatever production says: its own environment
    file last (the config's ``env`` wins), a crash stays visible (``Restart=no``), how the main
    process ended is logged, and the output goes to the journal the plugin reads.

    ``SuccessExitStatus=SIGKILL`` because SGLang ends every shutdown (and every fatal error) by
    SIGKILL-ing itself, so crashes are classified from the journal, not the exit status.
    """
    if not environment_file.startswith("/"):
        raise ConfigError(f"EnvironmentFile {environment_file!r} must be an absolute path")
    return [
        "Type=simple",
        "Environment=PYTHONUNBUFFERED=1",
        f"EnvironmentFile={_one_line('EnvironmentFile', environment_file).replace('%', '%%')}",
        # A clean exit lets systemd unload the unit and forget ExecMainCode: record it.
        f"ExecStopPost=/bin/sh -c {quote_exec_arg(EXIT_MARKER_COMMAND)}",
        "SuccessExitStatus=SIGKILL",
        "KillMode=mixed",
        "TimeoutStopSec=30",
        "Restart=no",
        "StandardOutput=journal",
        "StandardError=journal",
    ]


def render_unit(
    *,
    description: str,
    exec_argv: Sequence[str],
    environment_file: str,
    working_directory: str | None = None,
    config_id: str = "",
    digest: str = "",
) -> str:
    """The text of ``<service>.service`` that runs ``exec_argv`` under systemd, for a host
    where the service does not exist yet (elsewhere: :func:`render_dropin`)."""
    exec_start = join_exec_start(exec_argv)
    lines = [
        *_header(
            config_id, digest, "It is replaced with the original unit when the test session ends."
        ),
        "[Unit]",
        f"Description={_one_line('Description', description).replace('%', '%%')}",
        "",
        "[Service]",
        f"ExecStart={exec_start}",
    ]
    if working_directory is not None:
        _one_line("WorkingDirectory", working_directory)
        if not working_directory.startswith("/"):
            raise ConfigError(f"WorkingDirectory {working_directory!r} must be an absolute path")
        lines.append(f"WorkingDirectory={working_directory.replace('%', '%%')}")
    return "\n".join([*lines, *_owned(environment_file), ""])


def render_dropin(
    *, exec_argv: Sequence[str], environment_file: str, config_id: str = "", digest: str = ""
) -> str:
    """The drop-in that runs ``exec_argv`` inside the production service's own context.

    Everything production's unit and its drop-ins set (``User=``, ``WorkingDirectory=``, its
    ``Environment=``/``EnvironmentFile=``, ``Limit*=``, ordering, ...) stays in force; this
    drop-in, sorted last, only replaces the command line (``ExecStart=`` empty first resets
    production's) and sets what the plugin must own.
    """
    exec_start = join_exec_start(exec_argv)
    return "\n".join(
        [
            *_header(config_id, digest, "Removed when the test session ends."),
            "[Service]",
            "ExecStart=",
            f"ExecStart={exec_start}",
            *_owned(environment_file),
            "",
        ]
    )


def render_env_file(env: Mapping[str, str]) -> str:
    """An EnvironmentFile (``KEY="value"`` lines) for systemd; refuses names and values it cannot
    represent (a newline would be read as line continuation or a new assignment)."""
    lines = ["# Written by pytest-sglang; mode 0600 (values may be secrets)."]
    for name, value in env.items():
        lines.append(env_file_line(name, value))
    return "\n".join(lines) + "\n"
