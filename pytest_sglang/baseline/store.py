"""The baseline store: pytest-benchmark JSON files, one per (config, workload, fingerprint).

Layout (users commit it next to their scenarios)::

    baselines/<config_id>-<config digest>/<workload>-<workload digest>/<fingerprint digest>.json

The workload digest (:mod:`pytest_sglang.bench.identity`) is the key; the name is for people.
Files of the old layout, keyed by the name alone (``<workload name>/``), are re-keyed or refused
by :mod:`.legacy`.

Why pytest-benchmark's own format: ``pytest-benchmark compare baselines/.../*.json`` and every
tool that reads ``--benchmark-json`` output work on the baselines as they are. Each file is one
such document: ``machine_info`` holds the fingerprint (plus its digest) and the server
settings in effect of the latest run (``sglang_server_args``: the ``server_args`` its startup
journal logged and the plugin verified), ``commit_info`` the latest run's commit, ``benchmarks``
every saved run of the key, oldest first, each a regular benchmark entry (``name``,
``fullname``, ``stats`` with min/max/mean/stddev/rounds/median/... over the rounds' wall times,
and ``extra_info`` with our figures, ``metrics_version`` (the version of their definitions, see
:mod:`pytest_sglang.bench.metrics`), ``rounds_values``: every gated metric per round, which the
significance test needs, ``commit_info`` and ``server_args_digest``).

Why every run is kept: a gate compares with the last N (``history``), but finding *where* a
metric stepped (:mod:`.history`) needs the whole series. A run is a few kilobytes; the settings
(about 20 kB of ``server_args``) are kept once per file, and per run only as a digest.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import BaselineError

__all__ = ["BaselineError", "BaselineKey", "BaselineStore", "StoredBaseline", "round_stats"]


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
#: Characters of the workload digest in a folder name (as many as of the config digest).
WORKLOAD_DIGEST_CHARS = 12


def _safe(text: str) -> str:
    return _UNSAFE.sub("_", text).strip("._") or "_"


@dataclass(frozen=True)
class BaselineKey:
    """What a baseline is for: a config (id and digest), a workload (its readable name and its
    digest), a host fingerprint. An empty ``workload_digest`` is the old layout, keyed by the
    name alone (still how quality baselines are kept)."""

    config_id: str
    config_digest: str
    workload: str
    fingerprint_digest: str
    workload_digest: str = ""

    @property
    def config_folder(self) -> Path:
        return Path(f"{_safe(self.config_id)}-{self.config_digest[:12]}")

    @property
    def folder(self) -> Path:
        name = _safe(self.workload)
        if self.workload_digest:
            name = f"{name}-{self.workload_digest[:WORKLOAD_DIGEST_CHARS]}"
        return self.config_folder / name

    @property
    def legacy(self) -> BaselineKey:
        """The same key in the old layout (the workload's name alone)."""
        return BaselineKey(
            self.config_id, self.config_digest, self.workload, self.fingerprint_digest
        )

    @property
    def relpath(self) -> Path:
        return self.folder / f"{self.fingerprint_digest}.json"


@dataclass
class StoredBaseline:
    """One file: the fingerprint it was measured on and its runs (oldest first)."""

    path: Path
    machine_info: dict[str, Any]
    runs: list[dict[str, Any]]

    @property
    def fingerprint(self) -> dict[str, Any]:
        fp = self.machine_info.get("sglang_fingerprint", {})
        return fp if isinstance(fp, dict) else {}

    @property
    def settings(self) -> dict[str, Any] | None:
        """The server settings in effect of the latest run (None: saved before they were)."""
        args = self.machine_info.get("sglang_server_args")
        return args if isinstance(args, dict) else None

    @property
    def saved_at(self) -> str:
        """When the latest run was saved (ISO 8601, UTC; "" when it does not say)."""
        info = self.runs[-1].get("extra_info", {}) if self.runs else {}
        at = info.get("saved_at", "") if isinstance(info, dict) else ""
        return at if isinstance(at, str) else ""

    def latest(self, n: int) -> StoredBaseline:
        """The last ``n`` runs: what a gate compares with (the file keeps them all)."""
        return StoredBaseline(self.path, self.machine_info, self.runs[-n:] if n > 0 else [])

    @property
    def metrics_version(self) -> int:
        """The metric definitions' version of the latest run (1: saved before it was stored)."""
        info = self.runs[-1].get("extra_info", {}) if self.runs else {}
        version = info.get("metrics_version", 1) if isinstance(info, dict) else 1
        return version if isinstance(version, int) else 1

    def without_session(self, session: str) -> StoredBaseline:
        """The runs saved before this session: a workload measured by two tests of one session
        is never gated against what the session itself saved minutes earlier."""
        kept = [r for r in self.runs if (r.get("extra_info") or {}).get("session") != session]
        return StoredBaseline(self.path, self.machine_info, kept)

    def values(self, metric: str) -> list[float]:
        """Every stored per-round value of ``metric``, across the stored runs."""
        out: list[float] = []
        for run in self.runs:
            info = run.get("extra_info", {})
            per_round = info.get("rounds_values", {}).get(metric)
            if isinstance(per_round, list) and per_round:
                out.extend(float(v) for v in per_round if isinstance(v, (int, float)))
            elif isinstance(info.get(metric), (int, float)):
                out.append(float(info[metric]))
        return out


def round_stats(durations: list[float]) -> dict[str, Any]:
    """pytest-benchmark's ``stats`` block for these round times, computed by its own Stats."""
    from pytest_benchmark.stats import Stats

    stats: Any = Stats()  # type: ignore[no-untyped-call]
    for d in durations:
        stats.update(d)
    out: dict[str, Any] = stats.as_dict()
    out["data"] = list(durations)
    out["iterations"] = 1
    return out


class BaselineStore:
    """Reads and writes baseline files under ``root``; keeps every run, and a gate compares
    with the last ``history`` of them."""

    def __init__(self, root: Path, history: int = 10) -> None:
        self.root = root
        self.history = history

    def path(self, key: BaselineKey) -> Path:
        return self.root / key.relpath

    def read(self, path: Path) -> StoredBaseline:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise BaselineError(
                f"baseline {path}: cannot read it ({exc}); fix or delete the file"
            ) from None
        runs = data.get("benchmarks") if isinstance(data, dict) else None
        if not isinstance(runs, list):
            raise BaselineError(
                f"baseline {path}: not a pytest-benchmark JSON file (no 'benchmarks' list); "
                "fix or delete the file"
            )
        machine_info = data.get("machine_info") or {}
        return StoredBaseline(path, machine_info if isinstance(machine_info, dict) else {}, runs)

    def load(self, key: BaselineKey) -> StoredBaseline | None:
        path = self.path(key)
        return self.read(path) if path.is_file() else None

    def others(self, key: BaselineKey) -> list[StoredBaseline]:
        """Baselines of the same config and workload measured on another fingerprint."""
        folder = self.root / key.folder
        if not folder.is_dir():
            return []
        mine = self.path(key)
        return [self.read(p) for p in sorted(folder.glob("*.json")) if p != mine]

    def save(
        self,
        key: BaselineKey,
        fingerprint: dict[str, Any],
        entry: dict[str, Any],
        *,
        version: str = "",
        replace: bool = False,
        settings: dict[str, Any] | None = None,
    ) -> Path:
        """Append ``entry`` (a pytest-benchmark benchmark dict) to the key's file; ``replace``
        drops the runs stored before (another version of the metric definitions). ``settings``
        (the run's server settings in effect) replace the file's; None keeps them."""
        stored = self.load(key)
        if settings is None and stored is not None:
            settings = stored.settings
        runs = [] if replace or stored is None else stored.runs
        return self.write(key, fingerprint, [*runs, entry], version, settings=settings)

    def write(
        self,
        key: BaselineKey,
        fingerprint: dict[str, Any],
        runs: list[dict[str, Any]],
        version: str,
        *,
        settings: dict[str, Any] | None = None,
    ) -> Path:
        """Write the key's file with these runs (all of them)."""
        path = self.path(key)
        now = dt.datetime.now(dt.timezone.utc).isoformat()
        machine_info: dict[str, Any] = {
            "node": str(fingerprint.get("host", "")),
            "sglang_fingerprint": fingerprint,
            "sglang_fingerprint_digest": key.fingerprint_digest,
        }
        if settings is not None:
            machine_info["sglang_server_args"] = settings
        last = runs[-1].get("extra_info", {}) if runs else {}
        commit = last.get("commit_info") if isinstance(last, dict) else None
        document = {
            "machine_info": machine_info,
            "commit_info": commit if isinstance(commit, dict) else {},
            "benchmarks": runs,
            "datetime": now,
            "version": version,
        }
        text = json.dumps(document, indent=2, sort_keys=False, default=str) + "\n"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".tmp{os.getpid()}")
            tmp.write_text(text, encoding="utf-8")
            tmp.replace(path)
        except OSError as exc:
            raise BaselineError(
                f"baseline {path}: cannot write it ({exc.strerror}); check "
                "--sglang-baseline-dir and its permissions"
            ) from None
        return path
