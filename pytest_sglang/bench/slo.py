"""Latency targets (``Slo``) and goodput: how much of a run's traffic met every target.

Why per request and not from the run's percentiles: goodput, as DistServe ("DistServe:
Disaggregating Prefill and Decoding for Goodput-optimized LLM Serving", OSDI 2024) and vLLM's
``bench serve --goodput`` define it, counts the requests that met *every* bound (TTFT, TPOT,
E2E...) themselves; a run whose p99 TTFT is fine may still have served many requests too
slowly between tokens. So each request is checked against each bound with its own value:

- ``ttft`` and ``e2e_latency``: the request's time to first token / end-to-end latency;
- ``tpot``: the request's (E2E - TTFT) / (tokens - 1);
- ``itl``: the request's own per-token inter-token latencies (each chunk's gap spread over the
  tokens it carried, bench_serving's definition, docs/metrics.md), at the bound's percentile (a
  ``median_itl_ms`` bound asks that the request's median be within it; a ``p99`` bound, its p99);
- ``chunk_gap``: the same over the request's gaps between chunks, what a streaming reader
  waits between two pieces of text (under speculative decoding 2-4x the per-token figure).

The bound's percentile also names the share of requests the target is about: ``p99_ttft_ms
<= 1000`` reads "99 % of requests within 1 s". :meth:`Slo.holds` applies each bound's
percentile over the run's requests; the sustainable-rate search (:mod:`.search`) asks instead
that a given fraction of requests (default 99 %) meet every bound at once (DistServe's "SLO
attainment"). Failed requests meet no bound.

The figures in ``extra_info`` (:func:`slo_figures`): ``slo`` (the bounds as text),
``slo_attainment`` (fraction of requests meeting every bound), ``goodput`` (such requests per
second, vLLM's ``request_goodput``) and ``output_goodput`` (their output tokens per second).
Computed here from :class:`~.metrics.RequestRecord` fields with small functions of their own,
so they do not depend on how the run-level metrics summarise the same gaps.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..errors import ConfigError
from .metrics import RequestRecord, percentile

__all__ = ["SLO_METRICS", "Slo", "slo_figures"]

#: What a bound may be on, with what it reads in a request.
SLO_METRICS = ("ttft", "itl", "chunk_gap", "tpot", "e2e_latency")
_STATS = {"median": 50.0, "p50": 50.0, "p90": 90.0, "p99": 99.0}
_NAME = re.compile(r"^(?P<stat>median|p50|p90|p99)_(?P<metric>[a-z_]+?)(?:_ms)?$")
_ALIASES = {"e2e": "e2e_latency", "e2el": "e2e_latency"}
_HINT = (
    "e.g. p99_ttft_ms<=1000,median_itl_ms<=50 "
    "(stats median/p90/p99; ttft, itl, chunk_gap, tpot, e2e)"
)


@dataclass(frozen=True)
class Bound:
    """One target: the ``stat`` percentile of ``metric`` at most ``limit_ms``."""

    metric: str
    stat: str
    limit_ms: float

    @property
    def name(self) -> str:
        """bench_serving's name of the figure: ``p99_ttft_ms``, ``median_itl_ms``."""
        stat = "median" if self.stat in ("p50", "median") else self.stat
        return f"{stat}_{self.metric}_ms"

    @property
    def q(self) -> float:
        return _STATS[self.stat]


def _bound(name: str, value: object) -> Bound:
    m = _NAME.match(name.strip().lower())
    metric = _ALIASES.get(m.group("metric"), m.group("metric")) if m else ""
    if not m or metric not in SLO_METRICS:
        raise ConfigError(f"SLO {name!r}: unknown metric; {_HINT}")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"SLO {name}={value!r}: give a number of milliseconds")
    limit = float(value)
    if not (limit > 0 and math.isfinite(limit)):
        raise ConfigError(f"SLO {name}={value!r}: the bound must be a finite number of ms above 0")
    return Bound(metric, m.group("stat"), limit)


