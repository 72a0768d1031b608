"""A metric's history per benchmark, across upgrades, and the steps in it.

A benchmark's runs are spread over several files: one per fingerprint, and every upgrade of the
software makes a new fingerprint (:mod:`.upgrade`). A history is every run of one config and
workload (one folder of the store) measured on one machine and model (the fingerprint less its
software fields, :func:`~.fingerprint.hardware_of`), in the order they were saved, each with the
software it ran and the commit of the tests. :func:`.changepoint.change_points` then says where
the metric stepped, and the runs on either side say what changed there.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import BaselineError
from .changepoint import DEFAULT_MIN_SIZE, ChangePoint, change_points
from .fingerprint import SOFTWARE_FIELDS, hardware_of, software_label
from .gates import DEFAULT_ALPHA, DEFAULT_NOISE_FLOOR
from .stats import mean
from .store import BaselineStore

__all__ = ["History", "Run", "describe_run", "histories"]


@dataclass(frozen=True)
class Run:
    """One stored run: its value of the metric (the mean of its rounds) and where it came from."""

    saved_at: str
    value: float
    rounds: int
    software: dict[str, Any]
    commit: dict[str, Any]
    path: Path
    upgrade: dict[str, Any] | None = None


@dataclass
class History:
    """The runs of one benchmark on one machine, oldest first."""

    folder: str
    hardware: dict[str, Any]
    metric: str
    runs: list[Run] = field(default_factory=list)

    @property
    def values(self) -> list[float]:
        return [r.value for r in self.runs]

    def steps(
        self,
        *,
        alpha: float = DEFAULT_ALPHA,
        min_size: int = DEFAULT_MIN_SIZE,
        floor: float = DEFAULT_NOISE_FLOOR,
    ) -> list[ChangePoint]:
        return change_points(self.values, alpha=alpha, min_size=min_size, floor=floor)

    def as_dict(self, steps: Iterable[ChangePoint] = ()) -> dict[str, Any]:
        return {
            "folder": self.folder,
            "hardware": self.hardware,
            "metric": self.metric,
            "runs": [
                {
                    "saved_at": r.saved_at,
                    "value": r.value,
                    "rounds": r.rounds,
                    "software": r.software,
                    "commit": r.commit,
                    "file": str(r.path),
                    **({"upgrade": r.upgrade} if r.upgrade else {}),
                }
                for r in self.runs
            ],
            "steps": [
                {
                    "index": s.index,
                    "before": s.before,
                    "after": s.after,
                    "delta_pct": round(s.delta_pct, 3),
                    "p_value": s.p_value,
                    "splits": s.splits,
                    "last_before": describe_run(self.runs[s.index - 1]),
                    "first_after": describe_run(self.runs[s.index]),
                }
                for s in steps
            ],
        }


def _run_value(info: Mapping[str, Any], metric: str) -> tuple[float, int] | None:
    per_round = (info.get("rounds_values") or {}).get(metric)
    if isinstance(per_round, list):
        numbers = [float(v) for v in per_round if isinstance(v, (int, float))]
        if numbers:
            return mean(numbers), len(numbers)
    value = info.get(metric)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value), 1
    return None


def _files(root: Path) -> list[Path]:
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise BaselineError(
            f"{root}: no such baseline directory or file; give --sglang-baseline-dir"
        )
    return sorted(p for p in root.rglob("*.json") if not p.name.startswith("."))


def histories(root: Path, metric: str) -> list[History]:
    """Every history of ``metric`` under ``root`` (the store, a config's or a workload's folder,
    or one file); files that are not baselines are skipped, runs without the metric too."""
    store = BaselineStore(root if root.is_dir() else root.parent)
    groups: dict[tuple[str, str], History] = {}
    for path in _files(root):
        try:
            stored = store.read(path)
        except BaselineError:
            continue
        fingerprint = stored.fingerprint
        if not fingerprint:
            continue
        hardware = hardware_of(fingerprint)
        software = {f: fingerprint[f] for f in SOFTWARE_FIELDS if f in fingerprint}
        try:
            folder = str(path.parent.relative_to(root))
        except ValueError:
            folder = path.parent.name
        where = (folder, json.dumps(hardware, sort_keys=True, default=str))
        history = groups.setdefault(where, History(folder, hardware, metric))
        for run in stored.runs:
            info = run.get("extra_info") if isinstance(run, dict) else None
            if not isinstance(info, dict):
                continue
            found = _run_value(info, metric)
            if found is None:
                continue
            commit = info.get("commit_info")
            upgrade = info.get("upgrade")
            history.runs.append(
                Run(
                    saved_at=str(info.get("saved_at") or ""),
                    value=found[0],
                    rounds=found[1],
                    software=software,
                    commit=commit if isinstance(commit, dict) else {},
                    path=path,
                    upgrade=upgrade if isinstance(upgrade, dict) else None,
                )
            )
    out = [h for h in groups.values() if h.runs]
    for h in out:
        h.runs.sort(key=lambda r: r.saved_at)  # stable: a file's runs stay in their order
    return sorted(out, key=lambda h: h.folder)


def describe_run(run: Run) -> str:
    """``SGLang 0.5.23, torch 2.9.1, commit 1a2b3c4d5e6f (main), saved 2025-06-01T10:00``."""
    parts = [f"{software_label(k)} {v}" for k, v in run.software.items() if v not in ("", None)]
    commit_id = str(run.commit.get("id") or "")
    if commit_id:
        branch = run.commit.get("branch")
        dirty = "+dirty" if run.commit.get("dirty") else ""
        parts.append(f"commit {commit_id[:12]}{dirty}" + (f" ({branch})" if branch else ""))
    if run.saved_at:
        parts.append(f"saved {run.saved_at[:16]}")
    if run.upgrade and run.upgrade.get("accepted"):
        parts.append(f"upgrade accepted by {run.upgrade.get('by', '?')}")
    return ", ".join(parts) or "no details stored"
