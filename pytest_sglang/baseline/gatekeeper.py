"""The session's baseline work: compare each benchmark with its stored runs, confirm, save.

``Gatekeeper`` is a plain class (kept in ``config.stash`` by the plugin) so that the flow reads
in one place; the ``sglang_bench`` fixture calls :meth:`Gatekeeper.check` after every run:

1. the fingerprint of the deployment's host (once per deployment, through the hooks);
2. the last ``--sglang-baseline-history`` stored runs for (fingerprint, config, workload
   digest), less the runs this session saved itself (two tests that measure one workload are
   never gated against each other); an old-layout file keyed by the workload's name alone is
   re-keyed or refused (:mod:`.legacy`); none, but a stored fingerprint that differs in
   software only -> an upgrade comparison against it (:mod:`.upgrade`); a config on a named
   launcher whose config and workload ran earlier in this session on another of the host's
   launchers (another release: a ``sweep(..., launcher=[...])``) -> an upgrade comparison
   against that run, before any stored baseline; none at all ->
   ``missing``; only for another machine or model -> ``skipped`` with the fields that differ;
   ``--sglang-baseline-require`` turns both into a failure; runs of another version of the
   metric definitions -> a one-line failure saying to re-record (``--sglang-baseline-save``
   replaces them);
3. every enabled gate decided on the per-round values (:func:`.gates.decide`); a regression
   re-runs the workload ``--sglang-confirm`` times, pooling the rounds, before it stands;
4. the rows recorded (terminal table, summary, JUnit properties; after an upgrade each row
   carries ``upgrade``: the one-line summary, the versions and the settings in effect that
   changed) and, with ``--sglang-baseline-save``, the run appended to the store unless it
   regressed; ``--sglang-baseline-accept-upgrade`` saves an upgrade's run even so, with the
   record of who accepted what.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..bench.metrics import METRICS_VERSION
from ..errors import BaselineError
from .fingerprint import diff_fingerprints, fingerprint_digest, software_changes
from .gates import DEFAULT_ALPHA, DEFAULT_NOISE_FLOOR, Gate, decide, is_quality_metric, known_metric
from .legacy import read_legacy, rekey
from .store import BaselineKey, BaselineStore, StoredBaseline, round_stats
from .upgrade import (
    Upgrade,
    find_upgrade,
    settings_diff,
    settings_digest,
    upgrade_line,
    upgrade_record,
)

if TYPE_CHECKING:
    from ..bench.identity import WorkloadIdentity
    from ..lifecycle.deployment import Deployment

__all__ = ["GateOutcome", "Gatekeeper", "baseline_key", "fmt"]

RoundValues = list[dict[str, Any]]
FingerprintSource = Callable[["Deployment"], dict[str, Any]]
#: Fewer rounds than this leave the test little power (benchmarks/gate_noise.py).
MIN_POWERFUL_ROUNDS = 3


@dataclass
class GateOutcome:
    """What :meth:`Gatekeeper.check` concluded for one benchmark."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    failure: str = ""
    confirm_runs: int = 0

    @property
    def regressed(self) -> bool:
        return any(r["verdict"] == "regression" for r in self.rows)


def baseline_key(
    deployment: Deployment, workload: WorkloadIdentity, fp: dict[str, Any]
) -> BaselineKey:
    """Where a benchmark's baselines are kept: its config less the launcher it ran on (the
    release is in the fingerprint, so the same config on two launchers is an upgrade of one
    history, not two configs), its workload and fingerprint."""
    config = deployment.config.without_launcher()
    return BaselineKey(
        config.id, config.digest, workload.name, fingerprint_digest(fp), workload.digest
    )


def fmt(value: float | None) -> str:
    """A metric value for messages and tables ("-" when there is none)."""
    return "-" if value is None else f"{value:.4g}"


