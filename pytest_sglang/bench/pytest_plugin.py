"""The ``sglang_bench`` fixture and the benchmark table in the terminal summary.

Why through pytest-benchmark's ``benchmark.pedantic``: its ``--benchmark-json``,
``--benchmark-compare`` and storage then carry our figures in ``extra_info`` for free, next to
its own wall-time statistics of each round. Results are also kept in ``config.stash`` under
:data:`~pytest_sglang.stash.RESULTS_KEY` (read them with :func:`bench_results`) for the session
summary JSON.

After each run the figures go through the baseline gates (:mod:`pytest_sglang.baseline`, whose
gatekeeper and the test's ``sglang_gate`` markers this plugin finds in the stash): the
comparison, ``--sglang-confirm`` re-runs of a regression, ``--sglang-baseline-save``, and the
test failing with one line when a regression stands.

Each round runs from the host's ``bench_from`` path (:mod:`.paths`) and is checked for stalls
(:mod:`.stalls`): a disturbed round is said, kept in ``extra_info["disturbed"]`` and repeated
once; disturbed again, the test fails with the reason and nothing reaches the gates.
"""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from ..deployment import Deployment
from ..errors import SglangError
from ..options import number
from ..secrets import REDACTED
from ..stash import GATES_KEY, RESULTS_KEY, bench_results, gatekeeper
from .metrics import BenchResult
from .paths import run_round
from .workload import Workload

__all__ = ["RESULTS_KEY", "SglangBench", "bench_results"]

#: Default rounds per run: the fewest at which the default gates keep false alarms <= 1% and
#: catch >= 95% of 5% slowdowns under 2% noise.
DEFAULT_ROUNDS = 3


class SglangBench:
    """Callable returned by the fixture: ``sglang_bench(workload, rounds=None) -> BenchResult``.

    ``rounds=None`` takes ``--sglang-rounds``.
    """

    def __init__(
        self,
        benchmark: Any,
        deployment: Deployment,
        config: pytest.Config,
        node: pytest.Item | None = None,
    ) -> None:
        self.benchmark = benchmark
        self.deployment = deployment
        self.config = config
        self.node = node
        self.used = False

    @property
    def model(self) -> str:
        cfg = self.deployment.config
        return str(getattr(cfg, "served_model_name", None) or cfg.model_path)

    def __call__(self, workload: Workload, rounds: int | None = None) -> BenchResult:
        __tracebackhide__ = True
        if rounds is None:
            rounds = int(self.config.getoption("sglang_rounds"))
        if self.used:
            pytest.fail(
                "sglang_bench can run one workload per test; split the workloads into "
                "separate (parametrized) tests",
                pytrace=False,
            )
        if rounds < 1:
            pytest.fail(f"sglang_bench rounds={rounds}: needs rounds >= 1", pytrace=False)
        self.used = True
        runs: list[BenchResult] = []
        notes: list[str] = []
        paths: list[str] = []
        failure: list[tuple[BenchResult, str]] = []

        def one_round() -> BenchResult:
            for attempt in (1, 2):
                measured = run_round(self.deployment, workload, model=self.model)
                paths.append(measured.bench_from)
                if not measured.disturbed:
                    runs.append(measured.result)
                    return measured.result
                n = len(runs) + 1
                again = "repeated" if attempt == 1 else "disturbed twice"
                notes.append(f"round {n}: disturbed: {measured.disturbed} ({again})")
            failure.append((measured.result, measured.disturbed))
            raise _Disturbed(measured.disturbed)

        with contextlib.suppress(_Disturbed):
            self.benchmark.pedantic(one_round, rounds=rounds, iterations=1, warmup_rounds=0)
        if failure:
            self._disturbed(workload, runs, failure[0], notes, paths)
        result = runs[-1]
        info = self._extra_info(workload, result, runs)
        info.update(bench_from=paths[-1], disturbed=notes)
        self.benchmark.extra_info.update(info)
        bench_results(self.config).append(info)
        self._gate(workload, runs, rounds, info, one_round)
        return result

    def _gate(
        self,
        workload: Workload,
        runs: list[BenchResult],
        rounds: int,
        info: dict[str, Any],
        one_round: Any,
    ) -> None:
        """Compare with the baseline; fail the test (one line) when a regression stands."""
        __tracebackhide__ = True
        keeper = gatekeeper(self.config)
        if keeper is None or self.node is None:
            return
        # the baselines plugin read the test's markers at its setup (a bad one failed it there)
        gates = self.node.stash.get(GATES_KEY, {})
        first = len(runs)

        def rerun() -> list[dict[str, Any]]:
            start = len(runs)
            try:
                for _ in range(rounds):
                    one_round()
            except _Disturbed as exc:
                pytest.fail(
                    f"{workload.name} on {self.deployment.host}: a confirmation round was "
                    f"disturbed twice ({exc}); not compared with the baseline",
                    pytrace=False,
                )
            return [r.as_dict() for r in runs[start:]]

        try:
            outcome = keeper.check(
                nodeid=self.node.nodeid,
                name=self.node.name,
                deployment=self.deployment,
                workload=workload.name,
                rounds=[r.as_dict() for r in runs[:first]],
                extra_info=info,
                rerun=rerun,
                gates={**keeper.gates, **gates},
            )
        except SglangError as exc:
            pytest.fail(str(exc), pytrace=False)
        info["confirm_runs"] = outcome.confirm_runs
        self.benchmark.extra_info["confirm_runs"] = outcome.confirm_runs
        for row in outcome.rows:
            prefix = f"sglang_gate.{row['metric']}"
            self.node.user_properties.append((f"{prefix}.verdict", row["verdict"]))
            if row["delta_pct"] is not None:
                self.node.user_properties.append((f"{prefix}.delta_pct", row["delta_pct"]))
                self.node.user_properties.append((f"{prefix}.baseline", row["baseline"]))
                self.node.user_properties.append((f"{prefix}.current", row["current"]))
        if outcome.failure:
            pytest.fail(outcome.failure, pytrace=False)

    def _disturbed(
        self,
        workload: Workload,
        runs: list[BenchResult],
        failure: tuple[BenchResult, str],
        notes: list[str],
        paths: list[str],
    ) -> None:
        """A round disturbed twice: kept with its reason in every output, then the test fails
        (the gates never see it)."""
        __tracebackhide__ = True
        result, why = failure
        info = self._extra_info(workload, result, [*runs, result])
        info.update(bench_from=paths[-1], disturbed=notes, gated=False)
        self.benchmark.extra_info.update(info)
        bench_results(self.config).append(info)
        pytest.fail(
            f"{workload.name} on {self.deployment.host}: round {len(runs) + 1} disturbed twice: "
            f"{why}; not compared with the baseline (the figures would measure the network)",
            pytrace=False,
        )

    def _extra_info(
        self, workload: Workload, result: BenchResult, runs: list[BenchResult]
    ) -> dict[str, Any]:
        d = self.deployment
        try:
            config = d.resolved.model_dump(mode="json", exclude_none=True)
        except (SglangError, ValueError, TypeError):
            config = {}
        if config.get("env"):  # never an environment value in results (tokens live there)
            config["env"] = {name: REDACTED for name in config["env"]}
        info: dict[str, Any] = result.as_dict()
        info.update(
            workload=workload.name,
            workload_spec=workload.describe(),
            config_id=d.config_id,
            config=config,
            host=d.host,
            sglang_version=d.sglang_version,
            rounds=len(runs),
            output_throughput_rounds=[r.output_throughput for r in runs],
        )
        return info


