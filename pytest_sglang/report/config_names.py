"""A config's identity is its digest; its names are what tests called it.

Why: ``production(speculative_num_steps=3)`` on a host whose production runs EAGLE with topk 1
is the very config a sweep calls ``eagle-s3-k1-tp4``. The host runs it once (one digest, one
deployment), and what was measured of it is one config's, shown under both names:
``production-s3 = eagle-s3-k1-tp4``. Rows from before the digest was kept (no
``config_digest``) stand for the config their name gives.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["config_key", "label", "names_by_config", "with_config_names"]

#: What joins a config's names where it is shown once under all of them.
SEPARATOR = " = "


def config_key(row: Mapping[str, Any]) -> str:
    """What identifies the config of a benchmark row: its digest, else (an older row) its name."""
    digest = row.get("config_digest")
    return str(digest) if digest else f"id:{row.get('config_id', '?')}"


def label(names: Sequence[str]) -> str:
    """The names of one config as people read them: ``production-s3 = eagle-s3-k1-tp4``."""
    return SEPARATOR.join(names)


def names_by_config(
    deployments: Iterable[Mapping[str, Any]], benchmarks: Iterable[Mapping[str, Any]] = ()
) -> dict[str, list[str]]:
    """Config key -> every name it had in the session, in the order the names first appear:
    the deployments' (``names``, or ``config_id``) first, then the benchmark rows'."""
    names: dict[str, list[str]] = {}

    def add(key: str, name: object) -> None:
        known = names.setdefault(key, [])
        if name and str(name) not in known:
            known.append(str(name))

    for row in deployments:
        key = str(row["digest"]) if row.get("digest") else f"id:{row.get('config_id', '?')}"
        for name in row.get("names") or [row.get("config_id")]:
            add(key, name)
    for row in benchmarks:
        add(config_key(row), row.get("config_id"))
    return names


def with_config_names(
    benchmarks: Iterable[Mapping[str, Any]], names: Mapping[str, Sequence[str]]
) -> list[dict[str, Any]]:
    """Each benchmark row with ``config_names``: every name its config had in the session."""
    out: list[dict[str, Any]] = []
    for row in benchmarks:
        known = list(names.get(config_key(row), ()))
        out.append({**row, "config_names": known or [str(row.get("config_id", "?"))]})
    return out
