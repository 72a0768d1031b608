"""Upgrade comparisons: a run gated against the baseline of the software it replaced.

Why: the change that most often costs throughput is an upgrade (SGLang, sgl-kernel, torch,
flashinfer, transformers, NCCL, the driver, CUDA), and every upgrade changes the fingerprint
digest that keys the baselines. Without this module the first run on a new release would find
no baseline of its own and compare with nothing. So, when a benchmark has no baseline for its
fingerprint, the stored baselines of the same config and workload measured on the same machine
and model (they differ in :data:`~.fingerprint.SOFTWARE_FIELDS` only) are candidates, and the
most recently saved one is the baseline: the same statistics decide (:func:`.gates.decide`),
and the result says so in one line (:func:`upgrade_line`)::

    SGLang 0.5.22 -> 0.5.23: output_throughput -8.1%, p=0.003 (regression); median_itl_ms
    +0.4%, p=0.41; 3 settings in effect changed

"Settings in effect" are the ``server_args`` each run's startup journal logged and the plugin
verified (:attr:`pytest_sglang.lifecycle.deployment.Deployment.server_args`), read across
releases by field name (a log key an SGLang release renamed is read back as its field,
:func:`pytest_sglang.versions.log_field`); nested settings are compared key by key. A setting
the command line does not set and that differs is a default that changed (or a backend chosen
differently): with the same command line, these are what the user did not ask for.

A run that regressed after an upgrade is never saved silently: ``--sglang-baseline-accept-upgrade``
saves it as the first run of the new fingerprint with :func:`upgrade_record` (who, when, from and
to which versions, each metric's change), and from then on the new release is gated against it.
"""

from __future__ import annotations

import datetime as dt
import getpass
import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..versions import CHANGES, has
from .fingerprint import software_changes, software_label
from .store import BaselineKey, BaselineStore, StoredBaseline

__all__ = [
    "Upgrade",
    "accepted_by",
    "canonical_settings",
    "find_upgrade",
    "settings_diff",
    "settings_digest",
    "upgrade_line",
    "upgrade_record",
]

#: Characters of a setting's value shown in the terminal (the summary JSON keeps all of it).
SHOWN_CHARS = 60
#: Settings that say where a server listens or which seed it drew, not how it runs: a
#: simulator on a free port, or SGLang's random seed drawn at start, differ at every start.
IGNORED_SETTINGS = frozenset({"host", "port", "nccl_port", "dist_init_addr", "random_seed"})
#: The CI variables that name the person behind a job, before the local user name.
_ACTOR_VARIABLES = ("GITHUB_ACTOR", "GITLAB_USER_LOGIN", "BUILD_USER_ID")


