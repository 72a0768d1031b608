"""Facts about the machine a report's numbers came from: host, GPUs, driver, SGLang, model.

Why asked while a deployment is up: the session restores and disconnects every host before the
report files are written, so the GPU inventory is read (``nvidia-smi``, bounded by a timeout)
the first time a host's deployment is seen, and kept. The embedded simulator has no GPU; it is
reported as simulated rather than as whatever GPU the developer's machine happens to have.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import SglangError

if TYPE_CHECKING:
    from ..lifecycle.deployment import Deployment

__all__ = ["HostFacts", "environment_properties", "host_facts"]

NVIDIA_SMI = "nvidia-smi --query-gpu=name,driver_version --format=csv,noheader"
NVIDIA_SMI_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class HostFacts:
    host: str
    gpus: str
    driver: str
    sglang_version: str
    model: str


def _gpu_inventory(deployment: Deployment) -> tuple[str, str]:
    deployer = deployment.deployer
    if deployer is None:
        return "unknown (host already restored)", "unknown"
    if deployer.spec.kind == "local":
        return "simulated (pytest_sglang.sim)", "none"
    try:
        result = deployer.transport.run(NVIDIA_SMI, timeout=NVIDIA_SMI_TIMEOUT_S)
    except SglangError as exc:
        return f"unknown ({type(exc).__name__})", "unknown"
    if result.rc != 0:
        return "unknown (nvidia-smi failed)", "unknown"
    names: Counter[str] = Counter()
    drivers: list[str] = []
    for line in result.stdout.splitlines():
        name, _, driver = line.rpartition(",")
        if not name.strip():
            continue
        names[name.strip()] += 1
        if driver.strip() and driver.strip() not in drivers:
            drivers.append(driver.strip())
    gpus = ", ".join(f"{count}x {name}" for name, count in names.items()) or "none found"
    return gpus, ", ".join(drivers) or "unknown"


def host_facts(deployment: Deployment) -> HostFacts:
    """The facts of the deployment's host (runs ``nvidia-smi`` there, except on ``local``)."""
    gpus, driver = _gpu_inventory(deployment)
    cfg = deployment.config
    return HostFacts(
        host=deployment.host,
        gpus=gpus,
        driver=driver,
        sglang_version=deployment.sglang_version,
        model=cfg.model_path,
    )


def _escape(value: str) -> str:
    """A Java properties value: backslashes and line breaks escaped."""
    return (
        value.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    )


def environment_properties(
    facts: Sequence[HostFacts], models: Sequence[str] = (), bench_from: Mapping[str, str] = {}
) -> str:
    """``environment.properties`` text; several hosts are joined with ``; `` in run order.

    ``bench_from``: where each host's benchmark load came from (:mod:`..bench.route`), shown
    because the same server measured through the SSH forward reads a fraction of its speed."""

    def joined(values: Sequence[str]) -> str:
        return "; ".join(dict.fromkeys(v for v in values if v))

    pairs = {
        "host": joined([f.host for f in facts]),
        "gpus": joined([f"{f.host}: {f.gpus}" if len(facts) > 1 else f.gpus for f in facts]),
        "driver": joined([f.driver for f in facts]),
        "sglang_version": joined([f.sglang_version for f in facts]),
        "model": joined([*models, *(f.model for f in facts)]),
        "bench_from": joined(
            [
                f"{host}: {kind}" if len(bench_from) > 1 else kind
                for host, kind in bench_from.items()
            ]
        ),
    }
    return "".join(f"{key}={_escape(value)}\n" for key, value in pairs.items() if value)
