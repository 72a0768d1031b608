"""Reading an SGLang launch command line back into the launcher, typed values and the rest.

The inverse of ``ServerConfig.to_argv``, for a command line someone else wrote (a production
unit's ``ExecStart``). The words before the first ``--flag`` are the launcher
(``/opt/venv/bin/python3 -m sglang.launch_server``, ``sglang serve``); the flags after it are read
with the rules of the argparse parser SGLang's ``launch_server`` uses:

- ``--flag value`` and ``--flag=value`` are the same;
- a unique prefix stands for the flag it begins (``--tp 4`` is ``--tp-size 4``);
- of a repeated flag, the last value wins;
- the flag catalog (:func:`pytest_sglang.versions.cli_catalog`) says how many words a flag takes:
  none for ``store_true`` flags (``--enable-metrics``), one for most, all the following
  non-flag words for list-valued ones (``--cuda-graph-bs-decode 1 2 4``). A flag the catalog
  does not know takes all the following non-flag words.

Nothing here knows ``ServerConfig``: the caller passes the typed fields' flags (``typed``,
every spelling -> field name) and builds the config from :class:`LaunchLine`. Flags of typed
fields become values; every other flag stays, with its words verbatim and in order, in
``extra_args``: a flag this module cannot map is kept, never dropped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import cache
from typing import Any

from .cmdline import flag_groups, join_shell, split_at_first_flag, split_shell
from .container import launcher_end
from .errors import ConfigError
from .versions import DEFAULT_SGLANG_VERSION, cli_catalog, field_flag, field_flags, parse_version

__all__ = [
    "FlagWords",
    "LaunchLine",
    "catalog_arg",
    "human_readable_int",
    "read_launch",
    "split_flags",
    "split_launch",
]

_SI = {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}
_IEC = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}


@dataclass(frozen=True)
class FlagWords:
    """One flag of a command line and the words that belong to it.

    ``words`` are exactly as written; ``values`` are the words the flag takes (the inline value
    of ``--flag=value``, or the following words); ``stray`` are following words it does not
    take (SGLang would refuse them). ``matches`` are the flags it can stand for: itself, the
    flag it abbreviates, several when the abbreviation is ambiguous, none when it is unknown.
    """

    words: tuple[str, ...]
    flag: str
    values: tuple[str, ...]
    stray: tuple[str, ...] = ()
    matches: tuple[str, ...] = ()

    @property
    def resolved(self) -> str | None:
        """The flag this one stands for, or None when it is unknown or ambiguous."""
        return self.matches[0] if len(self.matches) == 1 else None


@dataclass(frozen=True)
class LaunchLine:
    """A launch command line read back: launcher, typed field values, the other flags.

    ``fields`` holds the typed fields' values as written (``context_length``'s SI/IEC suffixes
    already applied), for the config model to type; ``notes`` says what was read in a way worth
    telling (an abbreviation, a repeated flag, a spelling another release has).
    """

    launcher: tuple[str, ...]
    fields: dict[str, Any]
    extra_args: tuple[str, ...]
    notes: tuple[str, ...] = ()


@cache
def _catalog_by_flag() -> dict[str, dict[str, Any]]:
    return {flag: arg for arg in cli_catalog() for flag in arg["flags"]}


def catalog_arg(flag: str) -> dict[str, Any] | None:
    """The flag catalog's entry (dest, type, action, nargs, choices) for one exact option
    string, ``--no-x`` spellings included; None for a flag the catalog does not have."""
    return _catalog_by_flag().get(flag)


def _options(typed: Mapping[str, str]) -> dict[str, str]:
    """Every flag this module knows -> what it sets (the typed field, or the catalog's dest)."""
    options = {flag: arg["dest"] for flag, arg in _catalog_by_flag().items()}
    options.update(typed)
    return options


def _matches(flag: str, options: Mapping[str, str]) -> tuple[str, ...]:
    """argparse's prefix rule: the flag itself, else one flag per destination it begins."""
    if flag in options:
        return (flag,)
    if flag == "--":
        return ()
    by_dest: dict[str, str] = {}
    for option in sorted(options):
        if option.startswith(flag):
            by_dest.setdefault(options[option], option)
    return tuple(by_dest.values())


def _most(flag: str | None, typed: Mapping[str, str]) -> int | None:
    """How many following words ``flag`` takes at most; None: all of them (unknown flags too)."""
    arg = _catalog_by_flag().get(flag or "")
    if arg is None:
        return 1 if flag in typed else None
    nargs = arg["nargs"]
    if nargs is None:
        return 1
    if isinstance(nargs, int):
        return nargs
    return 1 if nargs == "?" else None


def split_flags(flags: Sequence[str], typed: Mapping[str, str] | None = None) -> list[FlagWords]:
    """Group the flag part of a command line into flags with their words, in order.

    ``typed`` adds flags the catalog lacks (a typed field's spelling from another release).
    Words before the first ``--flag`` are returned as one group with an empty ``flag``.
    """
    typed = typed or {}
    options = _options(typed)
    leading, _rest = split_at_first_flag(flags)
    groups: list[FlagWords] = []
    if leading:
        groups.append(FlagWords(words=tuple(leading), flag="", values=(), stray=tuple(leading)))
    for group in flag_groups(flags):
        matches = _matches(group.flag, options)
        most = _most(matches[0] if len(matches) == 1 else None, typed)
        following = group.following
        values: tuple[str, ...]
        if group.inline is not None:
            values, stray = (group.inline,), following
        else:
            cut = len(following) if most is None else most
            values, stray = following[:cut], following[cut:]
        groups.append(FlagWords(group.words, group.flag, values, stray, matches))
    return groups


def split_launch(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """``(launcher, flags)``: the words up to SGLang's entry point (``-m
    sglang.launch_server``: a container engine's options before it stay in the launcher, see
    :mod:`.container`), else before the first ``--flag``; and the rest.

    A command line without ``--model-path`` (or ``--model``, or a prefix of it) is not an
    SGLang launch: a one-line ConfigError.
    """
    end = launcher_end(argv)
    if end is not None:
        launcher, flags = list(argv[:end]), list(argv[end:])
    else:
        launcher, flags = split_at_first_flag(argv)
    options = _options({})
    for group in flag_groups(flags):
        matches = _matches(group.flag, options)
        if len(matches) == 1 and options[matches[0]] == "model_path":
            return launcher, flags
    names = ", ".join(group.flag for group in flag_groups(flags)) or "none"
    raise ConfigError(
        f"not an SGLang launch: no --model-path flag in {join_shell(launcher)!r} "
        f"(flags: {names}); give the command line of sglang.launch_server"
    )


def human_readable_int(text: str) -> int:
    """SGLang's ``human_readable_int`` (``--context-length``): ``32768``, ``32k``, ``25.6k``,
    ``1Ki``, ``1Mi``. SI suffixes k, M, G, T allow decimals; IEC suffixes Ki, Mi, Gi, Ti do not;
    suffixes are case-sensitive."""
    word = text.strip()
    try:
        for suffix, scale in _IEC.items():
            if word.endswith(suffix):
                return int(word[: -len(suffix)]) * scale
        if word[-1:] in _SI:
            value = Decimal(word[:-1]) * _SI[word[-1]]
            if value == value.to_integral_value():
                return int(value)
        else:
            return int(word)
    except (ValueError, InvalidOperation):
        pass
    raise ValueError(f"not an integer with an optional k/M/G/T or Ki/Mi/Gi/Ti suffix: {text!r}")


def read_launch(
    argv: Sequence[str] | str,
    typed: Mapping[str, str],
    sglang_version: str = DEFAULT_SGLANG_VERSION,
) -> LaunchLine:
    """Read a launch command line (a list of words, or one string split as a shell would).

    ``typed`` maps every spelling of a typed field's flag to the field. A typed flag without
    exactly one value, with stray words after it, or abbreviated ambiguously is a one-line
    ConfigError: it cannot be kept verbatim without changing what the line means.
    """
    try:
        parse_version(sglang_version)
        words = split_shell(argv) if isinstance(argv, str) else list(argv)
    except ValueError as exc:
        raise ConfigError(f"cannot read the command line: {exc}") from None
    launcher, flags = split_launch(words)
    fields: dict[str, Any] = {}
    given: dict[str, list[str]] = {}
    extra: list[str] = []
    notes: list[str] = []
    for group in split_flags(flags, typed):
        resolved = group.resolved
        if resolved is not None and resolved != group.flag:
            notes.append(f"{group.flag} read as {resolved} (argparse abbreviation)")
        name = typed.get(resolved or "")
        if name is None:
            if len(group.matches) > 1:
                ambiguous = f"{group.flag} is ambiguous: it begins {', '.join(group.matches)}"
                if any(m in typed for m in group.matches):
                    raise ConfigError(f"{ambiguous}; spell the flag out")
                notes.append(f"{ambiguous}: SGLang refuses it")
            if group.stray:
                notes.append(f"{join_shell(group.stray)} after {group.flag}: SGLang refuses it")
            extra.extend(group.words)
            continue
        if len(group.values) != 1 or group.stray:
            raise ConfigError(f"{group.flag} ({name}) takes one value: {join_shell(group.words)!r}")
        raw = group.values[0]
        if _catalog_by_flag().get(resolved or "", {}).get("type") == "human_readable_int":
            try:
                fields[name] = human_readable_int(raw)
            except ValueError as exc:
                raise ConfigError(f"{group.flag} ({name}): {exc}") from None
        else:
            fields[name] = raw
        given.setdefault(name, []).append(raw)
        spelling = field_flag(name, sglang_version)
        if resolved != spelling and resolved in field_flags(name):
            notes.append(f"{resolved} is spelled {spelling} in SGLang {sglang_version}")
    for name, raws in given.items():
        if len(raws) > 1:
            notes.append(
                f"{name} given {len(raws)} times ({', '.join(raws)}); the last wins, as in argparse"
            )
    return LaunchLine(tuple(launcher), fields, tuple(extra), tuple(notes))