@dataclass
class Upgrade:
    """The baseline a run is gated against after an upgrade, and what changed to get there."""

    stored: StoredBaseline
    #: ``(field, before, after)`` per software field that differs
    software: list[tuple[str, Any, Any]]

    @property
    def versions(self) -> str:
        """``SGLang 0.5.22 -> 0.5.23, torch 2.8.0 -> 2.9.1`` (the fields that differ)."""
        return (
            ", ".join(
                f"{software_label(f)} {_shown(before)} -> {_shown(after)}"
                for f, before, after in self.software
            )
            or "the same software"
        )

    def sides(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """The differing software fields before and after."""
        return (
            {f: before for f, before, _ in self.software},
            {f: after for f, _, after in self.software},
        )


def find_upgrade(
    store: BaselineStore, key: BaselineKey, fingerprint: dict[str, Any], session: str
) -> tuple[Upgrade | None, list[StoredBaseline]]:
    """The upgrade baseline of ``key`` (None when no stored fingerprint differs in software
    only), and every other stored fingerprint of its config and workload (for the refusal
    message). Runs this session saved are not candidates; the comparison reads the last
    ``store.history`` runs of the most recently saved candidate."""
    others = store.others(key)
    candidates: list[Upgrade] = []
    for stored in others:
        changes = software_changes(fingerprint, stored.fingerprint)
        before = stored.without_session(session)
        if changes is not None and before.runs:
            candidates.append(Upgrade(before.latest(store.history), changes))
    if not candidates:
        return None, others
    return max(candidates, key=lambda u: u.stored.saved_at), others


def _renamed_keys(version: str) -> dict[str, str]:
    """Log key -> field for every rename that SGLang ``version`` has (none if unparsable)."""
    out: dict[str, str] = {}
    for change in CHANGES:
        try:
            applies = has(change.name, version)
        except ValueError:
            return {}
        if applies:
            out.update({new: field for field, new in change.log_keys})
    return out


def _flatten(values: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in values.items():
        if isinstance(value, Mapping) and value:
            out.update(_flatten(value, f"{prefix}{name}."))
        else:
            out[f"{prefix}{name}"] = value
    return out


def canonical_settings(server_args: Mapping[str, Any], version: str) -> dict[str, Any]:
    """``server_args`` by field name (a log key ``version`` renamed is read back as its field),
    nested settings flattened to dotted names (``cuda_graph_config.decode.max_bs``)."""
    renamed = _renamed_keys(str(version))
    return _flatten({renamed.get(k, k): v for k, v in server_args.items()})


def settings_diff(
    before: Mapping[str, Any],
    before_version: str,
    after: Mapping[str, Any],
    after_version: str,
    set_fields: Iterable[str] = (),
) -> list[dict[str, Any]]:
    """Every setting in effect that differs, by name: ``{"name", "before", "after",
    "source"}``, ``source`` being ``"default"`` (the command line does not set it: a default
    changed, or a backend was chosen differently) or ``"command line"`` (set, and resolved
    otherwise). A setting present on one side only and None on the other is not a change, nor
    is one of :data:`IGNORED_SETTINGS`."""
    old = canonical_settings(before, before_version)
    new = canonical_settings(after, after_version)
    fields = set(set_fields)
    out: list[dict[str, Any]] = []
    for name in sorted(set(old) | set(new)):
        a, b = old.get(name), new.get(name)
        if a == b:
            continue
        top = name.split(".", 1)[0]
        if top in IGNORED_SETTINGS:
            continue
        source = "command line" if top in fields else "default"
        out.append({"name": name, "before": a, "after": b, "source": source})
    return out


def settings_digest(server_args: Mapping[str, Any]) -> str:
    """A short digest of the settings in effect (kept per run; the file keeps the settings)."""
    text = json.dumps(server_args, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _shown(value: Any) -> str:
    text = "-" if value is None or value == "" else str(value)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 3] + "..."


def setting_line(change: Mapping[str, Any]) -> str:
    """``chunked_prefill_size 8192 -> 4096 (default)``."""
    before, after = _shown(change["before"]), _shown(change["after"])
    return f"{change['name']} {before} -> {after} ({change['source']})"


def upgrade_line(
    upgrade: Upgrade, rows: Iterable[Mapping[str, Any]], settings: list[dict[str, Any]] | None
) -> str:
    """The one line: versions, each compared metric's change and p-value (its verdict when it
    is not plain ok), how many settings in effect changed (None: the baseline kept none)."""
    figures = []
    for r in rows:
        if r.get("delta_pct") is None:
            continue
        p = r.get("p_value")
        figure = f"{r['metric']} {r['delta_pct']:+.1f}%" + (f", p={p:.2g}" if p is not None else "")
        if r.get("verdict") not in ("ok", None):
            figure += f" ({r['verdict']})"
        figures.append(figure)
    if settings is None:
        changed = "the baseline's settings in effect were not recorded"
    elif not settings:
        changed = "no setting in effect changed"
    else:
        changed = f"{len(settings)} setting{'' if len(settings) == 1 else 's'} in effect changed"
    return f"{upgrade.versions}: " + "; ".join([*figures, changed])


def accepted_by() -> str:
    """Who accepts: the CI job's actor where the CI names one, else the local user."""
    for name in _ACTOR_VARIABLES:
        if os.environ.get(name):
            return os.environ[name]
    try:
        return getpass.getuser()
    except Exception:  # no user name in this environment (a container without a passwd entry)
        return "unknown"


def upgrade_record(
    upgrade: Upgrade,
    rows: Iterable[Mapping[str, Any]],
    settings: list[dict[str, Any]] | None,
    *,
    accepted: bool,
) -> dict[str, Any]:
    """What a run saved after an upgrade carries (``extra_info["upgrade"]``): from and to which
    versions, the baseline it was compared with, each metric's change, the settings that
    changed and, when ``--sglang-baseline-accept-upgrade`` saved it, who accepted it and when."""
    before, after = upgrade.sides()
    record: dict[str, Any] = {
        "from": before,
        "to": after,
        "baseline": str(upgrade.stored.path),
        "metrics": {
            str(r["metric"]): {
                "baseline": r.get("baseline"),
                "current": r.get("current"),
                "delta_pct": r.get("delta_pct"),
                "p_value": r.get("p_value"),
                "verdict": r.get("verdict"),
            }
            for r in rows
        },
        "settings_changed": settings,
        "accepted": accepted,
        "at": dt.datetime.now(dt.timezone.utc).isoformat(),
    }
    if accepted:
        record["by"] = accepted_by()
    return record