class Gatekeeper:
    """Baseline comparisons and saves for one pytest session."""

    def __init__(
        self,
        store: BaselineStore,
        *,
        gates: Mapping[str, Gate],
        fingerprint_of: FingerprintSource,
        save: bool = False,
        require: bool = False,
        confirm: int = 1,
        alpha: float = DEFAULT_ALPHA,
        floor: float = DEFAULT_NOISE_FLOOR,
        version: str = "",
        session: str = "",
        accept_upgrade: bool = False,
        commit_info: Callable[[], dict[str, Any]] | None = None,
    ) -> None:
        self.store = store
        #: stamped on every run this session saves (shared by the xdist workers of a session)
        self.session = session or uuid.uuid4().hex
        self.gates = dict(gates)
        self.fingerprint_of = fingerprint_of
        self.save = save
        self.require = require
        self.confirm = confirm
        self.alpha = alpha
        self.floor = floor
        self.version = version
        #: save an upgrade's run as the new baseline even when it regressed, with a record
        self.accept_upgrade = accept_upgrade
        self._commit_of = commit_info
        self._commit: dict[str, Any] | None = None
        self.results: list[dict[str, Any]] = []
        self._fingerprints: dict[tuple[str, str], dict[str, Any]] = {}
        #: This session's runs on named launchers, by (host, config less its launcher,
        #: workload): (launcher, the run as a baseline).
        self._releases: dict[tuple[str, str, str], list[tuple[str, StoredBaseline]]] = {}

    def commit_info(self) -> dict[str, Any]:
        """The tests' commit (asked once, at the first save): kept with every saved run."""
        if self._commit is None:
            self._commit = dict(self._commit_of()) if self._commit_of is not None else {}
        return self._commit

    def fingerprint(self, deployment: Deployment) -> dict[str, Any]:
        key = (deployment.host, deployment.config.digest)
        if key not in self._fingerprints:
            self._fingerprints[key] = self.fingerprint_of(deployment)
        return self._fingerprints[key]

    # -- the flow -------------------------------------------------------------------------------
    def check(
        self,
        *,
        nodeid: str,
        name: str,
        deployment: Deployment,
        workload: WorkloadIdentity,
        rounds: RoundValues,
        extra_info: dict[str, Any],
        rerun: Callable[[], RoundValues],
        gates: Mapping[str, Gate] | None = None,
    ) -> GateOutcome:
        """Compare, confirm, record and maybe save; ``outcome.failure`` is the test's verdict."""
        active = {
            m: g for m, g in (gates or self.gates).items() if g.enabled and not is_quality_metric(m)
        }  # quality gates are decided by pytest_sglang.quality on its own measurements
        fp = self.fingerprint(deployment)
        key = baseline_key(deployment, workload, fp)
        stored, note, upgrade, others = self._baseline_for(deployment, workload, key, fp)
        base = dict(
            nodeid=nodeid,
            config_id=deployment.config_id,
            workload=workload.name,
            workload_key=workload.digest,
        )
        outcome = GateOutcome()
        outdated = False
        settings: list[dict[str, Any]] | None = None
        if stored is None:
            outcome.rows = self._unmatched(base, active, key, fp, note, others)
            if self.require and not self.save:
                outcome.failure = "baseline required (--sglang-baseline-require): " + (
                    outcome.rows[0]["reason"] if outcome.rows else "none found"
                )
        elif stored.metrics_version != METRICS_VERSION:
            upgrade, outdated = self._outdated(outcome, base, active, stored, upgrade)
        else:
            rounds, settings = self._judge(
                outcome, base, active, stored, list(rounds), rerun, note, upgrade, deployment
            )
        self._save_or_say(
            outcome,
            key,
            fp,
            nodeid,
            name,
            extra_info,
            rounds,
            active,
            deployment,
            upgrade,
            settings,
            outdated,
        )
        self.results.extend(outcome.rows)
        self._remember(deployment, workload, fp, rounds, extra_info)
        return outcome

    def _baseline_for(
        self,
        deployment: Deployment,
        workload: WorkloadIdentity,
        key: BaselineKey,
        fp: dict[str, Any],
    ) -> tuple[StoredBaseline | None, str, Upgrade | None, list[StoredBaseline]]:
        """What this run is gated against: (stored runs, a note on them, the upgrade it is,
        the stored runs of other fingerprints when there is none)."""
        upgrade: Upgrade | None = self._release(deployment, workload, fp)
        others: list[StoredBaseline] = []
        if upgrade is not None:  # a launcher sweep: gated against the release run before it
            return upgrade.stored, "", upgrade, others
        stored, note = self._stored(key)
        if stored is None:
            upgrade, others = find_upgrade(self.store, key, fp, self.session)
            if upgrade is not None:
                stored = upgrade.stored
        return stored, note, upgrade, others

    def _outdated(
        self,
        outcome: GateOutcome,
        base: dict[str, Any],
        active: Mapping[str, Gate],
        stored: StoredBaseline,
        upgrade: Upgrade | None,
    ) -> tuple[Upgrade | None, bool]:
        """A baseline of older metric definitions is never compared: (the upgrade still in
        play, whether this run replaces the baseline)."""
        old = stored.metrics_version
        if upgrade is not None:
            reason = (
                f"baseline before the upgrade ({upgrade.versions}) {stored.path} holds metric "
                f"definitions v{old}, this plugin measures v{METRICS_VERSION}; not compared"
            )
            outcome.rows = [
                self._row(base, gate, "missing", None, None, None, reason, None)
                for gate in active.values()
            ]
            if self.require and not self.save:
                outcome.failure = f"baseline required (--sglang-baseline-require): {reason}"
            return None, False
        if not self.save:
            raise BaselineError(
                f"baseline {stored.path} holds metric definitions v{old}, this plugin "
                f"measures v{METRICS_VERSION} (docs/metrics.md); not compared: re-record it "
                "with --sglang-baseline-save"
            )
        reason = (
            f"baseline {stored.path} held metric definitions v{old}; re-recorded as "
            f"v{METRICS_VERSION} from this run, not compared"
        )
        outcome.rows = [
            self._row(base, gate, "missing", None, None, None, reason, None)
            for gate in active.values()
        ]
        return None, True

    def _judge(
        self,
        outcome: GateOutcome,
        base: dict[str, Any],
        active: Mapping[str, Gate],
        stored: StoredBaseline,
        values: RoundValues,
        rerun: Callable[[], RoundValues],
        note: str,
        upgrade: Upgrade | None,
        deployment: Deployment,
    ) -> tuple[RoundValues, list[dict[str, Any]] | None]:
        """Compare with the stored runs, re-run to confirm a regression: (every round
        measured, the settings an upgrade changed)."""
        outcome.rows = self._compare(base, active, stored, values)
        while outcome.regressed and outcome.confirm_runs < self.confirm:
            values += rerun()
            outcome.confirm_runs += 1
            outcome.rows = self._compare(base, active, stored, values)
        for row in outcome.rows:  # after the re-runs, whose rows replace the first ones
            row["reason"] += f"; {note}" if note else ""
        settings: list[dict[str, Any]] | None = None
        if upgrade is not None:
            settings = self._settings_changed(upgrade, deployment)
            self._mark_upgrade(outcome, upgrade, settings)
        if outcome.regressed and upgrade is not None and self.accept_upgrade:
            for row in outcome.rows:
                if row["verdict"] == "regression":
                    row["verdict"] = "accepted"
                    row["reason"] += (
                        "; accepted as the new baseline (--sglang-baseline-accept-upgrade)"
                    )
        elif outcome.regressed:
            outcome.failure = self._regression_message(outcome, stored, upgrade)
        return values, settings

    def _save_or_say(
        self,
        outcome: GateOutcome,
        key: BaselineKey,
        fp: dict[str, Any],
        nodeid: str,
        name: str,
        extra_info: dict[str, Any],
        rounds: RoundValues,
        active: Mapping[str, Gate],
        deployment: Deployment,
        upgrade: Upgrade | None,
        settings: list[dict[str, Any]] | None,
        outdated: bool,
    ) -> None:
        """Save the run as a baseline where asked (never a regression, unless an upgrade is
        accepted), or say in each row why it was not."""
        accepting = upgrade is not None and self.accept_upgrade
        if (self.save or accepting) and not outcome.regressed:
            entry = self._entry(nodeid, name, extra_info, rounds, active, deployment)
            if upgrade is not None:
                entry["extra_info"]["upgrade"] = upgrade_record(
                    upgrade, outcome.rows, settings, accepted=accepting
                )
            self.store.save(
                key,
                fp,
                entry,
                version=self.version,
                replace=outdated,
                settings=dict(deployment.server_args) or None,
            )
            for row in outcome.rows:
                row["saved"] = True  # the terminal says how many were saved, and where
        elif self.save:
            hint = (
                "; accept the upgrade's figures with --sglang-baseline-accept-upgrade"
                if upgrade is not None
                else ""
            )
            for row in outcome.rows:
                row["reason"] += f"; not saved as a baseline (it regressed){hint}"

    # -- two releases in one session ------------------------------------------------------------
    @staticmethod
    def _release_key(deployment: Deployment, workload: WorkloadIdentity) -> tuple[str, str, str]:
        return (deployment.host, deployment.config.without_launcher().digest, workload.digest)

    def _remember(
        self,
        deployment: Deployment,
        workload: WorkloadIdentity,
        fp: dict[str, Any],
        rounds: RoundValues,
        extra_info: Mapping[str, Any],
    ) -> None:
        """Keep a run on a named launcher in memory: the same config and workload on the
        host's next launcher is gated against it (:meth:`_release`)."""
        if deployment.config.launcher is None:
            return
        metrics = sorted({m for r in rounds for m in r if known_metric(m)})
        info = {
            **extra_info,
            "metrics_version": METRICS_VERSION,
            "rounds_values": {
                m: [r[m] for r in rounds if isinstance(r.get(m), (int, float))] for m in metrics
            },
        }
        machine_info: dict[str, Any] = {"sglang_fingerprint": fp}
        if deployment.server_args:
            machine_info["sglang_server_args"] = dict(deployment.server_args)
        path = Path(f"{deployment.config_id} (this session)")
        runs = self._releases.setdefault(self._release_key(deployment, workload), [])
        run = {"extra_info": info}
        runs.append((deployment.config.launcher, StoredBaseline(path, machine_info, [run])))

    def _release(
        self, deployment: Deployment, workload: WorkloadIdentity, fp: dict[str, Any]
    ) -> Upgrade | None:
        """For a config on a named launcher: the last run this session of the same config and
        workload on this host on another launcher whose fingerprint differs in software only,
        as an upgrade (None when there is none). Why it comes before the stored baseline:
        sweeping launchers asks for exactly this comparison, measured minutes apart."""
        if deployment.config.launcher is None:
            return None
        runs = self._releases.get(self._release_key(deployment, workload), [])
        for launcher, stored in reversed(runs):
            if launcher == deployment.config.launcher:
                continue
            changes = software_changes(fp, stored.fingerprint)
            if changes:
                return Upgrade(stored, changes)
        return None

    @staticmethod
    def _settings_changed(upgrade: Upgrade, deployment: Deployment) -> list[dict[str, Any]] | None:
        """The settings in effect that differ from the baseline's (None: it kept none)."""
        before = upgrade.stored.settings
        if before is None or not deployment.server_args:
            return None
        return settings_diff(
            before,
            str(upgrade.stored.fingerprint.get("sglang_version", "")),
            deployment.server_args,
            deployment.sglang_version,
            deployment.config.tuned(),
        )

    @staticmethod
    def _mark_upgrade(
        outcome: GateOutcome, upgrade: Upgrade, settings: list[dict[str, Any]] | None
    ) -> None:
        """Every row says it compared across an upgrade: the one line, versions, settings."""
        line = upgrade_line(upgrade, outcome.rows, settings)
        before, after = upgrade.sides()
        for row in outcome.rows:
            row["upgrade"] = {
                "summary": line,
                "from": before,
                "to": after,
                "baseline": str(upgrade.stored.path),
                "settings_changed": settings,
            }
            row["reason"] += f"; upgrade: {upgrade.versions}"

    def _stored(self, key: BaselineKey) -> tuple[StoredBaseline | None, str]:
        """The key's runs saved before this session, and a note on where they came from: the
        key's own file, else its old-layout file (re-keyed on disk when saving)."""
        stored = self.store.load(key)
        note = ""
        legacy = read_legacy(self.store, key) if stored is None else None
        if legacy is not None:
            old = legacy.stored.path
            stored = legacy.baseline_of(key.workload_digest)
            if stored is None and legacy.unknown and not self.save:
                raise BaselineError(
                    f"baseline {old} is keyed by the workload's name only and its runs do not "
                    "say which workload they measured; not compared: re-record it with "
                    "--sglang-baseline-save (it replaces the file)"
                )
            if self.save:
                rekey(self.store, key, legacy, self.version)
                stored = self.store.load(key)
                dropped = f", {legacy.unknown} run(s) of no known workload dropped"
                note = f"re-keyed from {old}{dropped if legacy.unknown else ''}"
            elif stored is not None:
                note = f"read from the old-layout {old} (--sglang-baseline-save re-keys it)"
        if stored is None:
            return None, note
        before = stored.without_session(self.session)
        if not before.runs:
            return None, "its only runs were saved by this session; not gated against them"
        return before.latest(self.store.history), note

    def _unmatched(
        self,
        base: dict[str, Any],
        gates: Mapping[str, Gate],
        key: BaselineKey,
        fp: dict[str, Any],
        note: str = "",
        others: list[StoredBaseline] | None = None,
    ) -> list[dict[str, Any]]:
        others = self.store.others(key) if others is None else others
        where = f"config {key.config_id}, workload {key.workload} ({key.workload_digest})"
        if note:
            verdict = "missing"
            reason = f"baseline for {where}: {note}"
        elif others:
            latest = max(others, key=lambda o: o.saved_at)
            diffs = diff_fingerprints(fp, latest.fingerprint) or ["fingerprint digest"]
            verdict = "skipped"
            reason = (
                f"baseline for {where} was measured on another host fingerprint "
                f"({'; '.join(diffs)}); not compared"
            )
        else:
            verdict = "missing"
            reason = (
                f"no baseline for {where} in {self.store.root / key.folder}; "
                "record one with --sglang-baseline-save"
            )
        return [
            self._row(base, gate, verdict, None, None, None, reason, None)
            for gate in gates.values()
        ]

    def _compare(
        self,
        base: dict[str, Any],
        gates: Mapping[str, Gate],
        stored: StoredBaseline,
        rounds: RoundValues,
    ) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        for metric, gate in gates.items():
            current = [float(r[metric]) for r in rounds if isinstance(r.get(metric), (int, float))]
            baseline = stored.values(metric)
            if not current or not baseline:
                side = "this run" if not current else "the baseline"
                reason = f"{metric}: no values in {side}; not compared"
                rows.append(self._row(base, gate, "skipped", None, None, None, reason, None))
                continue
            v = decide(gate, current, baseline, alpha=self.alpha, floor=self.floor)
            reason = v.reason
            if len(rounds) < MIN_POWERFUL_ROUNDS:
                reason += f"; rounds={len(rounds)}: use rounds>={MIN_POWERFUL_ROUNDS} for power"
            rows.append(
                self._row(
                    base, gate, v.verdict, v.baseline, v.current, v.delta_pct, reason, v.p_value
                )
            )
        return rows

    @staticmethod
    def _row(
        base: dict[str, Any],
        gate: Gate,
        verdict: str,
        baseline: float | None,
        current: float | None,
        delta: float | None,
        reason: str,
        p_value: float | None,
    ) -> dict[str, Any]:
        return {
            **base,
            "metric": gate.metric,
            "direction": gate.direction,
            "baseline": baseline,
            "current": current,
            "delta_pct": None if delta is None else round(delta, 3),
            "threshold_pct": gate.threshold_pct,
            "verdict": verdict,
            "reason": reason,
            "p_value": p_value,
        }

    def _regression_message(
        self, outcome: GateOutcome, stored: StoredBaseline, upgrade: Upgrade | None = None
    ) -> str:
        parts = [
            f"{r['metric']} {abs(r['delta_pct']):.1f}% worse ({fmt(r['baseline'])} -> "
            f"{fmt(r['current'])}, threshold {r['threshold_pct']:g}%, p={r['p_value']:.2g})"
            for r in outcome.rows
            if r["verdict"] == "regression"
        ]
        confirmed = (
            f", confirmed by {outcome.confirm_runs} re-run(s)" if outcome.confirm_runs else ""
        )
        if upgrade is not None:
            return (
                f"performance regression after an upgrade ({upgrade.versions}) vs {stored.path}: "
                f"{'; '.join(parts)}{confirmed}; accept it as the new baseline with "
                "--sglang-baseline-accept-upgrade"
            )
        return f"performance regression vs {stored.path}: {'; '.join(parts)}{confirmed}"

    def _entry(
        self,
        nodeid: str,
        name: str,
        extra_info: dict[str, Any],
        rounds: RoundValues,
        gates: Mapping[str, Gate],
        deployment: Deployment,
    ) -> dict[str, Any]:
        """A pytest-benchmark benchmark entry for this run (``stats`` over round wall times),
        with the tests' commit and the digest of the settings in effect (the file keeps them)."""
        # every known metric, so that a gate enabled later has per-round history too
        metrics = sorted({m for r in rounds for m in r if known_metric(m)} | set(gates))
        rounds_values = {
            m: [r[m] for r in rounds if isinstance(r.get(m), (int, float))] for m in metrics
        }
        durations = [float(r.get("duration") or 0.0) for r in rounds] or [0.0]
        info = dict(extra_info)
        info.update(
            session=self.session,
            rounds_values=rounds_values,
            saved_at=dt.datetime.now(dt.timezone.utc).isoformat(),
            commit_info=self.commit_info(),
            server_args_digest=settings_digest(deployment.server_args),
        )
        return {
            "group": None,
            "name": name,
            "fullname": nodeid,
            "params": None,
            "param": None,
            "extra_info": info,
            "options": {"rounds": len(rounds), "iterations": 1, "warmup": False},
            "stats": round_stats(durations),
        }
