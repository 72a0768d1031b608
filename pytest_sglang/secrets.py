"""The session-wide redactor: secret values never reach a report, a log line or an error.

Why values, not names: a secret leaks through text that has no name next to it (a journal line
``server_args=ServerArgs(..., api_key='...')``, an assertion message, a captured print), so the
redactor learns every secret *value* the session deploys (the config's and the host's ``env``
entries whose names look secret, and the values of ``--api-key``-like flags) and replaces each
occurrence, in its plain, JSON-escaped, ``repr`` and shell-quoted spellings, wherever the plugin
produces output. Which flags carry secrets, and how a unit spells a value, is
:mod:`pytest_sglang.cmdline`'s to say.

Which names are secret: shell-style patterns matched case-insensitively against the variable
name. The defaults (``*_TOKEN``, ``*_KEY``, ``*PASSWORD*``, ``*SECRET*``, ``*AUTH*``, ...) can be
extended with the ``sglang_secret_env`` ini option or ``--sglang-secret-env``; they cannot be
removed, so that a typo in a project's ini never publishes a token.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .cmdline import (
    quote_shell,
    read_env_file,
    secret_flag_values,
    split_environment,
    split_exec_start,
    unit_assignments,
    unit_spellings,
)

__all__ = [
    "DEFAULT_SECRET_PATTERNS",
    "REDACTED",
    "Redactor",
]

REDACTED = "<redacted>"
DEFAULT_SECRET_PATTERNS: tuple[str, ...] = (
    "*_TOKEN",
    "*_KEY",
    "*PASSWORD*",
    "*PASSWD*",
    "*SECRET*",
    "*CREDENTIAL*",
    "*APIKEY*",
    "*AUTH*",
    "*PRIVATE*",
    "HF_TOKEN",
)
#: Shorter values would blank out ordinary text ("1", "on"): too short to be a real secret.
MIN_SECRET_LEN = 4


class Redactor:
    """Knows the secret values of a session and blanks them out of any text or JSON value."""

    def __init__(self, patterns: Iterable[str] = ()) -> None:
        extra = [p.strip() for p in patterns if p and p.strip()]
        self.patterns: tuple[str, ...] = tuple(dict.fromkeys([*DEFAULT_SECRET_PATTERNS, *extra]))
        self._values: set[str] = set()
        self._spellings: list[str] = []

    # -- learning -----------------------------------------------------------------------------
    def is_secret_name(self, name: str) -> bool:
        upper = name.upper()
        return any(fnmatch.fnmatchcase(upper, p.upper()) for p in self.patterns)

    def add(self, value: str) -> None:
        """Treat ``value`` as a secret from now on (too-short values are ignored)."""
        if not isinstance(value, str) or len(value) < MIN_SECRET_LEN or value in self._values:
            return
        self._values.add(value)
        spellings = {
            value,
            json.dumps(value)[1:-1],
            json.dumps(value, ensure_ascii=False)[1:-1],
            repr(value)[1:-1],
            quote_shell(value),
            *unit_spellings(value),  # a dry run's diff shows unit text
        }
        self._spellings = sorted(
            {*self._spellings, *(s for s in spellings if len(s) >= MIN_SECRET_LEN)},
            key=len,
            reverse=True,
        )

    def add_env(self, env: Mapping[str, str]) -> None:
        """Learn the values of the secret-looking names in ``env``."""
        for name, value in env.items():
            if self.is_secret_name(name):
                self.add(value)

    def add_argv(self, argv: Sequence[str]) -> None:
        """Learn the values of secret flags (``--api-key X`` or ``--api-key=X``)."""
        for _, value, _inline in secret_flag_values(argv):
            self.add(value)

    def add_unit_text(self, text: str | None) -> None:
        """Learn the secrets in a unit file found on a host (``systemctl cat`` output): values
        of secret-looking ``Environment=`` names and of secret flags in ``ExecStart=``, as the
        service receives them (systemd's escapes undone). For what the host already had (a dry
        run diffs against it), which this session never passed in itself."""
        for key, value in unit_assignments(text or ""):
            if key == "Environment":
                self.add_env(split_environment(value))
            elif key == "ExecStart":
                try:
                    commands = split_exec_start(value)
                except ValueError:  # unbalanced quotes: learn every word rather than none
                    commands = [value.split()]
                for argv in commands:
                    self.add_argv(argv)

    def add_env_file_text(self, text: str | None) -> None:
        """Learn the secret-looking values of an EnvironmentFile found on a host."""
        self.add_env(read_env_file(text or ""))

    @property
    def active(self) -> bool:
        return bool(self._values)

    # -- redacting ----------------------------------------------------------------------------
    def redact(self, text: str) -> str:
        """``text`` with every known secret (in any of its spellings) replaced."""
        if not self._spellings or not text:
            return text
        for spelling in self._spellings:
            if spelling in text:
                text = text.replace(spelling, REDACTED)
        return text

    def contains_secret(self, text: str) -> bool:
        return any(s in text for s in self._spellings)

    def redact_obj(self, value: Any) -> Any:
        """A copy of a JSON-like value (dicts, lists, strings) with secrets redacted."""
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, Mapping):
            return {self.redact(str(k)): self.redact_obj(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.redact_obj(v) for v in value]
        return value

    def env_view(self, env: Mapping[str, str]) -> dict[str, str]:
        """``env`` for a report: secret names' values replaced, other values redacted too."""
        return {k: (REDACTED if self.is_secret_name(k) else self.redact(v)) for k, v in env.items()}
