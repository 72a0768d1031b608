"""What a baseline was measured on: GPU, driver, CUDA, SGLang version, model and its config.

Why a fingerprint: a number measured on an H100 says nothing about an RTX PRO 6000, and a figure
from SGLang 0.5.18 is not a baseline for 0.5.23. Comparisons only happen between runs with the
same fingerprint digest, or (:mod:`.upgrade`) between runs that differ in software only
(:data:`SOFTWARE_FIELDS`: an upgrade is gated against the baseline of the release before);
anything else (another GPU model or count, another model) is refused with the fields that
differ.

Collected over the deployment's own transport, so it describes the host that served the
benchmark: ``nvidia-smi --query-gpu=name,driver_version --format=csv,noheader`` (one line per
GPU), the CUDA version from the ``nvidia-smi`` header (else ``nvcc --version``), and
``sha256sum <model_path>/config.json``, and the versions of the libraries SGLang's speed
depends on (sgl-kernel, torch, flashinfer, transformers, NCCL), read from the installed
packages' metadata by the launcher's python (nothing is imported: no torch start-up). A host
that runs the simulator (launcher ``<python> -m pytest_sglang.sim``) has no nvidia-smi: the
simulator's own settings (``SGLANG_SIM_GPU_*``) are asked through the launcher's python instead,
and it reports no library versions (it uses none of them).

A library whose version cannot be read (not installed, a launcher that is no python) is left
out of the fingerprint rather than stored empty: a fingerprint without them keeps the digest it
had before they were collected.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from typing import TYPE_CHECKING, Any

from ..errors import SglangError
from ..lifecycle.launcher import launch_argv, simulator_python

if TYPE_CHECKING:
    from ..lifecycle.deployment import Deployment
    from ..transport.base import Transport

__all__ = [
    "FINGERPRINT_FIELDS",
    "HARDWARE_FIELDS",
    "LIBRARY_PACKAGES",
    "SOFTWARE_FIELDS",
    "collect_fingerprint",
    "diff_fingerprints",
    "fingerprint_digest",
    "gpu_facts",
    "hardware_of",
    "library_versions",
    "model_config_sha256",
    "software_changes",
    "software_label",
]

#: The fields that make up the digest (extra fields added by hooks are included too).
FINGERPRINT_FIELDS = (
    "gpu_name",
    "gpu_count",
    "driver",
    "cuda",
    "sglang_version",
    "model_path",
    "model_config_sha256",
)

#: Library fields and the distributions that provide them (the first one installed counts).
LIBRARY_PACKAGES: dict[str, tuple[str, ...]] = {
    "sgl_kernel_version": ("sgl-kernel",),
    "torch_version": ("torch",),
    "flashinfer_version": ("flashinfer-python", "flashinfer"),
    "transformers_version": ("transformers",),
    "nccl_version": ("nvidia-nccl-cu13", "nvidia-nccl-cu12", "nvidia-nccl-cu11"),
}
#: Fields that change with an upgrade of the software on the same machine: runs that differ in
#: these alone are compared as an upgrade (:mod:`.upgrade`), with what changed named.
SOFTWARE_FIELDS: dict[str, str] = {
    "sglang_version": "SGLang",
    "sgl_kernel_version": "sgl-kernel",
    "torch_version": "torch",
    "flashinfer_version": "flashinfer",
    "transformers_version": "transformers",
    "nccl_version": "NCCL",
    "driver": "driver",
    "cuda": "CUDA",
}
#: The machine itself: a difference here refuses the comparison (with every other field that is
#: not software: the model, and any field a hook adds, which the plugin cannot judge).
HARDWARE_FIELDS = ("gpu_name", "gpu_count")

_LIBRARIES_CODE = f"""
import importlib.metadata as m, json
def version(names):
    for name in names:
        try:
            return m.version(name)
        except Exception:
            pass
    return ""
