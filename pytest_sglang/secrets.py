"""The session-wide redactor: secret values never reach a report, a log line or an error.

Why values, not names: a secret leaks through text that has no name next to it (a journal line
``server_args=ServerArgs(..., api_key='...')``, an assertion message, a captured print), so the
redactor learns every secret *value* the session deploys (the config's and the host's ``env``
entries whose names look secret, and the values of ``--api-key``-like flags) and replaces each
occurrence, in its plain, JSON-escaped, ``repr`` and shell-quoted spellings, wherever the plugin
produces output.

Which names are secret: shell-style patterns matched case-insensitively against the variable
name. The defaults (``*_TOKEN``, ``*_KEY``, ``*PASSWORD*``, ``*SECRET*``, ``*AUTH*``, ...) can be
extended with the ``sglang_secret_env`` ini option or ``--sglang-secret-env``; they cannot be
removed, so that a typo in a project's ini never publishes a token.
"""

from __future__ import annotations

import fnmatch
import json
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = [
    "DEFAULT_SECRET_PATTERNS",
    "REDACTED",
    "Redactor",
    "api_key",
    "secret_flag_values",
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
#: Flags whose value is a secret: the flag's *last word* names one (``--api-key X``,
#: ``--admin-api-key=X``, ``--hf-token X``, ``--ssl-keyfile-password X``). Matching the word
#: anywhere would hide ``--max-total-tokens 16384`` or ``--tokenizer-mode auto``, and with them
#: every 16384 and "auto" in the reports.
_SECRET_FLAG = re.compile(r"^--(?:\w+[-_])*(?:key|token|secret|password|passwd)$", re.I)
#: Shorter values would blank out ordinary text ("1", "on"): too short to be a real secret.
MIN_SECRET_LEN = 4


def secret_flag_values(argv: Sequence[str]) -> list[tuple[int, str, bool]]:
    """(index in ``argv``, value, inline) of every secret flag's value: ``--api-key X`` gives
    the index of ``X``, ``--api-key=X`` the index of the word itself (inline). A flag followed
    by another flag has no value here (``--api-key --port 30000`` hides nothing)."""
    found: list[tuple[int, str, bool]] = []
    for i, word in enumerate(argv):
        flag, eq, inline = word.partition("=")
        if not _SECRET_FLAG.match(flag):
            continue
        if eq:
            found.append((i, inline, True))
        elif i + 1 < len(argv) and not argv[i + 1].startswith("--"):
            found.append((i + 1, argv[i + 1], False))
    return found


def api_key(argv: Sequence[str]) -> str | None:
    """The value of ``--api-key`` in ``argv`` (the last one, as argparse keeps), if any."""
    found: str | None = None
    for i, value, inline in secret_flag_values(argv):
        flag = argv[i].partition("=")[0] if inline else argv[i - 1]
        if flag == "--api-key":
            found = value
    return found


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
            shlex.quote(value),
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
        """Learn the secrets in a unit file or EnvironmentFile found on a host: values of
        secret-looking ``Environment=``/``KEY=value`` names and of secret flags in
        ``ExecStart=``. For what the host already had (a dry run diffs against it), which this
        session never passed in itself."""
        for raw in (text or "").splitlines():
            line = raw.strip()
            if not line or line.startswith(("#", ";", "[")):
                continue
            key, _, rest = line.partition("=")
            try:
                words = shlex.split(rest if key in ("Environment", "ExecStart") else line)
            except ValueError:
                words = rest.split()
            if key == "ExecStart":
                self.add_argv(words)
                continue
            for word in words:
                name, eq, value = word.partition("=")
                if eq:
                    self.add_env({name: value})

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
