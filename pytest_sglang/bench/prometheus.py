"""The server's own Prometheus figures for a run: ``/metrics`` before and after, flattened.

Why before/after and not one read: SGLang's counters (``sglang:generation_tokens_total``, ...)
are cumulative since startup and include warmup and earlier runs, so only the difference
belongs to this run. Gauges (``sglang:spec_accept_length``, ``sglang:gen_throughput``) are the
value after the run; SGLang updates them when it logs a decode batch, so they describe the
run's last window. Only ``sglang:`` series are kept (not the process/python collectors).

Flat names drop the ``sglang:`` prefix:

- counter ``X_total`` -> ``X_delta`` (``generation_tokens_delta``), summed over label sets;
- histogram ``X`` -> ``X_count_delta``, ``X_sum_delta`` and ``X_mean`` (sum / count over the
  run, e.g. ``time_to_first_token_seconds_mean``, the server's own mean TTFT);
- gauge ``X`` -> ``X`` after the run, averaged over label sets (per-rank figures).
"""

from __future__ import annotations

import math
import re
from collections import defaultdict

__all__ = ["Sample", "parse_prometheus", "run_delta"]

PREFIX = "sglang:"
_LINE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(\{[^}]*\})?\s+(\S+)")

#: name -> (kind, [values, one per label set]); kind is counter, gauge, histogram or untyped.
Sample = dict[str, tuple[str, list[float]]]


def parse_prometheus(text: str) -> Sample:
    """The ``sglang:`` series of a Prometheus text exposition, grouped by name.

    Histogram ``_bucket`` series are skipped; ``_sum`` / ``_count`` are kept under their own
    names with kind ``histogram``. Unparseable lines are ignored (a partial scrape is still a
    scrape); a series without a ``# TYPE`` line is a counter when it ends in ``_total``.
    """
    kinds: dict[str, str] = {}
    out: dict[str, tuple[str, list[float]]] = {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            parts = line.split()
            if len(parts) >= 4:
                kinds[parts[2]] = parts[3]
            continue
        if not line.startswith(PREFIX):
            continue
        match = _LINE.match(line)
        if match is None or match.group(1).endswith("_bucket"):
            continue
        name = match.group(1)
        try:
            value = float(match.group(3))
        except ValueError:
            continue
        kind = _kind(name, kinds)
        if kind:
            out.setdefault(name, (kind, []))[1].append(value)
    return out


def _kind(name: str, kinds: dict[str, str]) -> str:
    """The series' kind; "" for one to skip (prometheus_client's ``_created`` timestamps)."""
    if name in kinds:
        return kinds[name]
    for suffix, wanted in (
        ("_total", ("counter",)),
        ("_sum", ("histogram", "summary")),
        ("_count", ("histogram", "summary")),
        ("_created", ("counter", "histogram", "summary")),
    ):
        base = name.removesuffix(suffix)
        if base != name and kinds.get(base) in wanted:
            return "" if suffix == "_created" else kinds[base].replace("summary", "histogram")
    return "counter" if name.endswith("_total") else "untyped"


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def run_delta(before: Sample, after: Sample) -> dict[str, float]:
    """Flat figures of the run between two scrapes (see the module docstring for the names)."""
    out: dict[str, float] = {}
    hist: dict[str, dict[str, float]] = defaultdict(dict)
    for name, (kind, values) in sorted(after.items()):
        short = name.removeprefix(PREFIX)
        if kind in ("counter", "histogram"):
            delta = _finite(sum(values) - sum(before.get(name, (kind, []))[1]))
            if delta is None:
                continue
            if kind == "histogram":
                base, _, part = short.rpartition("_")
                hist[base][part] = delta
                out[f"{short}_delta"] = delta
            else:
                out[f"{short.removesuffix('_total')}_delta"] = delta
        elif values:
            mean = _finite(sum(values) / len(values))
            if mean is not None:
                out[short] = mean
    for base, parts in hist.items():
        count = parts.get("count", 0.0)
        if count > 0 and "sum" in parts:
            out[f"{base}_mean"] = parts["sum"] / count
    return out
