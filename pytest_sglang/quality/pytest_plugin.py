"""The ``sglang_quality`` fixture: accuracy and output equivalence on the test's deployment.

Modelled on ``sglang_bench``: the fixture runs an eval against the deployed server, keeps a row
for the summary and the reports, compares the figure with the stored baseline (the baselines'
gatekeeper and store, found in ``config.stash``; ``--sglang-baseline-save`` appends it) and
fails the test with one line when quality regressed or missed the test's floor. Against a
stored run that kept its per-item outcomes over the same items, and against a reference config
in this session, the comparison is paired (:mod:`.pairing`: McNemar's exact test); otherwise
unpaired. An equivalence check also measures the reference's agreement with itself (one more
pass of the reference over the prompts) and judges the config against that noise floor
(:mod:`.noise`). The rows go to
``--sglang-summary`` (``quality``, ``quality_holds``), the terminal section "sglang quality"
(next to each config's best output throughput, marking a config that is faster but fails
quality), the baseline comparisons table (terminal, HTML, Allure) and, with ``--alluredir``,
one JSON attachment per eval (the wrong answers, the divergent pairs).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest

from ..baseline.fingerprint import fingerprint_digest
from ..baseline.gatekeeper import Gatekeeper
from ..baseline.gates import Gate, Verdict, is_quality_metric
from ..baseline.store import BaselineKey, round_stats
from ..bench.workload import API
from ..config import ServerConfig
from ..errors import SglangError
from ..lifecycle.deployment import Deployment
from ..stash import (
    GATES_KEY,
    all_bench_results,
    all_quality_results,
    gatekeeper,
    quality_results,
)
from .evals import (
    DEFAULT_EQUIVALENCE_PROMPTS,
    AccuracyResult,
    EquivalenceResult,
    Output,
    collect_outputs,
    compare_outputs,
    prompts_digest,
    run_accuracy,
)
from .gate import DEFAULT_QUALITY_GATES, decide_rate, floor_line, regression_line
from .noise import deterministic_hint, judge_floor, resolved_backend
from .pairing import discordant, stored_outcomes
from .tasks import Task
from .verdict import display_verdict, quality_marks

__all__ = ["SglangQuality"]

T = TypeVar("T")
#: (config digest, prompts or task digest) -> what that config produced this session.
_REFERENCES: pytest.StashKey[dict[tuple[str, str], list[Output]]] = pytest.StashKey()
_ACCURACIES: pytest.StashKey[dict[tuple[str, str], AccuracyResult]] = pytest.StashKey()


@dataclass(frozen=True)
class _SecondPass:
    """A reference's second pass over the prompts (its noise floor) and what can make it
    reproducible: its attention backend and whether deterministic inference was on."""

    outputs: list[Output]
    attention_backend: str | None
    deterministic: bool


_FLOORS: pytest.StashKey[dict[tuple[str, str], _SecondPass]] = pytest.StashKey()


def _model(deployment: Deployment) -> str:
    cfg = deployment.config
    return str(getattr(cfg, "served_model_name", None) or cfg.model_path)


class SglangQuality:
    """Returned by the fixture: ``accuracy(task)`` and ``equivalence(reference)``."""

    def __init__(self, request: pytest.FixtureRequest, deployment: Deployment) -> None:
        self.request = request
        self.deployment = deployment
        self.config = request.config
        self.node = request.node

    # -- the evals ----------------------------------------------------------------------------

    def accuracy(
        self,
        task: Task | None = None,
        *,
        reference: ServerConfig | None = None,
        concurrency: int = 32,
        api: API = "generate",
        min_accuracy: float | None = None,
    ) -> AccuracyResult:
        """Run ``task`` (default: the built-in ``Task.arithmetic(500)``); gate, record, fail.

        With ``reference``, the accuracy is also compared with that config's on the same task
        (from this session, else the reference is deployed now): "does FP8 cost accuracy?".
        """
        __tracebackhide__ = True
        task = task or Task.arithmetic(500)

        def measure(deployment: Deployment) -> AccuracyResult:
            return run_accuracy(
                deployment.base_url,
                task,
                model=_model(deployment),
                concurrency=concurrency,
                api=api,
                api_key=deployment.api_key,
            )

        result = measure(self.deployment)
        memory = self.config.stash.setdefault(_ACCURACIES, {})
        memory.setdefault((self.deployment.config.digest, task.digest), result)
        info = result.as_dict()
        problem = floor_line(
            "accuracy",
            result.accuracy,
            min_accuracy,
            f"on {task.name}",
            f"{result.correct}/{result.total}, 95% CI {info['ci_low']:.1%}-{info['ci_high']:.1%}",
        )
        if reference is not None:
            ref = self._reference(memory, reference, task.digest, measure)
            info["reference"] = reference.id
            info["reference_accuracy"] = ref.accuracy
            same = len(ref.outcomes) == len(result.outcomes) == result.total
            v = decide_rate(
                self._gate("accuracy"),
                result.correct,
                result.total,
                ref.correct,
                ref.total,
                alpha=self._alpha(),
                pairs=discordant(ref.outcomes, result.outcomes) if same else None,
            )
            info["reference_verdict"] = v.verdict
            info["reference_p_value"] = v.p_value
            info["reference_reason"] = v.reason
            if v.verdict == "regression":
                problem = problem or regression_line("accuracy", v, f"reference {reference.id}")
        workload = f"quality-{task.name}-{task.digest}"
        self._finish(
            "accuracy", workload, result.correct, result.total, info, problem, result.outcomes
        )
        return result

    def _reference(
        self,
        memory: dict[tuple[str, str], T],
        reference: ServerConfig,
        digest: str,
        measure: Callable[[Deployment], T],
    ) -> T:
        """The reference config's measurement: from this session, else deployed and measured
        now (one more restart; list the reference config first to avoid it)."""
        __tracebackhide__ = True
        found = memory.get((reference.digest, digest))
        if found is not None:
            return found
        try:
            lease = self.request.getfixturevalue("sglang_host")
            deployment = lease.deployment(reference)
        except SglangError as exc:
            pytest.fail(f"quality: reference {reference.id}: {exc}", pytrace=False)
        found = memory.get((deployment.config.digest, digest))
        if found is None:
            found = measure(deployment)
            memory[(deployment.config.digest, digest)] = found
        memory[(reference.digest, digest)] = found
        return found

    def _alpha(self) -> float:
        keeper = gatekeeper(self.config)
        return keeper.alpha if keeper is not None else 0.05

    def equivalence(
        self,
        reference: ServerConfig,
        prompts: Sequence[str] | None = None,
        *,
        output_tokens: int = 64,
        concurrency: int = 16,
        api: API = "generate",
        min_rate: float | None = None,
        noise_floor: bool = True,
    ) -> EquivalenceResult:
        """This config's greedy outputs against ``reference``'s on a fixed prompt set.

        The reference's outputs come from this session when a test already ran them, else the
        reference is deployed now (one more restart: list the reference config first).

        ``noise_floor`` (default on): when the reference is measured (its own test, or deployed
        for this one) it answers the prompts a second time, and its agreement with itself is the
        floor this config is judged against: it fails only when its agreement is significantly
        below the floor. ``min_rate`` applies while the reference is self-consistent; below
        100 % self-agreement it is not applied (the reference itself would miss it), and the
        result says so. False: no second pass, ``min_rate`` alone.
        """
        __tracebackhide__ = True
        texts = list(prompts) if prompts is not None else list(DEFAULT_EQUIVALENCE_PROMPTS)
        digest = prompts_digest(texts, output_tokens, api)

        def outputs(deployment: Deployment) -> list[Output]:
            return self._outputs(deployment, texts, output_tokens, concurrency, api)

        floors = self.config.stash.setdefault(_FLOORS, {})

        def second_pass(deployment: Deployment, outs: list[Output] | None = None) -> None:
            backend, deterministic = resolved_backend(deployment.server_args, deployment.resolved)
            found = _SecondPass(outs or outputs(deployment), backend, deterministic)
            floors[(deployment.config.digest, digest)] = found
            floors[(reference.digest, digest)] = found

        def measure(deployment: Deployment) -> list[Output]:
            first = outputs(deployment)
            if noise_floor:
                second_pass(deployment)
            return first

        current = outputs(self.deployment)
        memory = self.config.stash.setdefault(_REFERENCES, {})
        own = memory.setdefault((self.deployment.config.digest, digest), current)
        ref = self._reference(memory, reference, digest, measure)
        is_reference = ref is own
        floor = floors.get((reference.digest, digest)) if noise_floor else None
        if is_reference and noise_floor:
            floor = floor or floors.get((self.deployment.config.digest, digest))
            if floor is None:
                second_pass(self.deployment, None if current is own else current)
                floor = floors[(reference.digest, digest)]
            if current is own:
                current = floor.outputs  # the reference against itself: its second pass
        result = compare_outputs(ref, current, reference_id=reference.id)
        result.prompts_digest = digest
        if not noise_floor:
            result.floor_reason = "noise floor off"
        elif floor is None:
            result.floor_reason = (
                "noise floor not measured: the reference's outputs came from a test that took "
                "no second pass of them"
            )
        else:
            self._judge_floor(result, ref, floor, is_reference)
        problem = _equivalence_problem(result, reference, min_rate)
        n = result.total
        info = result.as_dict()
        workload = f"equivalence-{reference.id}-{digest}"
        self._finish(
            "exact_match_rate", workload, result.matched, n, info, problem, result.outcomes
        )
        return result

    def _judge_floor(
        self,
        result: EquivalenceResult,
        ref: list[Output],
        floor: _SecondPass,
        is_reference: bool,
    ) -> None:
        """Fill in the result's noise floor: the reference's second pass against its first,
        and this config's agreement against that (the reference's own row is the floor)."""
        own = compare_outputs(ref, floor.outputs, reference_id=result.reference)
        n = result.total
        result.floor_matched = own.matched
        hint = ""
        if own.matched < n:
            hint = "; " + deterministic_hint(floor.attention_backend, floor.deterministic)
        if is_reference:
            result.floor_verdict = "reference"
            result.floor_reason = (
                f"reference self-agreement {own.matched}/{n} (a second pass){hint}"
            )
            return
        gate = self._gate("exact_match_rate")
        judged = judge_floor(
            gate if gate.enabled else DEFAULT_QUALITY_GATES["exact_match_rate"],
            result.outcomes,
            own.outcomes,
            alpha=self._alpha(),
        )
        result.floor_verdict = judged.verdict
        result.floor_p_value = judged.p_value
        result.floor_reason = judged.reason + hint

    def _outputs(
        self, deployment: Deployment, texts: list[str], tokens: int, concurrency: int, api: API
    ) -> list[Output]:
        return collect_outputs(
            deployment.base_url,
            texts,
            model=_model(deployment),
            output_tokens=tokens,
            concurrency=concurrency,
            api=api,
            api_key=deployment.api_key,
        )

    # -- gate, record, report -----------------------------------------------------------------

    def _gate(self, metric: str) -> Gate:
        keeper = gatekeeper(self.config)
        gates: dict[str, Gate] = dict(DEFAULT_QUALITY_GATES)
        if keeper is not None:
            gates.update({m: g for m, g in keeper.gates.items() if is_quality_metric(m)})
        gates.update(self.node.stash.get(GATES_KEY, {}))
        return gates[metric]

    def _finish(
        self,
        metric: str,
        workload: str,
        k: int,
        n: int,
        info: dict[str, Any],
        problem: str | None,
        outcomes: tuple[bool, ...] = (),
    ) -> None:
        """Gate against the baseline, keep the row, attach, and fail on ``problem`` (a floor
        or reference failure) or a regression."""
        __tracebackhide__ = True
        d = self.deployment
        keeper = gatekeeper(self.config)
        gate = self._gate(metric)
        failure = problem or ""
        verdict = "ok"
        reason = "no baseline gate (the baselines plugin is not loaded)"
        if keeper is not None and gate.enabled:
            try:
                verdict, reason, line = self._compare(keeper, gate, workload, k, n, info, outcomes)
            except SglangError as exc:
                pytest.fail(str(exc), pytrace=False)
            failure = failure or line
        elif not gate.enabled:
            reason = f"{metric}: gate off"
        row = {
            "nodeid": self.node.nodeid,
            "config_id": d.config_id,
            "host": d.host,
            "kind": info["kind"],
            "metric": metric,
            "value": info[metric],
            "ci_low": info["ci_low"],
            "ci_high": info["ci_high"],
            "k": k,
            "n": n,
            "subject": info.get("task") or info.get("reference"),
            "first_divergence": info.get("first_divergence"),
            "noise_floor": info.get("noise_floor"),
            "floor_verdict": info.get("floor_verdict"),
            "verdict": verdict if not problem else "fails",
            "holds": not failure,
            "reason": problem or "; ".join(r for r in (info.get("floor_reason"), reason) if r),
        }
        quality_results(self.config).append(row)
        self.node.user_properties.append((f"sglang_quality.{metric}", info[metric]))
        self._attach(f"quality: {info['kind']} ({row['subject']})", info)
        if failure:
            pytest.fail(failure, pytrace=False)

    def _compare(
        self,
        keeper: Gatekeeper,
        gate: Gate,
        workload: str,
        k: int,
        n: int,
        info: dict[str, Any],
        outcomes: tuple[bool, ...],
    ) -> tuple[str, str, str]:
        """(verdict, reason, failure line or "") against the stored run, paired when it kept
        its per-item outcomes over the same items; saves when asked."""
        d = self.deployment
        fp = keeper.fingerprint(d)
        own = d.config.without_launcher()  # the release is in the fingerprint
        key = BaselineKey(own.id, own.digest, workload, fingerprint_digest(fp))
        stored = keeper.store.load(key)
        base_row = dict(nodeid=self.node.nodeid, config_id=d.config_id, workload=workload)
        line = ""
        last = stored.runs[-1].get("extra_info", {}) if stored and stored.runs else {}
        k_base, n_base = last.get("correct", last.get("matched")), last.get("total")
        if isinstance(k_base, int) and isinstance(n_base, int) and n_base > 0 and n > 0:
            before = stored_outcomes(last, str(info.get("items_digest") or ""), n)
            paired = before is not None and len(outcomes) == n
            pairs = discordant(before, outcomes) if before is not None and paired else None
            v = decide_rate(gate, k, n, k_base, n_base, alpha=keeper.alpha, pairs=pairs)
            assert stored is not None
            if v.verdict == "regression":
                line = regression_line(gate.metric, v, str(stored.path))
        else:
            where = keeper.store.root / key.folder
            v = Verdict(
                "missing",
                float("nan"),
                k / n if n else 0.0,
                0.0,
                1.0,
                f"no {gate.metric} baseline for config {d.config_id} in {where}; record one "
                "with --sglang-baseline-save",
            )
            if keeper.require and not keeper.save:
                line = f"baseline required (--sglang-baseline-require): {v.reason}"
        missing = v.verdict == "missing"
        keeper.results.append(
            {
                **base_row,
                "metric": gate.metric,
                "direction": gate.direction,
                "baseline": None if missing else v.baseline,
                "current": v.current,
                "delta_pct": None if missing else round(v.delta_pct, 3),
                "threshold_pct": gate.threshold_pct,
                "verdict": v.verdict,
                "reason": v.reason,
                "p_value": None if missing else v.p_value,
            }
        )
        if keeper.save and v.verdict != "regression":
            keeper.store.save(key, fp, self._entry(gate.metric, info), version=keeper.version)
        return v.verdict, v.reason, line

    def _entry(self, metric: str, info: dict[str, Any]) -> dict[str, Any]:
        """A pytest-benchmark entry: the counts, the rate and the packed per-item outcomes (no
        lists: the wrong answers and divergent pairs stay in the attachment)."""
        keep = {k: v for k, v in info.items() if not isinstance(v, (list, dict))}
        keep.update(
            config_id=self.deployment.config_id,
            rounds_values={metric: [info[metric]]},
            saved_at=dt.datetime.now(dt.timezone.utc).isoformat(),
        )
        return {
            "group": None,
            "name": self.node.name,
            "fullname": self.node.nodeid,
            "params": None,
            "param": None,
            "extra_info": keep,
            "options": {"rounds": 1, "iterations": 1, "warmup": False},
            "stats": round_stats([float(info.get("duration_s") or 0.0)]),
        }

    def _attach(self, name: str, info: dict[str, Any]) -> None:
        if not getattr(self.config.option, "allure_report_dir", None):
            return
        import allure

        allure.attach(
            json.dumps(info, indent=2, default=str),
            name=name,
            attachment_type=allure.attachment_type.JSON,
        )


@pytest.fixture
def sglang_quality(request: pytest.FixtureRequest, sglang_server: Deployment) -> SglangQuality:
    """Quality evals on the test's deployment: ``sglang_quality.accuracy(Task.arithmetic())``,
    ``sglang_quality.equivalence(reference_config)``."""
    return SglangQuality(request, sglang_server)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    rows = all_quality_results(config)
    if not rows:
        return
    bench = all_bench_results(config)
    marks = quality_marks(rows, bench)
    speeds: dict[str, float] = {}
    for r in bench:
        if isinstance(r.get("output_throughput"), (int, float)):
            speeds[r["config_id"]] = max(speeds.get(r["config_id"], 0.0), r["output_throughput"])
    tr = terminalreporter
    tr.section("sglang quality")
    tr.write_line(
        f"{'config':<28} {'metric':<17} {'value':>7} {'95% CI':>13} {'n':>5} {'floor':>6} "
        f"{'out tok/s':>10}  verdict"
    )
    notes: list[str] = []
    for r in rows:
        speed = speeds.get(r["config_id"])
        ci = f"{r['ci_low']:.1%}-{r['ci_high']:.1%}"
        verdict = display_verdict(r, marks)
        floor = r.get("noise_floor")
        if isinstance(floor, float) and floor < 1.0:
            notes.append(f"{r['config_id']} vs {r.get('subject')}: {r['reason']}")
        tr.write_line(
            f"{r['config_id'][:28]:<28} {r['metric']:<17} {r['value']:>7.1%} {ci:>13} "
            f"{r['n']:>5} {'-' if floor is None else f'{floor:.0%}':>6} "
            f"{'-' if speed is None else f'{speed:.1f}':>10}  {verdict}",
            **({"red": True} if not r["holds"] else {}),
        )
    for note in notes:
        tr.write_line(f"noise floor: {note}")


def _equivalence_problem(
    result: EquivalenceResult, reference: ServerConfig, min_rate: float | None
) -> str | None:
    """Why the outputs fail, or None: below ``min_rate`` while the reference is
    self-consistent, or significantly below the reference's noise floor."""
    problem = None
    n = result.total
    if result.floor_matched in (None, n):
        problem = floor_line(
            "exact_match_rate",
            result.exact_match_rate,
            min_rate,
            f"vs {reference.id}",
            f"{result.matched}/{n} identical; first divergent token at {result.first_divergence}",
        )
    elif min_rate is not None:
        result.floor_reason += (
            f"; min_rate {min_rate:.1%} not applied: the reference agrees with itself on "
            f"{result.floor_matched}/{n} only"
        )
    if result.floor_verdict == "below":
        problem = problem or (
            f"exact_match_rate {result.exact_match_rate:.1%} vs {reference.id} is below the "
            f"reference's noise floor: {result.floor_reason}"
        )
    return problem
