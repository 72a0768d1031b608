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

Each round runs from the host's ``bench_from`` path (:mod:`.route`) and is checked for stalls
(:mod:`.stalls`): a disturbed round is said, kept in ``extra_info["disturbed"]`` and repeated
once; disturbed again, the test fails with the reason and nothing reaches the gates.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any, overload

import pytest

from ..errors import SglangError
from ..lifecycle.deployment import Deployment
from ..lifecycle.topology_deployment import TopologyDeployment
from ..options import number
from ..secrets import REDACTED
from ..stash import (
    GATES_KEY,
    RESULTS_KEY,
    all_bench_results,
    bench_results,
    gatekeeper,
)
from ..terminal import Column, LiveLine, TextTable, write_lines, write_table
from .identity import WorkloadIdentity, identify
from .loadgen import RunProgress
from .metrics import BenchResult, RequestRecord
from .parts import parts_after, parts_before, per_part_line
from .route import bench_from_by_host, run_round
from .search import ProbeDisturbed, SearchResult, search_over
from .slo import Slo, slo_figures
from .spec_text import KEY as SPEC_TEXT_KEY
from .spec_text import accept_table, is_speculative, off_text_reasons, speculative_text_note
from .workload import SloSearch, Workload

__all__ = ["RESULTS_KEY", "SglangBench", "bench_results"]

#: A run shows its live progress line once it has taken this long (seconds).
LIVE_AFTER_S = 3.0
#: The pytest-benchmark names (``fullname``) of the benchmarks that ``sglang_bench`` ran.
_OURS_KEY = pytest.StashKey[set[str]]()

#: Default rounds per run: the fewest at which the default gates keep false alarms <= 1% and
#: catch >= 95% of 5% slowdowns under 2% noise.
DEFAULT_ROUNDS = 3


