"""Quality next to speed: which configs' quality holds, the fastest of them, and the marks.

Why a pure module: the session summary (``--sglang-summary``: ``quality`` rows and
``quality_holds``), the terminal section and the tuning verdict all ask the same questions of
the same rows, and none of them should need pytest to answer.

A quality row (``sglang_quality`` appends one per eval) has ``config_id``, ``kind``
(accuracy / equivalence), ``metric``, ``value`` and ``holds``: False when the eval regressed
against its baseline or missed its floor, True otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "FASTER_BUT_FAILS",
    "display_verdict",
    "fastest_holding",
    "quality_holds",
    "quality_marks",
]

FASTER_BUT_FAILS = "faster but fails quality"


def quality_holds(rows: Iterable[Mapping[str, Any]]) -> dict[str, bool]:
    """Per config id: True when every quality eval of it held, False when any failed. A config
    without a quality eval is absent (unknown, not "holds")."""
    out: dict[str, bool] = {}
    for row in rows:
        cid = str(row.get("config_id"))
        out[cid] = out.get(cid, True) and bool(row.get("holds"))
    return out


def _speeds(bench: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    speeds: dict[str, float] = {}
    for row in bench:
        value = row.get("output_throughput")
        if isinstance(value, (int, float)):
            cid = str(row.get("config_id"))
            speeds[cid] = max(speeds.get(cid, 0.0), float(value))
    return speeds


def fastest_holding(
    quality: Iterable[Mapping[str, Any]], bench: Iterable[Mapping[str, Any]]
) -> str | None:
    """The config with the highest output throughput among those whose quality holds."""
    holds, speeds = quality_holds(quality), _speeds(bench)
    good = [(speeds[c], c) for c, ok in holds.items() if ok and c in speeds]
    return max(good)[1] if good else None


def quality_marks(
    quality: Iterable[Mapping[str, Any]], bench: Iterable[Mapping[str, Any]]
) -> dict[str, str]:
    """``{config_id: "faster but fails quality"}`` for each config that failed quality and is
    faster than every config whose quality holds (or measured speed where none holds)."""
    quality = list(quality)
    holds, speeds = quality_holds(quality), _speeds(bench)
    best = max((speeds[c] for c, ok in holds.items() if ok and c in speeds), default=None)
    return {
        c: FASTER_BUT_FAILS
        for c, ok in holds.items()
        if not ok and c in speeds and (best is None or speeds[c] > best)
    }


def display_verdict(row: Mapping[str, Any], marks: Mapping[str, str]) -> str:
    """A row's verdict for tables: "holds, no baseline" for a missing one, and the config's
    mark on the rows that failed."""
    verdict = str(row.get("verdict"))
    if verdict == "missing":
        verdict = "holds, no baseline"
    mark = marks.get(str(row.get("config_id")))
    return f"{verdict} ({mark})" if mark and not row.get("holds") else verdict
