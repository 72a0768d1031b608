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
    "cache_dir",
    "identity_code",
    "load_flags",
    "parse_identity",
    "save_flags",
]

#: Overrides where the cache lives (tests point it at a temporary directory).
CACHE_ENV = "PYTEST_SGLANG_CACHE_DIR"
_FORMAT = 1

# Runs in the launcher's interpreter: prints the version line, then one JSON line with the
# identity. The version part fails exactly as before (a missing sglang names itself), and
# nothing here imports torch: the package is found, never imported (the simulator excepted,
# whose emulated version is code).
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
                  "root": root, "stamp": h.hexdigest(), "version": version}}))
"""
_SGLANG_VERSION = "import importlib.metadata as m; version = m.version('sglang'); print(version)"
_SIM_VERSION = "import pytest_sglang.sim as s; version = s.emulated_version(); print(version)"


def identity_code(simulator: bool) -> str:
    """The ``python -c`` program that prints the version, then the identity as JSON."""
    if simulator:
        return _SIM_VERSION + "\n" + _STAMP.format(package="pytest_sglang")
    return _SGLANG_VERSION + "\n" + _STAMP.format(package="sglang")


@dataclass(frozen=True)
class Identity:
    """What the launcher runs: its interpreter, SGLang version and package stamp."""

    python: str
    version: str
    stamp: str

    def as_json(self) -> dict[str, str]:
        return {"python": self.python, "version": self.version, "stamp": self.stamp}


def parse_identity(stdout: str) -> tuple[str, Identity | None]:
    """(version, identity) from the program's output; the identity is None when its line is
    missing or unreadable (an odd interpreter): the version alone still counts."""
    lines = [line.strip() for line in stdout.strip().splitlines() if line.strip()]
    identity: Identity | None = None
    if lines and lines[-1].startswith("{"):
        with contextlib.suppress(ValueError, KeyError, TypeError):
            data = json.loads(lines.pop())
            identity = Identity(str(data["python"]), str(data["version"]), str(data["stamp"]))
    return (lines[-1] if lines else ""), identity


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


def load_flags(key: tuple[Any, ...], identity: Identity) -> frozenset[str] | None:
    """The flags a previous session's ``--help`` listed for this launcher, if any; an
    unreadable entry is a miss (it is rewritten)."""
    try:
        data = json.loads(_path(key, identity).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("format") != _FORMAT:
        return None
    flags = data.get("flags")
    if not isinstance(flags, list) or not flags or not all(isinstance(f, str) for f in flags):
        return None
    return frozenset(flags)


def save_flags(key: tuple[Any, ...], identity: Identity, host: str, flags: frozenset[str]) -> None:
    """Keep ``flags`` for later sessions (atomically; a cache that cannot be written is only
    slower, never an error)."""
    path = _path(key, identity)
    record = {
        "format": _FORMAT,
        "host": host,
        "identity": identity.as_json(),
        "saved": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "flags": sorted(flags),
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
