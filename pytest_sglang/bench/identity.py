"""A workload's identity: its canonical form and digest, and where its load came from.

Why a digest and not the name: ``single-stream`` names every one-request-at-a-time workload,
whatever its output length, API or prompts, and a baseline or a ranking keyed by it compares a
128-token chat run with a 512-token generate run. The identity is every parameter that changes
the figures (:meth:`~.workload.Workload.canonical`), plus what the run added to them: the path
the load came from (``bench_from``: a forward measures the link too) and the SLO that goodput
is counted against. The readable name stays, for people.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ..errors import ConfigError

__all__ = [
    "CANONICAL_VERSION",
    "WorkloadIdentity",
    "canonical_digest",
    "file_sha256",
    "identify",
    "text_sha256",
]

#: The version of the canonical form; a change of its fields changes every digest, on purpose.
CANONICAL_VERSION = 1
#: Digest characters kept (64 bits: no two workloads of one project collide).
DIGEST_CHARS = 16


class _Canonical(Protocol):
    @property
    def name(self) -> str: ...

    def canonical(self) -> dict[str, object]: ...


def canonical_digest(form: Mapping[str, Any]) -> str:
    """A short, stable digest of a canonical form (key order does not matter)."""
    text = json.dumps(form, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:DIGEST_CHARS]


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def file_sha256(path: Path) -> str:
    """The content digest of a prompt file, hashed once per (path, size, mtime): the usual
    ShareGPT file is ~650 MB and every benchmark asks for its workload's identity."""
    try:
        stat = path.stat()
    except OSError as exc:
        raise ConfigError(f"prompt file {path}: cannot read it: {exc.strerror}") from None
    return _hash_file(str(path), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=64)
def _hash_file(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        raise ConfigError(f"prompt file {path}: cannot read it: {exc.strerror}") from None
    return digest.hexdigest()


@dataclass(frozen=True)
class WorkloadIdentity:
    """``name`` for people, ``form`` (canonical JSON text) and its ``digest`` for the keys."""

    name: str
    form: str
    digest: str

    @property
    def canonical(self) -> dict[str, Any]:
        value: dict[str, Any] = json.loads(self.form)
        return value

    def as_info(self) -> dict[str, Any]:
        """What ``extra_info`` (and so a saved baseline) keeps of it."""
        return {"workload_key": self.digest, "workload_canonical": self.canonical}


def identify(workload: _Canonical, *, bench_from: str = "", slo: str = "") -> WorkloadIdentity:
    """The identity of ``workload`` as run from ``bench_from`` (host, direct, forward), with
    goodput counted against ``slo`` ("" when none)."""
    form = {"workload": workload.canonical(), "bench_from": bench_from, "slo": slo}
    text = json.dumps(form, sort_keys=True, separators=(",", ":"))
    return WorkloadIdentity(workload.name, text, canonical_digest(form))
