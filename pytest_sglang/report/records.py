"""What the report keeps of each test: its config, its parameters and its benchmark figures.

Why a record of our own instead of reading ``bench_results``: the benchmark's ``extra_info`` has
neither the test's node id nor its other parameters (``concurrency``), and a sweep plot needs
both to know what was swept. Records are plain data, so sweeps, tables and the HTML summary can
be built and tested without pytest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..bench.route import bench_from_by_host

__all__ = ["LATENCY_METRICS", "BenchRecord", "load_paths", "scalar_metrics"]

#: Latency figures in milliseconds (lower is better), in the order tables show them.
LATENCY_METRICS: tuple[str, ...] = (
    "median_ttft_ms",
    "p99_ttft_ms",
    "median_itl_ms",
    "p99_itl_ms",
    "mean_tpot_ms",
    "median_e2e_latency_ms",
)


@dataclass
class BenchRecord:
    """One benchmark run of one test.

    ``test`` is the node id without its parameters (``path::test_name``); ``params`` are the
    test's parameters other than the config (e.g. ``{"concurrency": 4}``); ``tuned`` are the
    SGLang fields the requested config sets; ``info`` is the benchmark's ``extra_info``.
    """

    nodeid: str
    test: str
    host: str
    config_id: str
    tuned: dict[str, Any]
    params: dict[str, Any]
    info: dict[str, Any]
    start_ms: int = 0
    stop_ms: int = 0

    @property
    def workload(self) -> str:
        return str(self.info.get("workload", ""))

    def metric(self, name: str) -> float | None:
        value = self.info.get(name)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        return float(value)


def load_paths(records: Sequence[BenchRecord]) -> dict[str, str]:
    """:func:`bench_from_by_host` of the report's benchmark records."""
    return bench_from_by_host({**record.info, "host": record.host} for record in records)


def scalar_metrics(info: dict[str, Any]) -> dict[str, Any]:
    """The flat figures of a benchmark's ``extra_info`` (numbers and short strings only)."""
    skip = {"config", "workload_spec", "errors", "failures", "output_throughput_rounds"}
    return {
        key: value
        for key, value in info.items()
        if key not in skip and (value is None or isinstance(value, (int, float, str)))
    }
