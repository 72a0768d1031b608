"""How far the simulator and the plugin's predictor agree with the wide goldens, tuned and
held-out part apart.

The wide goldens (tests/data/conformance/wide/, ``conformance/harness.py --matrix wide``) hold
what the real SGLang 0.5.23 makes of model families from their published config.json on seven
GPU profiles. Each config carries ``held_out``: the part of the matrix the simulator and the
predictor were never tuned on (conformance/wide.py says which and why); its figures are the ones
that predict a user's first run, so every figure here is computed for both parts.

The models' config.json files (``models.json``) are written to a directory once per process:
the simulator and the predictor read a model's identity from its own config.json, as SGLang
does, so the replay needs them on disk. Kept free of pytest, like :mod:`agreement`, so it also
runs against an older checkout (the "before" figures).
"""

from __future__ import annotations

import functools
import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agreement import (
    GOLDENS,
    VERSION,
    Agreement,
    JournalAgreement,
    Profile,
    gpu_kwargs,
    load_profiles,
    measure,
    measure_journal,
    run_sim,
)

WIDE = GOLDENS / "wide"
#: the fresh held-out extension (conformance/wide2.py): every config held out, measured once
WIDE2 = GOLDENS / "wide2"
PARTS = ("tuned", "held_out")


@functools.lru_cache(maxsize=2)
def models_root(directory: Path = WIDE) -> str:
    """A directory holding each model's config.json of ``directory``'s ``models.json``
    (written once per process)."""
    root = Path(tempfile.mkdtemp(prefix="sglang-wide-models-"))
    for name, config in json.loads((directory / "models.json").read_text()).items():
        (root / name).mkdir()
        (root / name / "config.json").write_text(json.dumps(config))
    return str(root)


def load_wide(directory: Path = WIDE) -> list[Profile]:
    """The wide matrix's profiles (``WIDE2``: the fresh held-out extension's)."""
    return load_profiles(directory, models_root(directory))


def in_part(part: str) -> Any:
    """The selector of one part of the matrix."""
    held = part == "held_out"
    return lambda entry: bool(entry.get("held_out")) is held


@dataclass
class Refusals:
    """Of the configs real SGLang refuses, those the plugin refuses before any deploy."""

    real_refused: int = 0
    #: refused by the offline predictor knowing the host's GPU (a host's plan gives it)
    refused_up_front: int = 0
    #: refused by the offline predictor without a GPU (a dry run planned without a host)
    refused_without_gpu: int = 0
    #: refused by the predictor or, where it accepts, by the host's resolution before deploy
    #: (:mod:`pytest_sglang.lifecycle.host_resolve`), the simulator playing the host's SGLang
    with_host: int = 0
    misses: list[str] = field(default_factory=list)


def measure_refusals(profiles: list[Profile], part: str) -> Refusals:
    """The plugin's offline path (``ServerConfig.from_argv``, ``resolved()``,
    ``expected_journal()``) on every config the real parser or resolution refuses, with the
    profile's GPU known and without; and the same followed by the host's resolution, the
    simulator playing the host on its GPU."""
    select = in_part(part)
    result = Refusals()
    for profile in profiles:
        for name, entry in profile.golden["configs"].items():
            if entry["exit_code"] == 0 or not select(entry):
                continue
            result.real_refused += 1
            if _refused_offline(profile, name, {}):
                result.refused_without_gpu += 1
            if _refused_offline(profile, name, gpu_kwargs(profile)):
                result.refused_up_front += 1
                result.with_host += 1
                continue
            if run_sim(profile.argv(name), profile).exit_code != 0:
                result.with_host += 1
            result.misses.append(
                f"{profile.key}/{name}: plugin accepts; real {entry.get('last_line', '')!r}"
            )
    return result


def _refused_offline(profile: Profile, name: str, gpu: dict[str, Any]) -> bool:
    """Whether the offline predictor refuses ``name`` (``gpu``: the GPU it knows, if any)."""
    from pytest_sglang.config import ServerConfig

    try:
        config = ServerConfig.from_argv(profile.argv(name), VERSION)
        config.resolved(VERSION, **gpu)
        config.expected_journal(VERSION, **gpu)
    except Exception:
        return True
    return False


@dataclass
class Part:
    """One part's figures: the simulator, the predictor's journal, the plugin's refusals."""

    name: str
    sim: Agreement
    journal: JournalAgreement
    refusals: Refusals

    @staticmethod
    def pct(a: int, b: int) -> float:
        return 100.0 * a / b if b else 100.0

    @property
    def key_fields(self) -> float:
        return self.pct(self.sim.field_agree, self.sim.field_pairs)

    @property
    def warnings(self) -> float:
        return self.pct(self.sim.warn_agree, self.sim.warn_configs)

    @property
    def failures(self) -> float:
        return self.pct(self.sim.fail_agree, self.sim.fail_configs)

    @property
    def refused(self) -> float:
        return self.pct(self.refusals.refused_up_front, self.refusals.real_refused)

    @property
    def refused_without_gpu(self) -> float:
        return self.pct(self.refusals.refused_without_gpu, self.refusals.real_refused)

    @property
    def refused_with_host(self) -> float:
        return self.pct(self.refusals.with_host, self.refusals.real_refused)

    def line(self) -> str:
        s, r, j = self.sim, self.refusals, self.journal
        return (
            f"{self.name}: key fields {s.field_agree}/{s.field_pairs} ({self.key_fields:.2f}%); "
            f"warnings identical {s.warn_agree}/{s.warn_configs} ({self.warnings:.1f}%); "
            f"failing the same way {s.fail_agree}/{s.fail_configs} ({self.failures:.1f}%); "
            f"tracebacks' frames {s.trace_agree}/{s.trace_configs}; "
            f"plugin refuses up front {r.refused_up_front}/{r.real_refused} ({self.refused:.1f}%; "
            f"without the GPU {r.refused_without_gpu}/{r.real_refused}, "
            f"{self.refused_without_gpu:.1f}%), "
            f"with the (simulated) host's resolution {r.with_host}/{r.real_refused} "
            f"({self.refused_with_host:.1f}%); "
            f"expected_journal() {len(j.mismatches)} mismatches in {j.checked_values} values + "
            f"{j.checked_warnings} warnings over {j.configs} configs, {j.refused} configs real "
            "starts refused"
        )


def measure_part(part: str, profiles: list[Profile] | None = None) -> Part:
    profiles = profiles if profiles is not None else load_wide()
    select = in_part(part)
    return Part(
        part,
        measure(profiles, select),
        measure_journal(profiles, select),
        measure_refusals(profiles, part),
    )
