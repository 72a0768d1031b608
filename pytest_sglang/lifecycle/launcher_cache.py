"""The launcher's identity, and its ``--help`` flags cached across sessions on this machine.

Why: real SGLang's ``--help`` imports torch and takes 5-15 s on a GPU host, once per session,
every session, although the answer changes only when SGLang (or the interpreter) does. So one
cheap command reads the launcher's identity (the interpreter's real path, the SGLang version,
and a stamp of the installed package's files: their paths, sizes and mtimes) without importing
torch; the flags ``--help`` listed are kept under ``~/.cache/pytest-sglang/probes/`` (or
``$PYTEST_SGLANG_CACHE_DIR``, ``$XDG_CACHE_HOME/pytest-sglang``) under a digest of the host, the
launcher, its environment and that identity. A session whose launcher is unchanged skips
``--help``; an upgrade, a reinstall or an edited package misses the cache; ``--sglang-refresh``
ignores it. Only digests are stored of the launcher and its environment (they may hold
secrets); the files say which host they describe.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "CACHE_ENV",
    "Identity",
    "LauncherFacts",
    "cache_dir",
    "identity_code",
    "load",
    "parse_identity",
    "save",
    "version_code",
]

#: Overrides where the cache lives (tests point it at a temporary directory).
CACHE_ENV = "PYTEST_SGLANG_CACHE_DIR"
_FORMAT = 2

# Runs in the launcher's interpreter and prints the identity as one JSON line. It imports
# nothing of SGLang (nor torch, nor the simulator): the package is found, never imported.
_STAMP = """
import hashlib, importlib.util, json, os, sys
spec = importlib.util.find_spec({package!r})
root = os.path.dirname(spec.origin) if spec and spec.origin else ""
h = hashlib.sha256()
for top, dirs, files in os.walk(root):
    dirs.sort()
    for name in sorted(files):
        if name.endswith((".py", ".json", ".so")):
            st = os.stat(os.path.join(top, name))
            h.update(f"{{top}}/{{name}} {{st.st_size}} {{st.st_mtime_ns}}\\n".encode())
print(json.dumps({{"python": os.path.realpath(sys.executable) + " " + sys.prefix,
                  "stamp": h.hexdigest()}}))
"""
_SGLANG_VERSION = "import importlib.metadata as m; print(m.version('sglang'))"
_SIM_VERSION = "import pytest_sglang.sim as s; print(s.emulated_version())"


def identity_code(simulator: bool) -> str:
    """The ``python -c`` program that prints the launcher's identity (cheap: no import)."""
    return _STAMP.format(package="pytest_sglang" if simulator else "sglang")


def version_code(simulator: bool) -> str:
    """The ``python -c`` program that prints the SGLang version (the simulator's is code)."""
    return _SIM_VERSION if simulator else _SGLANG_VERSION


@dataclass(frozen=True)
class Identity:
    """What the launcher runs: its interpreter (and environment) and its package's stamp."""

    python: str
    stamp: str

    def as_json(self) -> dict[str, str]:
        return {"python": self.python, "stamp": self.stamp}


def parse_identity(stdout: str) -> Identity | None:
    """The identity from the program's output; None when it is missing or unreadable (an odd
    interpreter: then nothing is cached across sessions)."""
    lines = [line.strip() for line in stdout.strip().splitlines() if line.strip()]
    if lines and lines[-1].startswith("{"):
        with contextlib.suppress(ValueError, KeyError, TypeError):
            data = json.loads(lines[-1])
            return Identity(str(data["python"]), str(data["stamp"]))
    return None


@dataclass(frozen=True)
class LauncherFacts:
    """What an earlier session learned about a launcher: its version, its ``--help`` flags."""

    version: str | None = None
    flags: frozenset[str] | None = None


def cache_dir() -> Path:
    """Where probe results live on this machine."""
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pytest-sglang"


def _digest(key: tuple[Any, ...], identity: Identity) -> str:
    text = json.dumps([list(map(str, key)), identity.as_json()], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _path(key: tuple[Any, ...], identity: Identity) -> Path:
    return cache_dir() / "probes" / f"{_digest(key, identity)}.json"


def load(key: tuple[Any, ...], identity: Identity) -> LauncherFacts:
    """What a previous session stored for this launcher; an unreadable entry is empty (it is
    rewritten)."""
    try:
        data = json.loads(_path(key, identity).read_text())
    except (OSError, ValueError):
        return LauncherFacts()
    if not isinstance(data, dict) or data.get("format") != _FORMAT:
        return LauncherFacts()
    version = data.get("version")
    flags = data.get("flags")
    return LauncherFacts(
        version=version if isinstance(version, str) and version else None,
        flags=(
            frozenset(flags)
            if isinstance(flags, list) and flags and all(isinstance(f, str) for f in flags)
            else None
        ),
    )


def save(key: tuple[Any, ...], identity: Identity, host: str, probed: LauncherFacts) -> None:
    """Keep what was learned for later sessions (atomically; a cache that cannot be written is
    only slower, never an error)."""
    path = _path(key, identity)
    record = {
        "format": _FORMAT,
        "host": host,
        "identity": identity.as_json(),
        "saved": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "version": probed.version,
        "flags": sorted(probed.flags) if probed.flags is not None else None,
    }
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        try:
            with os.fdopen(fd, "w") as handle:
                json.dump(record, handle, indent=1)
            os.replace(tmp, path)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