class SglangBench:
    """Callable returned by the fixture: ``sglang_bench(workload, rounds=None) -> BenchResult``.

    ``rounds=None`` takes ``--sglang-rounds``. ``slo`` (an :class:`~.slo.Slo` or its text)
    adds ``slo``, ``slo_attainment``, ``goodput`` and ``output_goodput`` to every round's
    figures (so ``--sglang-gate goodput:-5%`` gates them). Given a :class:`~.workload.SloSearch`
    (``Workload.max_rate(slo)``), it runs the search once instead and returns its
    :class:`~.search.SearchResult`.
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
        """The model name requests carry: the served model name, else the model path."""
        cfg = self.deployment.config
        return str(getattr(cfg, "served_model_name", None) or cfg.model_path)

    @overload
    def __call__(
        self, workload: Workload, rounds: int | None = None, *, slo: Slo | str | None = None
    ) -> BenchResult: ...

    @overload
    def __call__(
        self, workload: SloSearch, rounds: int | None = None, *, slo: Slo | str | None = None
    ) -> SearchResult: ...

    def __call__(
        self,
        workload: Workload | SloSearch,
        rounds: int | None = None,
        *,
        slo: Slo | str | None = None,
    ) -> BenchResult | SearchResult:
        __tracebackhide__ = True
        if isinstance(workload, SloSearch):
            return self._search(workload)
        target, rounds = self._checked(rounds, slo)
        runs: list[BenchResult] = []
        slo_rounds: list[dict[str, Any]] = []
        before = parts_before(self.deployment)

        live = LiveLine(self.config)
        quiet = self.config.get_verbosity() < 0
        where = f"[sglang] {self.deployment.config_id} {workload.name}"

        def show(p: RunProgress) -> None:
            # Only a run that takes a while gets a line; under -q none.
            if quiet or p.elapsed_s < LIVE_AFTER_S:
                return
            eta = "-" if p.eta_s is None else f"{p.eta_s:.0f}s"
            live.update(
                f"{where} round {len(runs) + 1}/{rounds}: {p.done}/{p.total} requests, "
                f"{p.tokens_per_s:.0f} tok/s, {p.elapsed_s:.0f}s elapsed, ETA {eta}"
            )

        notes: list[str] = []
        paths: list[str] = []
        failure: list[tuple[BenchResult, str]] = []

        def one_round() -> BenchResult:
            for attempt in (1, 2):
                try:
                    measured = run_round(self.deployment, workload, model=self.model, progress=show)
                except SglangError as exc:  # a path that cannot work, a host gone: one line
                    pytest.fail(str(exc), pytrace=False)
                finally:
                    live.clear()
                paths.append(measured.bench_from)
                if not measured.disturbed:
                    runs.append(measured.result)
                    if target is not None:
                        figures = slo_figures(target, measured.records, measured.result.duration)
                        slo_rounds.append(figures)
                    return measured.result
                n = len(runs) + 1
                again = "repeated" if attempt == 1 else "disturbed twice"
                notes.append(f"round {n}: disturbed: {measured.disturbed} ({again})")
            failure.append((measured.result, measured.disturbed))
            raise _Disturbed(measured.disturbed)

        self.config.stash.setdefault(_OURS_KEY, set()).add(self.benchmark.fullname)
        with contextlib.suppress(_Disturbed):
            self.benchmark.pedantic(one_round, rounds=rounds, iterations=1, warmup_rounds=0)
        if failure:
            self._disturbed(workload, runs, failure[0], notes, paths)
        result = runs[-1]
        info = self._extra_info(workload, result, runs)
        info.update(parts_after(self.deployment, before))
        note = cache_report_note(workload, self.deployment, result)
        if note:
            info["cache_report"] = note
        if is_speculative(info) and off_text_reasons(workload):
            info[SPEC_TEXT_KEY] = off_text_reasons(workload)
        slo_text = "" if target is None else str(target)
        identity = identify(workload, bench_from=paths[-1], slo=slo_text)
        info.update(bench_from=paths[-1], disturbed=notes, **identity.as_info())
        if slo_rounds:
            info.update(slo_rounds[-1])
            info["goodput_rounds"] = [r["goodput"] for r in slo_rounds]
        self.benchmark.extra_info.update(info)
        bench_results(self.config).append(info)
        self._gate(identity, runs, rounds, info, one_round, slo_rounds)
        return result

    def _checked(self, rounds: int | None, slo: Slo | str | None) -> tuple[Slo | None, int]:
        """The call's SLO and round count, or one line saying what is wrong with them (one
        workload per test: a second call fails)."""
        __tracebackhide__ = True
        try:
            target = Slo.parse(slo) if isinstance(slo, str) else slo
        except SglangError as exc:
            pytest.fail(str(exc), pytrace=False)
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
        return target, rounds

    def _search(self, search: SloSearch) -> SearchResult:
        """Run the sustainable-load search once; its probes and answer go to extra_info."""
        __tracebackhide__ = True
        if self.used:
            pytest.fail(
                "sglang_bench can run one workload per test; split the workloads into "
                "separate (parametrized) tests",
                pytrace=False,
            )
        self.used = True
        found: list[SearchResult] = []
        paths: list[str] = []

        def probe(workload: Workload, observe: Callable[[RequestRecord], bool]) -> BenchResult:
            try:
                measured = run_round(self.deployment, workload, model=self.model, on_record=observe)
            except SglangError as exc:
                pytest.fail(str(exc), pytrace=False)
            paths.append(measured.bench_from)
            if measured.disturbed:
                raise ProbeDisturbed(measured.disturbed)
            return measured.result

        def one_search() -> SearchResult:
            found.append(search_over(probe, search))
            return found[-1]

        try:
            self.benchmark.pedantic(one_search, rounds=1, iterations=1, warmup_rounds=0)
        except ProbeDisturbed as exc:
            pytest.fail(
                f"{search.name} on {self.deployment.host}: {exc}; the search cannot place the "
                "threshold (the figures would measure the network)",
                pytrace=False,
            )
        outcome = found[-1]
        best = outcome.best_probe
        # the figures of the best probe; when none passed, of the probe that failed at ``low``
        figures: dict[str, Any] = dict((best or outcome.probes[-1]).figures)
        info = {**figures, **self._extra_info(search, None, [])}
        info.update(
            **identify(search, bench_from=paths[-1], slo=str(search.slo)).as_info(),
            slo=outcome.slo,
            search=outcome.as_dict(),
            **{f"max_{search.kind}": outcome.best},
            search_status=outcome.status,
            bench_from=paths[-1],
            disturbed=[
                f"probe at {p.level:g}: disturbed: {p.repeated} (repeated)"
                for p in outcome.probes
                if p.repeated
            ],
        )
        if best is not None:
            info.update(goodput=best.goodput, output_goodput=best.output_goodput)
        self.benchmark.extra_info.update(info)
        bench_results(self.config).append(info)
        return outcome

    def _gate(
        self,
        workload: WorkloadIdentity,
        runs: list[BenchResult],
        rounds: int,
        info: dict[str, Any],
        one_round: Any,
        slo_rounds: list[dict[str, Any]],
    ) -> None:
        """Compare with the baseline; fail the test (one line) when a regression stands."""
        __tracebackhide__ = True
        keeper = gatekeeper(self.config)
        if keeper is None or self.node is None:
            return
        # the baselines plugin read the test's markers at its setup (a bad one failed it there)
        gates = self.node.stash.get(GATES_KEY, {})
        first = len(runs)

        def figures(start: int, stop: int | None = None) -> list[dict[str, Any]]:
            done = runs[start:stop]
            extra = slo_rounds[start:stop] if slo_rounds else [{} for _ in done]
            return [{**r.as_dict(), **s} for r, s in zip(done, extra)]

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
            return figures(start)

        try:
            outcome = keeper.check(
                nodeid=self.node.nodeid,
                name=self.node.name,
                deployment=self.deployment,
                workload=workload,
                rounds=figures(0, first),
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
        info.update(identify(workload, bench_from=paths[-1]).as_info())
        self.benchmark.extra_info.update(info)
        bench_results(self.config).append(info)
        pytest.fail(
            f"{workload.name} on {self.deployment.host}: round {len(runs) + 1} disturbed twice: "
            f"{why}; not compared with the baseline (the figures would measure the network)",
            pytrace=False,
        )

    def _extra_info(
        self, workload: Workload | SloSearch, result: BenchResult | None, runs: list[BenchResult]
    ) -> dict[str, Any]:
        d = self.deployment
        try:
            config = d.resolved.model_dump(mode="json", exclude_none=True)
        except (SglangError, ValueError, TypeError):
            config = {}
        if config.get("env"):  # never an environment value in results (tokens live there)
            config["env"] = {name: REDACTED for name in config["env"]}
        info: dict[str, Any] = result.as_dict() if result is not None else {}
        info.update(
            workload=workload.name,
            workload_spec=workload.describe(),
            config_id=d.config_id,
            # the config's identity: another name for the same digest is the same config
            config_digest=d.config.digest,
            config=config,
            host=d.host,
            sglang_version=d.sglang_version,
            rounds=len(runs),
            output_throughput_rounds=[r.output_throughput for r in runs],
        )
        if isinstance(d, TopologyDeployment):  # every server's GPUs (the verdict's per-gpu)
            info["gpus"] = d.gpus
        return info


def _cache_report_on(deployment: Deployment) -> bool:
    """Whether the server fills ``usage.prompt_tokens_details`` on the OpenAI APIs: its
    ``enable_cache_report`` as it reports it, else the flag in the launch arguments."""
    for told in (deployment.server_args, deployment.server_info):
        if isinstance(told, dict) and "enable_cache_report" in told:
            return bool(told["enable_cache_report"])
    return "--enable-cache-report" in (deployment.resolved.extra_args or ())


def cache_report_note(workload: Workload, deployment: Deployment, result: BenchResult) -> str:
    """One line when a workload that shares prefixes ran on an OpenAI API of a server that
    reports no cached tokens there (SGLang does only with ``--enable-cache-report``); "" when
    there is nothing to say."""
    if workload.api == "generate" or not workload.shares_prefixes:
        return ""
    if result.cache_hit_rate is not None or _cache_report_on(deployment):
        return ""
    return (
        f"{deployment.config_id}: no cache hit rate on the {workload.api} API: SGLang reports "
        "cached tokens there only with --enable-cache-report; add it to the config's "
        'extra_args, or use api="generate"'
    )


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
    group.addoption(
        "--sglang-benchmark-table",
        action="store_true",
        default=False,
        help="Also show pytest-benchmark's own table of each round's wall time (hidden when "
        "every benchmark is an sglang_bench: it ranks workload sizes, not configs).",
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


#: The benchmarks table: header, alignment and how each cell is read from a result.
BENCH_COLUMNS: tuple[tuple[Column, Any], ...] = (
    (Column("config"), lambda r: r["config_id"]),
    (Column("workload"), lambda r: r["workload"]),
    (Column("out tok/s", ">"), lambda r: _fmt(r["output_throughput"])),
    (Column("TTFT p50 ms", ">"), lambda r: _fmt(r["median_ttft_ms"])),
    (Column("ITL p50 ms", ">"), lambda r: _fmt(r["median_itl_ms"], 2)),
    (Column("accept", ">"), lambda r: _fmt(r["accept_length"], 2)),
    (Column("cache hit", ">", optional=True), lambda r: _percent(r.get("cache_hit_rate"))),
    (Column("failed", ">"), lambda r: f"{r['failed']}/{r['completed'] + r['failed']}"),
)


def _percent(rate: Any) -> str:
    """A rate in [0, 1] as a percentage; "" when there is none (the column then goes)."""
    return "" if rate is None else f"{100.0 * rate:.1f}%"


def benchmarks_table(results: list[dict[str, Any]]) -> TextTable:
    """One row per benchmark run, in run order; a run with failed requests in red."""
    table = TextTable([column for column, _ in BENCH_COLUMNS])
    for r in results:
        table.add(*(cell(r) for _, cell in BENCH_COLUMNS), red=bool(r.get("failed")))
    return table


def pytest_sessionfinish(session: pytest.Session) -> None:
    """pytest-benchmark's own table times each round of the whole workload (Min/Max/Mean,
    "OPS"): for an sglang benchmark that ranks workload sizes, not configs, and contradicts the
    table above at a glance. It is hidden when every benchmark is an ``sglang_bench`` (its
    JSON, autosave and compare are untouched); ``--sglang-benchmark-table`` shows it."""
    config = session.config
    bs = getattr(config, "_benchmarksession", None)
    if bs is None or config.getoption("sglang_benchmark_table"):
        return
    ours = config.stash.get(_OURS_KEY, set())
    if ours and all(getattr(b, "fullname", None) in ours for b in bs.benchmarks):
        bs.quiet = True


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    results = all_bench_results(config)
    write_table(terminalreporter, "sglang benchmarks", benchmarks_table(results))
    where = bench_from_by_host(results)
    if where:
        paths = ", ".join(f"{host}: {path}" for host, path in where.items())
        write_lines(terminalreporter, f"load from: {paths}")
    for r in results:
        if per_part_line(r):
            write_lines(terminalreporter, per_part_line(r))
        for note in r.get("disturbed", []):
            write_lines(terminalreporter, f"{r['config_id']} {r['workload']}: {note}", yellow=True)
    for note in dict.fromkeys(r["cache_report"] for r in results if r.get("cache_report")):
        write_lines(terminalreporter, note, yellow=True)
    write_table(terminalreporter, "sglang accept length", accept_table(results))
    spec_note = speculative_text_note(results)
    if spec_note:
        write_lines(terminalreporter, spec_note, yellow=True)