class _Disturbed(Exception):
    """A round disturbed twice (ends the rounds; the test then fails with the reason)."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("sglang", "SGLang server deployment and benchmarking")
    group.addoption(
        "--sglang-rounds",
        type=number(int, minimum=1),
        default=DEFAULT_ROUNDS,
        metavar="N",
        help="Rounds per sglang_bench run when the test does not say. Three rounds are what "
        "the regression gates need to tell a 5%% slowdown from 2%% noise (benchmarks/"
        "gate_noise.py). Default: %(default)r",
    )


@pytest.fixture
def sglang_bench(
    request: pytest.FixtureRequest, benchmark: Any, sglang_server: Deployment
) -> SglangBench:
    """Run one workload against the test's deployment; figures go to ``benchmark.extra_info``.

    ``result = sglang_bench(Workload.single_stream(256))``; once per test. In a test that asks
    for ``sglang_production`` (and no config), that is the live service, attached.
    """
    return SglangBench(benchmark, sglang_server, request.config, request.node)


def _fmt(value: Any, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    results = config.stash.get(RESULTS_KEY, [])
    if not results:
        return
    terminalreporter.section("sglang benchmarks")
    where = {r["host"]: r.get("bench_from", "") for r in results}
    terminalreporter.write_line(
        "load from: " + ", ".join(f"{host}: {path or '?'}" for host, path in where.items())
    )
    terminalreporter.write_line(
        f"{'config':<28} {'workload':<16} {'out tok/s':>10} {'TTFT p50 ms':>12} "
        f"{'ITL p50 ms':>11} {'accept':>7} {'failed':>7}"
    )
    for r in results:
        failed = f"{r['failed']}/{r['completed'] + r['failed']}"
        terminalreporter.write_line(
            f"{r['config_id']:<28} {r['workload']:<16} {_fmt(r['output_throughput']):>10} "
            f"{_fmt(r['median_ttft_ms']):>12} {_fmt(r['median_itl_ms'], 2):>11} "
            f"{_fmt(r['accept_length'], 2):>7} {failed:>7}"
        )
        for note in r.get("disturbed", []):
            terminalreporter.write_line(f"  {r['config_id']} {r['workload']}: {note}", yellow=True)
