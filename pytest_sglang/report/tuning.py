"""The tuning verdict: which config of a sweep serves best, by how much, and whether it is sure.

Why a verdict and not only a table: the seeds' question is "which ``--speculative-num-steps``
should production run", and the answer depends on the objective. One stream favours more draft
steps; a loaded server within latency targets may favour fewer. So the verdict states its
objective, ranks the configs by it, names the winner and its margin over the runner-up with a
95 % confidence interval, and says "not distinguishable" when that interval includes no
difference, instead of crowning noise.

Objectives (:data:`OBJECTIVES`), each read from the session's benchmark results:

- ``max-rate`` (default): ``max_rate`` of ``Workload.max_rate`` searches. Its uncertainty is
  the search's bracket: the threshold lies between the highest passing and the lowest failing
  rate; the top two are indistinguishable when their brackets overlap.
- ``single-stream``: ``output_throughput`` of single-stream runs, over their rounds.
- ``goodput``: ``goodput`` (requests/s meeting the SLO) of runs at a fixed rate or a fixed
  concurrency level, per workload.
- ``per-gpu``: ``output_throughput`` per GPU (TP x DP x PP), per workload.

A sweep is one workload: results are grouped by the workload's digest (``workload_key``,
:mod:`pytest_sglang.bench.identity`), not its name, so that a config measured with 64-token
answers is never ranked beside one measured with 128-token ones; two sweeps whose workloads
share a name are told apart by their digests in the titles. Within a sweep a config is its
digest (``config_digest``), not its name: ``production-s3`` and ``eagle-s3-k1-tp4`` with one
digest are one config, ranked once under both names (``production-s3 = eagle-s3-k1-tp4``,
:mod:`.config_names`), never against itself.

Round-based margins use Welch's t-interval of the difference of means; one round gives no
interval (the verdict says so). The Pareto frontier is over every (throughput, latency) point
of the searches' passing probes (latency: the SLO's first bound's figure): a point is on it
when no other point has both more throughput and less latency.

Quality (``quality``: :func:`pytest_sglang.quality.verdict.quality_holds` of the session's
quality evals) takes part: a config whose quality failed is ranked after every config whose
quality holds, noted "fails quality", and never named the winner; the sentence says so when it
was the fastest. The verdict is then "the fastest config whose quality holds".
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..baseline.stats import mean, student_t_sf, variance
from ..terminal import Column, TextTable
from .config_names import config_key, label

__all__ = [
    "OBJECTIVES",
    "Ranked",
    "Verdict",
    "best_per_workload",
    "frontier",
    "titles",
    "tuning_html",
    "tuning_verdicts",
    "verdict_lines",
]

OBJECTIVES = ("max-rate", "single-stream", "goodput", "per-gpu")
DEFAULT_OBJECTIVE = "max-rate"
#: Runs whose goodput a verdict ranks: fixed rates, and fixed concurrency levels (at a level,
#: raw throughput favours whatever queues longest; the SLO says what a user would accept).
GOODPUT_KINDS = ("rate", "concurrency")
_UNITS = {"max-rate": "req/s", "single-stream": "tok/s", "goodput": "req/s", "per-gpu": "tok/s"}


@dataclass
class Ranked:
    """One config's standing: its value, its interval and the values behind it.

    ``config_id`` is the config's first name in the sweep; ``names`` all its names there (one
    digest measured under several names), shown as :attr:`label`."""

    config_id: str
    value: float | None  # None: no value (e.g. the SLO is not met even at the lowest rate)
    low: float | None
    high: float | None
    samples: list[float] = field(default_factory=list)
    note: str = ""
    names: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return label(self.names or [self.config_id])

    def fails(self, failing: frozenset[str]) -> bool:
        """Whether quality failed under any of its names."""
        return any(name in failing for name in self.names or [self.config_id])


@dataclass
class Verdict:
    """The ranking of one sweep by one objective."""

    objective: str
    workload: str
    unit: str
    ranking: list[Ranked]
    winner: str | None
    margin_pct: float | None
    margin_ci_pct: tuple[float, float] | None
    distinguishable: bool | None
    frontier: list[str]
    slo: str = ""
    sentence: str = ""
    #: the workload's digest (``workload_key``); "" for results saved before it was kept
    workload_key: str = ""

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["margin_ci_pct"] = list(self.margin_ci_pct) if self.margin_ci_pct else None
        return out


def _t_quantile(df: float, tail: float = 0.025) -> float:
    """The t value with ``tail`` above it, by bisection on the survival function."""
    low, high = 0.0, 100.0
    for _ in range(80):
        mid = (low + high) / 2
        if student_t_sf(mid, df) > tail:
            low = mid
        else:
            high = mid
    return (low + high) / 2


def _welch_ci(a: Sequence[float], b: Sequence[float]) -> tuple[float, float] | None:
    """95 % interval of mean(a) - mean(b); None with fewer than two rounds on either side."""
    va, vb = variance(a), variance(b)
    if va is None or vb is None:
        return None
    se2 = va / len(a) + vb / len(b)
    diff = mean(a) - mean(b)
    if se2 <= 0:
        return diff, diff
    df = se2**2 / ((va / len(a)) ** 2 / (len(a) - 1) + (vb / len(b)) ** 2 / (len(b) - 1))
    half = _t_quantile(df) * math.sqrt(se2)
    return diff - half, diff + half


def _gpus(info: Mapping[str, Any]) -> int:
    """The GPUs a result's config used: a topology's own count (``gpus``: every server's),
    else its TP x DP x PP."""
    given = info.get("gpus")
    if isinstance(given, int) and given > 0:
        return given
    config = info.get("config") or {}
    count = 1
    for key in ("tp_size", "dp_size", "pp_size"):
        value = config.get(key) if isinstance(config, Mapping) else None
        count *= int(value) if isinstance(value, int) and value > 0 else 1
    return count


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _ranked(objective: str, info: Mapping[str, Any]) -> Ranked | None:
    config_id = str(info.get("config_id", "?"))
    if objective == "max-rate":
        if "max_rate" not in info:
            return None
        search = info.get("search") or {}
        low, high = (search.get("bracket") or [None, None])[:2]
        value = _number(info.get("max_rate"))
        status = str(info.get("search_status", ""))
        note = "" if status == "found" else status
        if value is None:
            note = f"SLO not met even at {high:g} req/s" if high is not None else "SLO not met"
        return Ranked(config_id, value, _number(low), _number(high), note=note)
    if objective == "single-stream":
        if info.get("workload") != "single-stream":
            return None
        samples = [float(v) for v in info.get("output_throughput_rounds") or []]
        value = _number(info.get("output_throughput"))
        samples = samples or ([value] if value is not None else [])
        return Ranked(config_id, mean(samples) if samples else None, None, None, samples)
    if objective == "goodput":
        spec = info.get("workload_spec") or {}
        if "goodput" not in info or spec.get("kind") not in GOODPUT_KINDS or "search" in info:
            return None
        samples = [float(v) for v in info.get("goodput_rounds") or [info["goodput"]]]
        return Ranked(config_id, mean(samples), None, None, samples)
    if objective == "per-gpu":
        if "search" in info or _number(info.get("output_throughput")) is None:
            return None
        gpus = _gpus(info)
        rounds = info.get("output_throughput_rounds") or [info["output_throughput"]]
        samples = [float(v) / gpus for v in rounds]
        return Ranked(config_id, mean(samples), None, None, samples, note=f"{gpus} GPU")
    raise ValueError(f"unknown objective {objective!r}; use one of {', '.join(OBJECTIVES)}")


def frontier(points: Iterable[tuple[str, float, float]]) -> list[tuple[str, float, float]]:
    """The (config, throughput, latency) points no other point beats on both (Pareto)."""
    pts = list(points)
    return [
        p
        for p in pts
        if not any(q[1] >= p[1] and q[2] <= p[2] and (q[1], q[2]) != (p[1], p[2]) for q in pts)
    ]


def curve_points(info: Mapping[str, Any]) -> list[tuple[float, float, bool]]:
    """(output tok/s, SLO latency ms, passed) of every probe of a search result."""
    search = info.get("search") or {}
    out: list[tuple[float, float, bool]] = []
    for probe in search.get("probes") or []:
        tok_s, latency = _number(probe.get("output_throughput")), _number(probe.get("latency_ms"))
        if tok_s is not None and latency is not None:
            out.append((tok_s, latency, bool(probe.get("passed"))))
    return out


def _decide(
    objective: str, workload: str, ranking: list[Ranked], failing: frozenset[str] = frozenset()
) -> Verdict:
    valued = sorted((r for r in ranking if r.value is not None), key=lambda r: -(r.value or 0))
    fastest = valued[0] if valued else None
    for r in ranking:
        if r.fails(failing):
            r.note = "; ".join(n for n in (r.note, "fails quality") if n)
    rejected = [r for r in valued if r.fails(failing)]
    valued = [r for r in valued if not r.fails(failing)]
    ranking = valued + rejected + [r for r in ranking if r.value is None]
    unit = _UNITS[objective]
    verdict = Verdict(objective, workload, unit, ranking, None, None, None, None, [])
    if not valued:
        verdict.sentence = (
            f"{objective}: no config whose quality holds has a value"
            if rejected
            else f"{objective}: no config has a value ({ranking[0].note})"
        )
        return verdict
    first = valued[0]
    verdict.winner = first.config_id
    if len(valued) == 1:
        verdict.sentence = f"{objective}: {first.label} is the only config with a value"
        if rejected:
            verdict.sentence += f" whose quality holds ({rejected[0].label} fails quality)"
        return verdict
    second = valued[1]
    base = second.value or 0.0
    if base > 0:
        verdict.margin_pct = ((first.value or 0.0) / base - 1) * 100
    if objective == "max-rate":
        # brackets: the winner's threshold is at least its low; the runner-up's below its high
        if first.low is not None and second.high is not None and base > 0:
            verdict.distinguishable = first.low >= second.high
            lo = (first.low / second.high - 1) * 100
            hi = ((first.high or math.inf) / second.low - 1) * 100 if second.low else math.inf
            verdict.margin_ci_pct = (lo, hi)
    else:
        ci = _welch_ci(first.samples, second.samples)
        if ci is not None and base > 0:
            verdict.margin_ci_pct = (ci[0] / base * 100, ci[1] / base * 100)
            verdict.distinguishable = ci[0] > 0
    margin = f"{verdict.margin_pct:+.1f} %" if verdict.margin_pct is not None else "?"
    ci_text = ""
    if verdict.margin_ci_pct is not None:
        lo, hi = verdict.margin_ci_pct
        ci_text = (
            f", 95 % CI {lo:+.1f} .. {hi:+.1f} %"
            if objective != "max-rate"
            else (f", bracket {lo:+.1f} .. {hi:+.1f} %")
        )
    head = (
        f"{objective}: {first.label} wins, {first.value:.3g} {unit} vs "
        f"{second.label} {second.value:.3g} ({margin}{ci_text})"
    )
    if verdict.distinguishable is False:
        head += f"; not distinguishable from {second.label} at the measured noise"
    elif verdict.distinguishable is None:
        head += "; no interval (one round)" if objective != "max-rate" else ""
    if fastest is not None and fastest.fails(failing):
        head += f"; {fastest.label} is faster but fails quality"
    verdict.sentence = head
    return verdict


def tuning_verdicts(
    results: Sequence[Mapping[str, Any]],
    objective: str = DEFAULT_OBJECTIVE,
    quality: Mapping[str, bool] | None = None,
) -> list[Verdict]:
    """Every verdict the results allow; the stated ``objective``'s first.

    A sweep is the results of one workload (one search, one single-stream size, one rate) over
    at least two configs; each config (digest) counts once (its last result), under every name
    it was measured with. ``quality`` maps config ids to whether their quality held (absent:
    not evaluated, taken as holding).
    """
    failing = frozenset(cid for cid, holds in (quality or {}).items() if not holds)
    if objective not in OBJECTIVES:
        raise ValueError(f"unknown objective {objective!r}; use one of {', '.join(OBJECTIVES)}")
    order = [objective] + [o for o in OBJECTIVES if o != objective]
    verdicts: list[Verdict] = []
    for obj in order:
        groups: dict[tuple[str, str], dict[str, tuple[Ranked, Mapping[str, Any]]]] = {}
        for info in results:
            ranked = _ranked(obj, info)
            if ranked is not None:
                group = (str(info.get("workload", "")), str(info.get("workload_key", "")))
                by_config = groups.setdefault(group, {})
                config = config_key(info)
                names = by_config[config][0].names if config in by_config else []
                ranked.names = [*names, *([] if ranked.config_id in names else [ranked.config_id])]
                ranked.config_id = ranked.names[0]
                by_config[config] = (ranked, info)
        for (workload, key), by_config in groups.items():
            if len(by_config) < 2:
                continue
            verdict = _decide(obj, workload, [r for r, _ in by_config.values()], failing)
            verdict.workload_key = key
            if obj == "max-rate":
                infos = [i for _, i in by_config.values()]
                verdict.slo = str(infos[0].get("slo", ""))
                points = [
                    (ranked.config_id, tok_s, lat)
                    for ranked, i in by_config.values()
                    for tok_s, lat, passed in curve_points(i)
                    if passed
                ]
                verdict.frontier = sorted({p[0] for p in frontier(points)})
            verdicts.append(verdict)
    return verdicts


def titles(verdicts: Sequence[Verdict]) -> list[str]:
    """Each verdict's workload as people read it: its name, and its digest where another
    verdict of the same objective has a workload of that name."""
    names = [(v.objective, v.workload) for v in verdicts]
    return [
        f"{v.workload} ({v.workload_key[:12]})"
        if v.workload_key and names.count((v.objective, v.workload)) > 1
        else v.workload
        for v in verdicts
    ]


def verdict_lines(verdicts: Sequence[Verdict]) -> list[str]:
    """The terminal's lines: per verdict, its sentence and its ranking."""
    lines: list[str] = []
    for v, title in zip(verdicts, titles(verdicts)):
        slo = f" under {v.slo}" if v.slo else ""
        lines.append(f"[{v.objective}] {title}{slo}")
        lines.append("  " + v.sentence)
        for rank, r in enumerate(v.ranking, 1):
            value = f"{r.value:.3g} {v.unit}" if r.value is not None else "-"
            extra = [r.note] if r.note else []
            if r.low is not None or r.high is not None:
                extra.append(f"bracket {r.low or 0:g}-{r.high if r.high is not None else '?'}")
            if r.config_id in v.frontier:
                extra.append("Pareto frontier")
            tail = f"  ({'; '.join(extra)})" if extra else ""
            lines.append(f"  {rank}. {r.label:<28} {value}{tail}")
    return lines


def best_per_workload(verdicts: Sequence[Verdict], objective: str) -> TextTable:
    """One row per sweep ranked by ``objective``: its workload, the winner and its value, the
    runner-up and the margin, and whether the margin is sure. Why a table of its own: the best
    config often changes with the load (the seeds' best ``--speculative-num-steps`` at
    concurrency 1 is not the best at 32), and a concurrency level or a rate is a workload of its
    own, so the answer per level is spread over one verdict each; this puts it in one place.
    No rows when fewer than two sweeps were ranked by ``objective``."""
    table = TextTable(
        [
            Column("workload"),
            Column("best"),
            Column(objective, ">"),
            Column("runner-up"),
            Column("margin", ">"),
            Column("sure"),
        ]
    )
    mine = [(v, t) for v, t in zip(verdicts, titles(verdicts)) if v.objective == objective]
    if len(mine) < 2:
        return table
    for v, title in mine:
        valued = [r for r in v.ranking if r.value is not None]
        first = next((r for r in valued if r.config_id == v.winner), None)
        second = next((r for r in valued if r is not first), None) if first else None
        margin = f"{v.margin_pct:+.1f} %" if v.margin_pct is not None else "-"
        sure = {True: "yes", False: "no", None: "no interval"}[v.distinguishable]
        table.add(
            title,
            first.label if first else "-",
            f"{first.value:.3g} {v.unit}" if first and first.value is not None else "-",
            second.label if second else "-",
            margin if second else "-",
            sure if second else "-",
        )
    return table


def tuning_html(verdicts: Sequence[Verdict]) -> str:
    """The verdicts as HTML: a sentence and a ranking table each (no plots)."""
    parts: list[str] = []
    for v, title in zip(verdicts, titles(verdicts)):
        slo = f" under {v.slo}" if v.slo else ""
        parts.append(f"<h3>{html.escape(f'{v.objective}: {title}{slo}')}</h3>")
        parts.append(f'<p class="sglang-verdict">{html.escape(v.sentence)}</p>')
        rows = []
        for rank, r in enumerate(v.ranking, 1):
            value = f"{r.value:.3g}" if r.value is not None else "-"
            bracket = f"{r.low:g} - {r.high:g}" if r.low is not None and r.high is not None else ""
            frontier_mark = "yes" if r.config_id in v.frontier else ""
            cells = [str(rank), r.label, value, bracket, frontier_mark, r.note]
            rows.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
        head = "".join(
            f"<th>{h}</th>"
            for h in ("#", "config", html.escape(v.unit), "bracket", "Pareto frontier", "note")
        )
        parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>")
    return "\n".join(parts)
