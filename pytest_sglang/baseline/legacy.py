"""Baselines of the old layout, keyed by the workload's name alone: re-keyed or refused.

Why: before the workload digest, ``baselines/<config>/single-stream/<fingerprint>.json`` held the
runs of every single-stream workload, whatever their output length or API. Each run kept its
``workload_spec`` (:meth:`~pytest_sglang.bench.workload.Workload.describe`) and ``bench_from``
in ``extra_info``; when they say every parameter of the canonical form, the run's digest is
rebuilt and the run belongs to that workload's new key. What the old spec did not store is taken
at the default of its time: random prompts' seed 0, no SLO. A run whose prompts came from a file
or a list (the old spec kept only its name, not its content) or that lacks the spec cannot be
placed: when nothing else matches, the comparison is refused with the line that re-records it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..bench.identity import CANONICAL_VERSION, canonical_digest
from .store import BaselineKey, BaselineStore, StoredBaseline

__all__ = ["LegacyFile", "legacy_digest", "read_legacy", "rekey"]

_RANDOM = re.compile(r"^random-(\d+)(?:-(\d+))?$")
_GAMMA = re.compile(r"^gamma\((.+)\)$")
_FIELDS = (
    "kind",
    "num_requests",
    "output_tokens",
    "concurrency",
    "request_rate",
    "api",
    "temperature",
    "ignore_eos",
    "warmup_requests",
    "seed",
)


def _burstiness(arrivals: object, rated: bool) -> object:
    """The burstiness that ``Workload.arrivals`` described; ``...`` when it cannot say."""
    if not rated:
        return None if arrivals == "all at once" else ...
    if arrivals == "poisson":
        return 1.0
    if arrivals == "constant":
        return "inf"
    m = _GAMMA.match(str(arrivals))
    try:
        return float(m.group(1)) if m else ...
    except ValueError:
        return ...


def legacy_digest(info: Mapping[str, Any]) -> tuple[str, str] | None:
    """(workload name, digest) of an old run from its ``extra_info``; None when it does not say
    every parameter of the canonical form."""
    spec = info.get("workload_spec")
    bench_from = info.get("bench_from")
    if not isinstance(spec, Mapping) or not isinstance(bench_from, str) or not bench_from:
        return None
    if any(name not in spec for name in (*_FIELDS, "name", "prompts", "arrivals")):
        return None
    m = _RANDOM.match(str(spec["prompts"]))
    burstiness = _burstiness(spec["arrivals"], spec["request_rate"] is not None)
    if m is None or burstiness is ...:
        return None
    low = int(m.group(1))
    high = int(m.group(2)) if m.group(2) else low
    form: dict[str, Any] = {name: spec[name] for name in _FIELDS}
    form.update(
        version=CANONICAL_VERSION,
        prompts={"source": "random", "length": [low, high], "seed": 0},
        burstiness=burstiness,
    )
    slo = info.get("slo", "")
    whole = {"workload": form, "bench_from": bench_from, "slo": slo if isinstance(slo, str) else ""}
    return str(spec["name"]), canonical_digest(whole)


@dataclass
class LegacyFile:
    """An old-layout file: its runs by rebuilt (name, digest), and the runs that say neither."""

    stored: StoredBaseline
    groups: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)
    unknown: int = 0

    def runs_of(self, digest: str) -> list[dict[str, Any]]:
        return [run for (_, d), runs in self.groups.items() if d == digest for run in runs]

    def baseline_of(self, digest: str) -> StoredBaseline | None:
        """The old runs of this workload, as a baseline read from the old file."""
        runs = self.runs_of(digest)
        return StoredBaseline(self.stored.path, self.stored.machine_info, runs) if runs else None


def read_legacy(store: BaselineStore, key: BaselineKey) -> LegacyFile | None:
    """The old-layout file of ``key`` (same config, name and fingerprint), grouped; None if
    there is none."""
    path = store.path(key.legacy)
    if not key.workload_digest or not path.is_file():
        return None
    legacy = LegacyFile(store.read(path))
    for run in legacy.stored.runs:
        info = run.get("extra_info")
        found = legacy_digest(info) if isinstance(info, Mapping) else None
        if found is None:
            legacy.unknown += 1
        else:
            legacy.groups.setdefault(found, []).append(run)
    return legacy


def rekey(store: BaselineStore, key: BaselineKey, legacy: LegacyFile, version: str) -> Path:
    """Move every placed run of the old file to its workload's new key (before the runs already
    there) and delete the old file; the runs that could not be placed go with it (git keeps
    them). Returns the old file's path."""
    for (name, digest), runs in legacy.groups.items():
        new = BaselineKey(key.config_id, key.config_digest, name, key.fingerprint_digest, digest)
        there = store.load(new)
        runs = [*runs, *(there.runs if there else [])]
        store.write(new, legacy.stored.fingerprint, runs, version)
    legacy.stored.path.unlink(missing_ok=True)
    return legacy.stored.path