print(json.dumps({{k: version(v) for k, v in {LIBRARY_PACKAGES!r}.items()}}))
"""
_SIM_CODE = (
    "import json; from pytest_sglang.sim.knobs import SimSettings; s = SimSettings.from_env(); "
    "print(json.dumps({'gpu_name': s.gpu.name, 'memory_gb': s.gpu.memory_gb}))"
)
_CUDA_RE = re.compile(r"CUDA (?:UMD )?Version:\s*([0-9.]+)")  # "CUDA UMD" from driver R610 on
_NVCC_RE = re.compile(r"release\s+([0-9.]+)")


def fingerprint_digest(fingerprint: dict[str, Any]) -> str:
    """A short, stable digest of the fingerprint (key order does not matter)."""
    text = json.dumps(fingerprint, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def diff_fingerprints(current: dict[str, Any], stored: dict[str, Any]) -> list[str]:
    """``["sglang_version 0.5.23 (baseline 0.5.18)", ...]`` for every field that differs."""
    out: list[str] = []
    for key in sorted(set(current) | set(stored)):
        if current.get(key) != stored.get(key):
            out.append(f"{key} {current.get(key)!r} (baseline {stored.get(key)!r})")
    return out


def software_label(field: str) -> str:
    """``"SGLang"`` for ``sglang_version``: how people name the field in a one-line summary."""
    return SOFTWARE_FIELDS.get(field, field)


def software_changes(
    current: dict[str, Any], stored: dict[str, Any]
) -> list[tuple[str, Any, Any]] | None:
    """``[(field, stored value, current value), ...]`` for every software field that differs,
    in :data:`SOFTWARE_FIELDS` order; None when any other field differs (another machine or
    model: not comparable)."""
    fields = set(current) | set(stored)
    if any(current.get(f) != stored.get(f) for f in fields if f not in SOFTWARE_FIELDS):
        return None
    return [
        (f, stored.get(f), current.get(f))
        for f in SOFTWARE_FIELDS
        if current.get(f) != stored.get(f)
    ]


def hardware_of(fingerprint: dict[str, Any]) -> dict[str, Any]:
    """The fingerprint less its software fields: what runs must share to be one history."""
    return {k: v for k, v in fingerprint.items() if k not in SOFTWARE_FIELDS}


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if lines else ""


def gpu_facts(transport: Transport) -> dict[str, Any]:
    facts: dict[str, Any] = {"gpu_name": "", "gpu_count": 0, "driver": "", "cuda": ""}
    query = transport.run(
        "nvidia-smi --query-gpu=name,driver_version --format=csv,noheader", timeout=60
    )
    if query.ok:
        rows = [
            [cell.strip() for cell in line.split(",")]
            for line in query.stdout.splitlines()
            if line.strip()
        ]
        names = sorted({row[0] for row in rows})
        facts["gpu_name"] = " + ".join(names)
        facts["gpu_count"] = len(rows)
        facts["driver"] = rows[0][1] if rows and len(rows[0]) > 1 else ""
        header = transport.run("nvidia-smi", timeout=60)
        m = _CUDA_RE.search(header.stdout) if header.ok else None
        if m:
            facts["cuda"] = m.group(1)
    if not facts["cuda"]:
        nvcc = transport.run("nvcc --version", timeout=60)
        m = _NVCC_RE.search(nvcc.stdout) if nvcc.ok else None
        if m:
            facts["cuda"] = m.group(1)
    return facts


def _sim_facts(deployment: Deployment, python: str) -> dict[str, Any]:
    deployer = deployment.deployer
    assert deployer is not None
    # Only the simulator's own knobs: the launcher environment may hold secrets. A config on a
    # named launcher: that launcher's, as planned (another may be in use by now).
    plan = deployment.plan
    started = (
        dict(plan.env)
        if plan is not None and deployment.config.launcher is not None
        else {**deployer.launcher_env(), **deployment.deployed.env}
    )
    env = {k: v for k, v in started.items() if k.startswith("SGLANG_SIM_")}
    words = [f"{k}={v}" for k, v in sorted(env.items())]
    command = "env" + " %s" * len(words) + " %s -c %s"
    result = deployer.transport.run(command, *words, python, _SIM_CODE, timeout=120)
    try:
        sim = json.loads(_first_line(result.stdout)) if result.ok else {}
    except ValueError:
        sim = {}
    return {
        "gpu_name": str(sim.get("gpu_name", "")) + " (simulated)",
        "gpu_count": 0,
        "driver": "simulator",
        "cuda": "simulator",
    }


def library_versions(transport: Transport, python: str) -> dict[str, str]:
    """The installed versions of :data:`LIBRARY_PACKAGES` in ``python``'s environment (only the
    ones found; nothing when ``python`` does not run)."""
    result = transport.run("%s -c %s", python, _LIBRARIES_CODE, timeout=120)
    try:
        found = json.loads(_first_line(result.stdout)) if result.ok else {}
    except ValueError:
        found = {}
    if not isinstance(found, dict):
        return {}
    return {k: str(v) for k, v in found.items() if k in LIBRARY_PACKAGES and v}


def _launcher_python(argv: list[str]) -> str:
    """The interpreter a real launcher runs (``/opt/venv/bin/python -m sglang.launch_server``),
    "" when its first word is no python (a console script, a container)."""
    return argv[0] if argv and os.path.basename(argv[0]).startswith("python") else ""


def model_config_sha256(transport: Transport, model_path: str) -> str:
    result = transport.run("sha256sum -- %s", f"{model_path.rstrip('/')}/config.json", timeout=120)
    digest = _first_line(result.stdout).split(" ")[0] if result.ok else ""
    return digest if re.fullmatch(r"[0-9a-f]{64}", digest) else "absent"


def collect_fingerprint(deployment: Deployment) -> dict[str, Any]:
    """The host fingerprint of a live deployment (see the module docstring)."""
    fp: dict[str, Any] = {
        "gpu_name": "",
        "gpu_count": 0,
        "driver": "",
        "cuda": "",
        "sglang_version": deployment.sglang_version,
        "model_path": deployment.config.model_path,
        "model_config_sha256": "absent",
    }
    deployer = deployment.deployer
    if deployer is None:
        return fp
    try:
        if deployment.plan is not None and deployment.config.launcher is not None:
            argv = list(deployment.plan.launcher)  # the named launcher it was started with
        else:
            argv = launch_argv(deployer.spec)
    except SglangError:
        argv = []
    python = simulator_python(argv)
    facts = _sim_facts(deployment, python) if python else gpu_facts(deployer.transport)
    fp.update(facts)
    real_python = "" if python else _launcher_python(argv)
    if real_python:
        fp.update(library_versions(deployer.transport, real_python))
    fp["model_config_sha256"] = model_config_sha256(
        deployer.transport, deployment.config.model_path
    )
    return fp
