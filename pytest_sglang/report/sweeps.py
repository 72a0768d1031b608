"""Which benchmark runs form a sweep, and along which parameter.

A sweep is two or more runs of the same test function on the same host whose configs or test
parameters differ. The swept parameter is what differs: a config field
(``speculative_num_steps``) or a test parameter (``concurrency``). When several things differ at
once the points are labelled by config id in run order, since no single axis describes them.

A sweep compares one workload: when no test parameter varies, runs of different workloads
(``workload_key``: one test that builds its workload from the config) are separate sweeps, so
that a config measured with 64-token answers is never drawn beside one measured with 128-token
ones. When a test parameter varies, the workload follows it (``concurrency``) and is the axis.

A config is its digest (``config_digest``): runs of one test with the same parameters under two
names of one config are one point (the last run), named by both (:mod:`.config_names`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .config_names import config_key, label
from .records import BenchRecord

__all__ = ["Sweep", "SweepPoint", "find_sweeps"]


@dataclass(frozen=True)
class SweepPoint:
    """One run in a sweep: its value of the swept parameter and its record; ``names``: every
    name its config (one digest) ran under in this sweep (empty: the record's alone)."""

    value: Any
    label: str
    record: BenchRecord
    names: tuple[str, ...] = ()

    @property
    def config(self) -> str:
        """The config as the sweep shows it: ``production-s3 = eagle-s3-k1-tp4``."""
        return label(self.names or (self.record.config_id,))


@dataclass(frozen=True)
class Sweep:
    """Runs of ``test`` on ``host`` along ``parameter``; ``numeric``: all values are numbers."""

    test: str
    host: str
    parameter: str
    points: tuple[SweepPoint, ...]

    @property
    def numeric(self) -> bool:
        return all(
            isinstance(p.value, (int, float)) and not isinstance(p.value, bool) for p in self.points
        )

    @property
    def title(self) -> str:
        name = self.test.rsplit("::", 1)[-1]
        return f"{name} on {self.host}: sweep of {self.parameter}"

    @property
    def slug(self) -> str:
        """A file-name-safe id (``test_single_stream_decode-speculative_num_steps``)."""
        name = self.test.rsplit("::", 1)[-1]
        raw = f"{name}-{self.parameter}"
        return "".join(c if c.isalnum() or c in "-_." else "_" for c in raw)


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _point_of(record: BenchRecord) -> dict[str, Any]:
    point = {k: v for k, v in record.tuned.items() if k not in ("host", "port")}
    point.update({f"param:{k}": v for k, v in record.params.items()})
    return point


def _by_workload(runs: list[BenchRecord]) -> list[list[BenchRecord]]:
    """``runs`` split by workload when no test parameter varies among them (see above)."""
    if len({_key(r.params) for r in runs}) > 1:
        return [runs]
    split: dict[str, list[BenchRecord]] = {}
    for run in runs:
        split.setdefault(str(run.info.get("workload_key", "")), []).append(run)
    return list(split.values())


def find_sweeps(records: list[BenchRecord]) -> list[Sweep]:
    """The sweeps among ``records``, in the order their tests first ran."""
    groups: dict[tuple[str, str], list[BenchRecord]] = {}
    for record in records:
        groups.setdefault((record.test, record.host), []).append(record)
    sweeps: list[Sweep] = []
    for (test, host), all_runs in groups.items():
        for runs in _by_workload(all_runs):
            sweeps.extend(_sweep(test, host, runs))
    return sweeps


def _one_per_config(runs: list[BenchRecord]) -> tuple[list[BenchRecord], list[tuple[str, ...]]]:
    """The last run of each config (digest) and test parameters, with the config's names."""
    merged: dict[tuple[str, str, str], tuple[tuple[str, ...], BenchRecord]] = {}
    for run in runs:
        key = (config_key(run.info), _key(run.params), _key(run.tuned))
        names = merged[key][0] if key in merged else ()
        merged[key] = (names if run.config_id in names else (*names, run.config_id), run)
    return [run for _, run in merged.values()], [names for names, _ in merged.values()]


def _sweep(test: str, host: str, all_runs: list[BenchRecord]) -> list[Sweep]:
    """The sweep of these runs of one test on one host ([] when they are not one)."""
    runs, aliases = _one_per_config(all_runs)
    if len(runs) < 2:
        return []
    points = [_point_of(r) for r in runs]
    names = list(dict.fromkeys(name for p in points for name in p))
    varying = [n for n in names if len({_key(p.get(n)) for p in points}) > 1]
    if not varying:
        return []  # the same point repeated: not a sweep
    if len(varying) == 1:
        name = varying[0]
        parameter = name.removeprefix("param:")
        built = [
            SweepPoint(value=p.get(name), label=f"{p.get(name)}", record=r, names=n)
            for p, r, n in zip(points, runs, aliases)
        ]
    else:
        parameter = "config"
        built = [
            SweepPoint(value=r.config_id, label=label(n), record=r, names=n)
            for r, n in zip(runs, aliases)
        ]
    sweep = Sweep(test=test, host=host, parameter=parameter, points=tuple(built))
    if sweep.numeric:
        ordered = sorted(sweep.points, key=lambda p: float(p.value))
        sweep = Sweep(test=test, host=host, parameter=parameter, points=tuple(ordered))
    return [sweep]
