"""Command lines and systemd unit values: written and read back by one set of rules.

Why one module: every reader must undo exactly what the writers (and systemd) do. A reader that
split a unit's ``ExecStart=`` with ``shlex`` read ``--api-key "k$$9%%z"`` as ``k$$9%%z`` while
the server received ``k$9%z``: the redactor learned the wrong value and a production() sweep
started its test server with another key. Here each syntax has its writer and its reader side
by side, and the tests check that reading what is written gives it back, here and through
systemd itself.

The syntaxes:

- shell words (the inventory's ``launch`` and ``production``, the process deployer's
  ``env.sh``): POSIX shell quoting (``shlex``);
- ``ExecStart=`` (systemd.syntax(7) "Quoting", systemd.service(5) "Command lines"): words are
  unquoted with C escapes, then ``%`` specifiers are resolved in each, then, when the command
  runs, ``$`` variables. Every word is written double-quoted with ``\\`` ``"`` escaped and
  ``%`` ``$`` doubled; any word systemd reads is read, ``%%`` and ``$$`` undone. Other
  specifiers (``%i``) and variable references (``${FOO}``) stay as written: their values are
  the unit's context, not its text;
- ``Environment=`` (systemd.exec(5)): the same quoting and specifiers, no ``$`` expansion;
- an EnvironmentFile (systemd.exec(5)): ``KEY="value"`` lines, ``\\ " $ `` ` escaped.

Text with control characters (a newline above all) is refused when written: no unit syntax
carries it through unchanged.

And the flags of a command line (``--flag value``, ``--flag=value``): their groups, looking one
up, and which of them carry secrets.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .errors import ConfigError

__all__ = [
    "FlagGroup",
    "api_key",
    "check_unit_text",
    "env_file_escape",
    "env_file_line",
    "exec_escape",
    "flag_groups",
    "flag_values",
    "has_flag",
    "join_exec_start",
    "join_shell",
    "quote_env_file_value",
    "quote_environment",
    "quote_exec_arg",
    "quote_shell",
    "read_env_file",
    "secret_flag_values",
    "shell_assignments",
    "split_at_first_flag",
    "split_environment",
    "split_exec_start",
    "split_shell",
    "unit_assignments",
    "unit_spellings",
]

# -- shell words ----------------------------------------------------------------------------


def split_shell(text: str) -> list[str]:
    """Shell-style words of ``text``; ValueError (shlex's) on an unclosed quote."""
    return shlex.split(text)


def quote_shell(word: str) -> str:
    return shlex.quote(word)


def join_shell(words: Sequence[str]) -> str:
    return shlex.join(words)


_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _check_env_name(name: str) -> None:
    if not _ENV_NAME.match(name):
        raise ConfigError(f"env.{name!r}: not a valid environment variable name")


def shell_assignments(env: Mapping[str, str]) -> str:
    """``KEY='value'`` lines a POSIX shell sources back into exactly ``env``."""
    for name in env:
        _check_env_name(name)
    return "".join(f"{name}={shlex.quote(value)}\n" for name, value in env.items())


# -- unit text: what systemd can carry --------------------------------------------------------


def _control_chars(text: str, *, allow_tab: bool = False) -> list[str]:
    return [
        repr(c) for c in text if (ord(c) < 0x20 and not (allow_tab and c == "\t")) or ord(c) == 0x7F
    ]


def check_unit_text(what: str, text: str, *, allow_tab: bool = False) -> None:
    """Refuse text a unit file cannot carry unchanged (naming ``what``, never the text: it may
    be a secret): control characters (a newline ends the setting), invalid UTF-8."""
    bad = _control_chars(text, allow_tab=allow_tab)
    if bad:
        raise ConfigError(f"{what}: control character {bad[0]} cannot be written to a unit")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ConfigError(f"{what}: not valid UTF-8 text") from None


# -- ExecStart= and Environment=: writing ---------------------------------------------------

#: Characters systemd reads as a prefix of the executable (``-`` ignore failure, ``@`` argv[0]
#: given separately, ``+ ! :`` privileges and no variable expansion).
_EXEC_PREFIXES = "-@+!:"


def _quoted_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")


def exec_escape(arg: str) -> str:
    """``arg`` as it stands between the double quotes of an ExecStart= word."""
    return _quoted_escape(arg).replace("$", "$$")


def quote_exec_arg(arg: str) -> str:
    """One ExecStart= word, double-quoted by systemd's rules (``%``/``$`` made literal)."""
    check_unit_text("ExecStart argument", arg)
    if arg == ";":
        # systemd treats a lone ";" word as a command separator even when quoted.
        raise ConfigError("ExecStart argument ';' cannot be passed through systemd")
    return f'"{exec_escape(arg)}"'


def join_exec_start(argv: Sequence[str]) -> str:
    """The value of ``ExecStart=`` that runs ``argv`` exactly (every word quoted). The
    executable must be an absolute path systemd accepts: no quotes or backslashes in it."""
    if not argv:
        raise ConfigError("ExecStart: the command line is empty; check the host's 'launch'")
    executable = argv[0]
    if not executable.startswith("/") or any(c in executable for c in "\"'\\"):
        raise ConfigError(
            f"ExecStart: the executable {executable!r} must be an absolute path without quotes "
            "or backslashes; fix the host's 'launch'"
        )
    return " ".join(quote_exec_arg(a) for a in argv)


def quote_environment(name: str, value: str) -> str:
    """One ``Environment=`` assignment, double-quoted: systemd sets ``name`` to ``value``."""
    _check_env_name(name)
    check_unit_text(f"env.{name}", value)
    return f'"{name}={_quoted_escape(value)}"'


def unit_spellings(value: str) -> set[str]:
    """How ``value`` stands in a unit's ``ExecStart=``, ``Environment=`` or EnvironmentFile
    (between quotes): text that shows a unit shows the value in one of these."""
    return {exec_escape(value), _quoted_escape(value), env_file_escape(value)}


# -- ExecStart= and Environment=: reading ---------------------------------------------------

_WHITESPACE = " \t\n\r"
_NEWLINE = re.compile(r"\r\n|[\n\r]")
_C_ESCAPES = {
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    '"': '"',
    "'": "'",
    "s": " ",
}
#: After a backslash: how many digits of which base make one character (``\\x`` and octal
#: give a byte, ``\\u`` and ``\\U`` a code point).
_NUMERIC_ESCAPES = {"x": (2, 16), "u": (4, 16), "U": (8, 16)}
_DIGITS = {8: frozenset("01234567"), 16: frozenset("0123456789abcdefABCDEF")}


def _unescape(text: str, i: int) -> tuple[bytes, int]:
    """The bytes the escape at ``text[i]`` (just after a backslash) stands for, and the index
    after it. An unknown escape stays as written, as systemd keeps it (with a warning)."""
    c = text[i]
    if c in _C_ESCAPES:
        return _C_ESCAPES[c].encode(), i + 1
    digits, base = _NUMERIC_ESCAPES.get(c, (3, 8) if c in _DIGITS[8] else (0, 0))
    start = i if base == 8 else i + 1
    chunk = text[start : start + digits]
    if digits and len(chunk) == digits and set(chunk) <= _DIGITS[base]:
        code = int(chunk, base)
        if c in "uU" and 0 < code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF:
            return chr(code).encode(), start + digits
        if c not in "uU" and 0 < code <= 0xFF:  # systemd refuses NUL
            return bytes([code]), start + digits
    return ("\\" + c).encode(), i + 1


def _word(text: str, i: int) -> tuple[str, int]:
    """One word from ``text[i]`` (not whitespace): quotes removed, escapes undone; the index
    after it. systemd's ``extract_first_word`` with UNQUOTE|CUNESCAPE."""
    out = bytearray()
    quote = ""
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            chars, i = _unescape(text, i + 1)
            out += chars
            continue
        if quote:
            if c == quote:
                quote = ""
            else:
                out += c.encode()
        elif c in "'\"":
            quote = c
        elif c in _WHITESPACE:
            break
        else:
            out += c.encode()
        i += 1
    if quote:
        raise ConfigError("unbalanced quoting in a unit setting")
    return out.decode("utf-8", "replace"), i


def _doubled(word: str, char: str) -> str:
    """``word`` with ``char char`` read as one ``char``; a single one (a specifier such as
    ``%i``, a variable such as ``${FOO}``) stays as written."""
    out: list[str] = []
    i = 0
    while i < len(word):
        out.append(word[i])
        i += 2 if word[i] == char and word[i + 1 : i + 2] == char else 1
    return "".join(out)


def _systemd_words(value: str) -> list[str | None]:
    """The words of a setting's value, with None for a command separator (a lone unquoted
    ``;``; ``\\;`` is a literal ``;``)."""
    words: list[str | None] = []
    i = 0
    while True:
        while i < len(value) and value[i] in _WHITESPACE:
            i += 1
        if i >= len(value):
            return words
        end = value[i + 1 : i + 2]
        if value[i] == ";" and (not end or end in _WHITESPACE):
            words.append(None)
            i += 1
            continue
        if value.startswith("\\;", i) and (i + 2 == len(value) or value[i + 2] in _WHITESPACE):
            words.append(";")
            i += 2
            continue
        word, i = _word(value, i)
        words.append(word)


def split_exec_start(value: str) -> list[list[str]]:
    """The command lines of one ``ExecStart=`` value, each the argv its process receives
    (``%%`` and ``$$`` undone; the executable's prefix characters dropped). One-line
    ConfigError on unbalanced quotes."""
    commands: list[list[str]] = [[]]
    for word in _systemd_words(value):
        if word is None:
            commands.append([])
            continue
        command = commands[-1]
        if not command:
            word = word.lstrip(_EXEC_PREFIXES)
        command.append(_doubled(_doubled(word, "%"), "$"))
    return [command for command in commands if command]


def split_environment(value: str) -> dict[str, str]:
    """The variables one ``Environment=`` value sets (``%%`` undone; ``$`` is literal there).
    Words that are no ``NAME=value`` assignment are skipped, as systemd skips them."""
    env: dict[str, str] = {}
    for word in _systemd_words(value):
        name, eq, raw = (word or "").partition("=")
        if eq and _ENV_NAME.match(name):
            env[name] = _doubled(raw, "%")
    return env


# -- EnvironmentFile= -------------------------------------------------------------------------

_ENV_FILE_ESCAPED = '\\"$`'


def env_file_escape(value: str) -> str:
    """``value`` as it stands between the double quotes of an EnvironmentFile line."""
    return "".join("\\" + c if c in _ENV_FILE_ESCAPED else c for c in value)


def quote_env_file_value(value: str) -> str:
    """One EnvironmentFile value, double-quoted (``\\ " $ ` `` escaped)."""
    return f'"{env_file_escape(value)}"'


def env_file_line(name: str, value: str) -> str:
    """``NAME="value"``: one EnvironmentFile line that sets ``name`` to exactly ``value``;
    refuses what it cannot carry (a newline would continue the value or start a new one)."""
    _check_env_name(name)
    if not isinstance(value, str):
        raise ConfigError(f"env.{name}: value must be a string")
    bad = _control_chars(value, allow_tab=True)
    if bad:
        raise ConfigError(
            f"env.{name}: control character {bad[0]} cannot be written to an EnvironmentFile"
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ConfigError(f"env.{name}: not valid UTF-8 text") from None
    return f"{name}={quote_env_file_value(value)}"


def _env_file_value(raw: str) -> str:
    """An EnvironmentFile value as systemd reads it: a quoted part may open the value or
    follow a closed one; in double quotes a backslash escapes ``\\ " $ ` `` only, in single
    quotes nothing; unquoted, a backslash keeps the next character."""
    out: list[str] = []
    state = "start"
    i = 0
    while i < len(raw):
        c = raw[i]
        if state in "'\"" and c == state:
            state = "start"
        elif state == '"' and c == "\\" and i + 1 < len(raw):
            i += 1
            out.append(raw[i] if raw[i] in _ENV_FILE_ESCAPED else c + raw[i])
        elif state in "'\"":
            out.append(c)
        elif state == "start" and c in "'\"":
            state = c
        elif not (state == "start" and c in _WHITESPACE):
            state = "plain"
            if c == "\\" and i + 1 < len(raw):
                i += 1
            out.append(raw[i])
        i += 1
    return "".join(out)


def read_env_file(text: str) -> dict[str, str]:
    """The variables an EnvironmentFile sets (``#``/``;`` comments and blank lines skipped; an
    ``export`` prefix allowed)."""
    env: dict[str, str] = {}
    for raw in _systemd_lines(text):
        line = raw.strip(_WHITESPACE)
        if not line or line.startswith(("#", ";")):
            continue
        name, eq, value = line.removeprefix("export ").partition("=")
        if eq and _ENV_NAME.match(name.strip(_WHITESPACE)):
            env[name.strip(_WHITESPACE)] = _env_file_value(value.strip(_WHITESPACE))
    return env


def _systemd_lines(text: str) -> list[str]:
    r"""``text`` cut where systemd cuts it: at ``\n`` and ``\r`` only (``str.splitlines`` also
    cuts at ``\u2028``, ``\x85``, ``\x0c``, ..., which a value may hold)."""
    return _NEWLINE.split(text.removesuffix("\n"))


# -- unit files -------------------------------------------------------------------------------


def _logical_lines(text: str) -> list[str]:
    """Unit-file lines with systemd's continuations joined: a line ending in a backslash goes
    on with the next one (the backslash read as a space); comment lines inside are skipped."""
    lines: list[str] = []
    pending: list[str] = []
    for raw in _systemd_lines(text):
        stripped = raw.strip(_WHITESPACE)
        if pending and stripped.startswith(("#", ";")):
            continue
        if stripped.endswith("\\"):
            pending.append(stripped[:-1])
            continue
        lines.append(" ".join([*pending, stripped]) if pending else raw)
        pending = []
    if pending:
        lines.append(" ".join(pending))
    return lines


def unit_assignments(text: str) -> list[tuple[str, str]]:
    """``(key, value)`` of every setting in a unit text (``systemctl cat`` output: several
    files one after the other), in order; sections, comments and blank lines skipped."""
    found: list[tuple[str, str]] = []
    for raw in _logical_lines(text):
        line = raw.strip(_WHITESPACE)
        if not line or line.startswith(("#", ";", "[")):
            continue
        key, eq, value = line.partition("=")
        if eq:
            found.append((key.strip(_WHITESPACE), value.strip(_WHITESPACE)))
    return found


# -- flags ------------------------------------------------------------------------------------


def _is_flag(word: str) -> bool:
    return word.startswith("--")


def split_at_first_flag(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """``(leading, flags)``: the words before the first ``--flag`` (a launcher), the rest."""
    first = next((i for i, word in enumerate(argv) if _is_flag(word)), len(argv))
    return list(argv[:first]), list(argv[first:])


@dataclass(frozen=True)
class FlagGroup:
    """One ``--flag`` of a command line and the words after it up to the next ``--flag``.

    ``index`` is the flag word's place in the argv; ``inline`` the value of ``--flag=value``
    (None when it has no ``=``); ``following`` the words after it, which it may or may not take
    (the flag's parser decides: see :mod:`pytest_sglang.argv_parse`).
    """

    index: int
    word: str
    flag: str
    inline: str | None
    following: tuple[str, ...]

    @property
    def words(self) -> tuple[str, ...]:
        return (self.word, *self.following)

    @property
    def value(self) -> str | None:
        """Its one value: the inline one, else the next word, else None."""
        if self.inline is not None:
            return self.inline
        return self.following[0] if self.following else None


def flag_groups(argv: Sequence[str]) -> list[FlagGroup]:
    """Every ``--flag`` of ``argv`` with its following words, in order (the words before the
    first flag belong to none)."""
    groups: list[FlagGroup] = []
    starts = [i for i, word in enumerate(argv) if _is_flag(word)]
    for start, end in zip(starts, [*starts[1:], len(argv)], strict=False):
        flag, eq, inline = argv[start].partition("=")
        following = tuple(argv[start + 1 : end])
        groups.append(FlagGroup(start, argv[start], flag, inline if eq else None, following))
    return groups


def flag_values(argv: Sequence[str], flag: str) -> list[str]:
    """The values given to exactly ``flag`` (``--flag v`` or ``--flag=v``), in order."""
    return [g.value for g in flag_groups(argv) if g.flag == flag and g.value is not None]


def has_flag(argv: Sequence[str], flag: str) -> bool:
    return any(g.flag == flag for g in flag_groups(argv))


#: Flags whose value is a secret: the flag's *last word* names one (``--api-key X``,
#: ``--admin-api-key=X``, ``--hf-token X``, ``--ssl-keyfile-password X``). Matching the word
#: anywhere would hide ``--max-total-tokens 16384`` or ``--tokenizer-mode auto``, and with them
#: every 16384 and "auto" in the reports.
_SECRET_FLAG = re.compile(r"^--(?:\w+[-_])*(?:key|token|secret|password|passwd)$", re.I)


def secret_flag_values(argv: Sequence[str]) -> list[tuple[int, str, bool]]:
    """(index in ``argv``, value, inline) of every secret flag's value: ``--api-key X`` gives
    the index of ``X``, ``--api-key=X`` the index of the word itself (inline). A flag followed
    by another flag has no value here (``--api-key --port 30000`` hides nothing)."""
    found: list[tuple[int, str, bool]] = []
    for group in flag_groups(argv):
        if not _SECRET_FLAG.match(group.flag):
            continue
        if group.inline is not None:
            found.append((group.index, group.inline, True))
        elif group.following:
            found.append((group.index + 1, group.following[0], False))
    return found


def api_key(argv: Sequence[str]) -> str | None:
    """The value of ``--api-key`` in ``argv`` (the last one, as argparse keeps), if any."""
    values = flag_values(argv, "--api-key")
    return values[-1] if values else None