@dataclass(frozen=True)
class Slo:
    """Latency bounds in ms; ``Slo(p99_ttft_ms=1000, median_itl_ms=50)`` or
    ``Slo.parse("p99_ttft_ms<=1000,median_itl_ms<=50")``.

    Hashable and printable (``str`` gives the parseable text), like a :class:`~.Workload`.
    """

    bounds: tuple[Bound, ...]

    def __init__(self, bounds: Iterable[Bound] = (), **limits_ms: float) -> None:
        found = list(bounds) + [_bound(name, value) for name, value in limits_ms.items()]
        if not found:
            raise ConfigError(f"SLO: give at least one bound; {_HINT}")
        names = [b.name for b in found]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ConfigError(f"SLO: {', '.join(dupes)} given twice; give each bound once")
        object.__setattr__(self, "bounds", tuple(found))

    @classmethod
    def parse(cls, text: str) -> Slo:
        """``"p99_ttft_ms<=1000,median_itl_ms<=50"``; ``:`` or ``=`` also separate."""
        bounds: list[Bound] = []
        for part in (p.strip() for p in str(text).split(",")):
            if not part:
                continue
            m = re.match(r"^([A-Za-z0-9_]+)\s*(?:<=|:|=)\s*(\S+?)\s*(?:ms)?$", part)
            if not m:
                raise ConfigError(f"SLO {part!r}: write NAME<=MS; {_HINT}")
            try:
                value = float(m.group(2))
            except ValueError:
                raise ConfigError(f"SLO {part!r}: {m.group(2)!r} is not a number of ms") from None
            bounds.append(_bound(m.group(1), value))
        return cls(bounds)

    def __str__(self) -> str:
        return ",".join(f"{b.name}<={b.limit_ms:g}" for b in self.bounds)

    @property
    def metric(self) -> str:
        """The latency the verdict plots throughput against: the first bound's figure."""
        return self.bounds[0].name

    # -- per request ---------------------------------------------------------------------------

    def met_by(self, record: RequestRecord) -> bool:
        """Whether this one request met every bound (a failed request meets none)."""
        if not record.ok:
            return False
        return all(_request_value(record, b) <= b.limit_ms for b in self.bounds)

    def attainment(self, records: Sequence[RequestRecord]) -> float:
        """Fraction of ``records`` meeting every bound (0 for no records)."""
        return sum(self.met_by(r) for r in records) / len(records) if records else 0.0

    # -- over a run ----------------------------------------------------------------------------

    def holds(self, figures: Mapping[str, object]) -> bool:
        """Each bound's percentile over the run, from a result's flat figures, within it."""
        for b in self.bounds:
            value = figures.get(b.name)
            if not isinstance(value, (int, float)) or value > b.limit_ms:
                return False
        return True


def _request_value(record: RequestRecord, bound: Bound) -> float:
    """The request's own figure for ``bound``, ms (inf when it has none)."""
    if bound.metric == "ttft":
        return record.ttft * 1000.0 if record.ttft is not None else math.inf
    if bound.metric == "e2e_latency":
        return record.e2e * 1000.0 if record.e2e is not None else math.inf
    if bound.metric == "tpot":
        if record.e2e is None or record.ttft is None:
            return math.inf
        if record.completion_tokens <= 1:
            return 0.0
        return (record.e2e - record.ttft) / (record.completion_tokens - 1) * 1000.0
    gaps = record.chunk_gaps if bound.metric == "chunk_gap" else record.itls
    if not gaps:
        return 0.0  # one chunk: no gap to be late
    return percentile([g * 1000.0 for g in gaps], bound.q)


def slo_figures(slo: Slo, records: Sequence[RequestRecord], duration: float) -> dict[str, object]:
    """The run's SLO figures for ``extra_info``: slo, slo_attainment, goodput, output_goodput."""
    good = [r for r in records if slo.met_by(r)]
    duration = max(duration, 1e-9)
    return {
        "slo": str(slo),
        "slo_attainment": len(good) / len(records) if records else 0.0,
        "goodput": len(good) / duration,
        "output_goodput": sum(r.completion_tokens for r in good) / duration,
    }
