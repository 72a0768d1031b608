"""The highest sustainable load under an SLO: a bracketing search over bounded probes.

Why bracket-then-bisect and not a fixed ladder of rates (vLLM's ``bench sweep`` and GuideLLM
step through a list): the threshold of an unknown config can sit anywhere between 0.5 and 64
req/s, and a ladder fine enough to place it within 10 % would need dozens of probes. Doubling
from ``low`` finds a passing and a failing level in log2(high / low) probes at most, then each
bisection (geometric, since precision is relative) halves the bracket: 10 % from a factor-2
bracket takes three more probes.

Why probes may stop early: a probe at a rate far over the threshold builds a queue, and every
further request only waits longer. Once more requests have missed the SLO than ``1 -
fraction`` of the probe allows, its outcome is certain, so it stops there (``early_stop:
"over"``). A probe whose every request met every bound with at least half of each bound to
spare is "clearly under": the search then quadruples instead of doubling.

Why "unmet" is a status and not a rate of 0: a config that misses the SLO even at ``low`` has
no sustainable rate in the searched range, and 0 would read as "measured: nothing", hiding
which end of the range was wrong. ``status``: ``"found"`` (threshold bracketed within
``precision``), ``"unmet"`` (fails at ``low``), ``"above range"`` (passes at ``high``),
``"budget"`` (the time budget ran out; the bracket so far is reported).

Why probes run through a :data:`ProbeRunner`: the plugin runs each one from the host's
``bench_from`` path with its stall check (:func:`~.paths.run_round`), as it runs every
benchmark round. A probe the network disturbed is repeated once; disturbed again, the search
ends with :class:`ProbeDisturbed` (a pass or a fail decided by a stall misplaces the threshold).
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from .loadgen import run_workload
from .metrics import BenchResult, RequestRecord
from .slo import Slo, slo_figures
from .workload import SloSearch, Workload

__all__ = ["Probe", "ProbeDisturbed", "ProbeRunner", "SearchResult", "run_search", "search_over"]

#: Runs one probe's workload, calling the observer with each request as it finishes (True:
#: stop there); returns its figures. Raises :class:`ProbeDisturbed` when the probe measured
#: the network rather than the server.
ProbeRunner = Callable[[Workload, Callable[[RequestRecord], bool]], BenchResult]


class ProbeDisturbed(Exception):
    """A probe did not measure the server (the reason: "network stall of 10.0 s at 3.2 s")."""


#: A probe is "clearly under" when every request's figure is within this share of each bound.
CLEARLY_UNDER = 0.5


@dataclass
class Probe:
    """One probe: the level tried and what it measured (its row in the search's curve)."""

    level: float
    requests: int
    completed: int
    attainment: float
    passed: bool
    early_stop: str
    duration_s: float
    request_throughput: float
    output_throughput: float
    goodput: float
    output_goodput: float
    latency_ms: float | None  # the SLO's first figure (e.g. p99_ttft_ms), for the curve
    figures: dict[str, Any] = field(default_factory=dict, repr=False)
    #: why the probe was run twice ("" when its first run measured the server)
    repeated: str = ""


@dataclass
class SearchResult:
    """The search's answer: ``best`` (the highest passing level, None when unmet) and probes."""

    kind: str
    slo: str
    best: float | None
    bracket: tuple[float | None, float | None]
    status: str
    precision: float
    fraction: float
    elapsed_s: float
    probes: list[Probe]

    @property
    def best_probe(self) -> Probe | None:
        passing = [p for p in self.probes if p.passed and p.level == self.best]
        return passing[-1] if passing else None

    def describe(self) -> str:
        """One line: ``max-rate 16.2 req/s (bracket 16.2-17.8, 7 probes, found)``."""
        unit = "req/s" if self.kind == "rate" else "in flight"
        low, high = self.bracket
        if self.status == "unmet":
            return (
                f"max-{self.kind}: the SLO {self.slo} is not met even at {high:g} {unit} "
                f"({len(self.probes)} probes)"
            )
        span = f"{low:g}-{high:g}" if high is not None else f">= {low:g}"
        return (
            f"max-{self.kind} {self.best:g} {unit} (bracket {span}, {len(self.probes)} probes, "
            f"{self.status})"
        )

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["bracket"] = list(self.bracket)
        for probe in out["probes"]:
            probe.pop("figures", None)
        return out


def _level(value: float, kind: str) -> float:
    return float(max(1, round(value))) if kind == "concurrency" else float(f"{value:.4g}")


def _clearly_under(search: SloSearch, records: list[RequestRecord]) -> bool:
    spare = Slo(replace(b, limit_ms=b.limit_ms * CLEARLY_UNDER) for b in search.slo.bounds)
    return bool(records) and all(spare.met_by(r) for r in records)


class _Tally:
    """A probe's observer: keeps its records and says stop once more of them missed the SLO
    than the probe allows (then it cannot pass any more)."""

    def __init__(self, search: SloSearch, allowed: int) -> None:
        self.search = search
        self.allowed = allowed
        self.records: list[RequestRecord] = []
        self.misses = 0

    def __call__(self, record: RequestRecord) -> bool:
        self.records.append(record)
        self.misses += not self.search.slo.met_by(record)
        return self.misses > self.allowed


def _probe(search: SloSearch, level: float, run: ProbeRunner) -> tuple[Probe, bool]:
    """Run one probe (twice when the first was disturbed); returns it and whether it was
    clearly under."""
    workload = search.probe(level)
    allowed = math.floor((1.0 - search.fraction) * workload.num_requests + 1e-9)
    unit = "req/s" if search.kind == "rate" else "in flight"
    repeated = ""
    for attempt in (1, 2):
        tally = _Tally(search, allowed)
        try:
            result = run(workload, tally)
            break
        except ProbeDisturbed as exc:
            if attempt == 2:
                raise ProbeDisturbed(
                    f"the probe at {level:g} {unit} was disturbed twice: {exc}"
                ) from None
            repeated = str(exc)
    records, misses = tally.records, tally.misses
    over = misses > allowed
    stopped = over and len(records) < workload.num_requests
    figures = result.as_dict()
    slo = slo_figures(search.slo, records, result.duration)
    attainment = sum(search.slo.met_by(r) for r in records) / workload.num_requests
    latency = figures.get(search.slo.metric)
    probe = Probe(
        level=level,
        requests=workload.num_requests,
        completed=result.completed,
        attainment=attainment,
        passed=not over,
        early_stop="over" if stopped else "",
        duration_s=result.duration,
        request_throughput=result.request_throughput,
        output_throughput=result.output_throughput,
        goodput=float(slo["goodput"]),  # type: ignore[arg-type]
        output_goodput=float(slo["output_goodput"]),  # type: ignore[arg-type]
        latency_ms=latency if isinstance(latency, (int, float)) else None,
        figures=figures,
        repeated=repeated,
    )
    return probe, not over and _clearly_under(search, records)


def search_levels(
    search: SloSearch,
    run: ProbeRunner,
    clock: Callable[[], float] = time.monotonic,
) -> SearchResult:
    """The search itself, over any way of running a probe (``run``)."""
    began = clock()
    probes: list[Probe] = []
    low: float | None = None  # highest level that passed
    high: float | None = None  # lowest level that failed
    level = _level(search.low, search.kind)
    status = ""
    while True:
        spent = clock() - began
        if probes and spent + max(p.duration_s for p in probes) > search.budget_s:
            status = "budget"
            break
        probe, clear = _probe(search, level, run)
        probes.append(probe)
        if probe.passed:
            low = level
        else:
            high = level
        if low is None:
            status = "unmet"
            break
        if high is None:
            if level >= search.high:
                status = "above range"
                break
            level = _level(min(search.high, level * (4 if clear else 2)), search.kind)
            continue
        if _narrow_enough(search, low, high):
            status = "found"
            break
        mid = _level(math.sqrt(low * high), search.kind)
        if mid <= low or mid >= high:
            status = "found"
            break
        level = mid
    return SearchResult(
        kind=search.kind,
        slo=str(search.slo),
        best=low,
        bracket=(low, high),
        status=status,
        precision=search.precision,
        fraction=search.fraction,
        elapsed_s=clock() - began,
        probes=probes,
    )


def _narrow_enough(search: SloSearch, low: float, high: float) -> bool:
    if search.kind == "concurrency" and high - low <= 1:
        return True
    return high / low - 1 <= search.precision


def search_over(run: ProbeRunner, search: SloSearch) -> SearchResult:
    """Search the sustainable load under ``search.slo``, each probe run by ``run``; one short
    warm-up request first (not part of any probe)."""
    warm = search.probe(search.low)
    with contextlib.suppress(ProbeDisturbed):  # it measures nothing: a stall there costs nothing
        run(Workload.single_stream(min(16, warm.output_tokens)), lambda record: False)
    return search_levels(search, run)


def run_search(base_url: str, search: SloSearch, *, model: str = "default") -> SearchResult:
    """:func:`search_over` with every probe sent from here to ``base_url``."""

    def run(workload: Workload, observe: Callable[[RequestRecord], bool]) -> BenchResult:
        return run_workload(base_url, workload, model=model, observe=observe)

    return search_over(run, search)
