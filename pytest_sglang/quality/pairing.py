"""Pairing two runs over the same items: the compact per-item record and the discordant items.

Why a record per item: a config and its reference (or its stored run) answer the same items, so
the paired test (:func:`.stats.paired_drop_test`) can use the items whose outcome changed, which
is far more power than comparing two totals. For that the stored run must say which items it
got right, in a form that stays small in a baseline file that grows by one run per save:

- ``items_digest``: the digest of the ordered item list (the task's digest, or the equivalence
  prompt set's), so two runs pair only when they asked the same items in the same order;
- ``outcomes``: one bit per item (1: right, or identical to the reference), packed
  most-significant bit first and written in hex, ``ceil(n / 4)`` characters: 125 for 500 items.

A stored run without them (saved before they existed) or with another item list is compared
with the unpaired test instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["discordant", "pack_outcomes", "stored_outcomes", "unpack_outcomes"]


def pack_outcomes(outcomes: Sequence[bool]) -> str:
    """Per-item outcomes as hex, four items a digit, most significant bit first."""
    if not outcomes:
        return ""
    bits = "".join("1" if o else "0" for o in outcomes)
    bits += "0" * (-len(bits) % 4)
    return f"{int(bits, 2):0{len(bits) // 4}x}"


def unpack_outcomes(packed: str, n: int) -> tuple[bool, ...] | None:
    """The ``n`` outcomes packed by :func:`pack_outcomes`; None when ``packed`` is not that."""
    if n <= 0 or len(packed) != (n + 3) // 4:
        return None
    try:
        value = int(packed, 16)
    except ValueError:
        return None
    bits = f"{value:0{len(packed) * 4}b}"
    return tuple(b == "1" for b in bits[:n])


def stored_outcomes(info: Mapping[str, Any], items_digest: str, n: int) -> tuple[bool, ...] | None:
    """A stored run's per-item outcomes when it asked the same ``n`` items, else None."""
    packed, digest = info.get("outcomes"), info.get("items_digest")
    if not isinstance(packed, str) or not items_digest or digest != items_digest:
        return None
    if info.get("total") != n:
        return None
    return unpack_outcomes(packed, n)


def discordant(baseline: Sequence[bool], current: Sequence[bool]) -> tuple[int, int]:
    """(worse, better): items right in ``baseline`` and wrong in ``current``, and the reverse."""
    if len(baseline) != len(current):
        raise ValueError(f"{len(current)} outcomes against {len(baseline)}: not the same items")
    worse = sum(1 for b, c in zip(baseline, current) if b and not c)
    better = sum(1 for b, c in zip(baseline, current) if c and not b)
    return worse, better
