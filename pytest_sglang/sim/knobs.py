"""The simulator-only knobs, all from ``SGLANG_SIM_*`` environment variables.

Why environment variables: a unit file for the simulator must differ from a real one only in the
executable, so nothing simulator-specific may appear on the command line. The package docstring
(:mod:`pytest_sglang.sim`) lists every knob and its meaning.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..versions import DEFAULT_SGLANG_VERSION, SIMULATED_VERSIONS
from .perf import GpuSpec

__all__ = ["Fault", "SimSettings", "emulated_version"]


def emulated_version(environ: Mapping[str, str] | None = None) -> str:
    """The SGLang version the simulator plays (``SGLANG_SIM_VERSION``, default 0.5.23)."""
    env = os.environ if environ is None else environ
    return env.get("SGLANG_SIM_VERSION", "").strip() or DEFAULT_SGLANG_VERSION


@dataclass(frozen=True)
class Fault:
    """A parsed ``SGLANG_SIM_FAULT``: ``kind`` is oom, cuda-graph, crash-after, hang, slow-start,
    diverge-after (speculative decoding changes greedy outputs from token N on; not fatal) or
    replay (``path``: the startup log to replay)."""

    kind: str = ""
    value: float = 0.0
    path: str = ""


def _capability(raw: str) -> tuple[int, int]:
    """``SGLANG_SIM_GPU_CAPABILITY``: ``12.0`` (Blackwell RTX PRO), ``9.0`` (H100/H200)."""
    major, dot, minor = raw.strip().partition(".")
    if not (major.isdigit() and (not dot or minor.isdigit())):
        _die(f"SGLANG_SIM_GPU_CAPABILITY={raw!r} is not a compute capability; give e.g. 9.0")
    return (int(major), int(minor or 0))


def _float(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        _die(f"{name}={raw!r} is not a number; unset it or give e.g. {name}={default}")
    if value < 0:
        _die(f"{name}={raw!r} is negative; give a value >= 0")
    return value


def _die(message: str) -> None:
    sys.stderr.write(f"sglang-sim: error: {message}\n")
    raise SystemExit(2)


def _fault(raw: str, argv: Sequence[str] = ()) -> Fault:
    """The fault for a server started with ``argv``: ``SGLANG_SIM_FAULT`` is one fault, or
    several separated by ``;`` each limited to the servers whose command line has a flag with a
    value (``oom@--node-rank=1; slow-start=600@--node-rank=0``: one part of a topology fails,
    another is slow); the first that applies wins."""
    for entry in raw.split(";"):
        spec, at, where = entry.partition("@")
        if at and not _has_flag(argv, where.strip(), raw):
            continue
        return _one_fault(spec, raw)
    return Fault()


def _has_flag(argv: Sequence[str], where: str, raw: str) -> bool:
    """``argv`` has ``--flag value`` or ``--flag=value`` for ``where`` = ``--flag=value``."""
    flag, eq, value = where.partition("=")
    if not (flag.startswith("--") and eq):
        _die(f"SGLANG_SIM_FAULT={raw!r}: {where!r} is not FLAG=VALUE (e.g. --node-rank=1)")
    words = list(argv)
    pairs = zip(words, [*words[1:], ""])
    return f"{flag}={value}" in words or any(a == flag and b == value for a, b in pairs)


def _one_fault(raw: str, whole: str) -> Fault:
    raw = raw.strip()
    if not raw:
        return Fault()
    if raw.lower().startswith("replay:"):
        path = raw[len("replay:") :].strip()
        if not os.path.isfile(path) or not os.access(path, os.R_OK):
            _die(f"SGLANG_SIM_FAULT={whole!r}: no readable log at {path!r}; give replay:<file>")
        return Fault("replay", path=path)
    kind, _, value = raw.partition("=")
    kind = kind.strip().lower()
    if kind in ("oom", "cuda-graph", "hang"):
        return Fault(kind)
    if kind in ("crash-after", "slow-start", "diverge-after"):
        try:
            return Fault(kind, float(value))
        except ValueError:
            pass
    _die(
        f"SGLANG_SIM_FAULT={whole!r} is not a fault; use oom, cuda-graph, crash-after=N, hang, "
        "slow-start=SECONDS, diverge-after=N or replay:<file> (each optionally @--flag=value, "
        "several separated by ';')"
    )
    raise AssertionError("unreachable")


@dataclass(frozen=True)
class SimSettings:
    """Every ``SGLANG_SIM_*`` knob, parsed once at start."""

    version: str = DEFAULT_SGLANG_VERSION
    startup_scale: float = 1.0
    time_scale: float = 1.0
    speed_factor: float = 1.0
    fault: Fault = field(default_factory=Fault)
    ignore_flag: str = ""
    ttft_ms: float | None = None
    itl_ms: float | None = None
    #: with TTFT/ITL injection: at most this many requests on their timetables at once, the
    #: rest wait in arrival order (their wait adds to their TTFT); 0 = no limit
    capacity: int = 0
    gpu: GpuSpec = field(default_factory=GpuSpec)
    seed: int = 0
    #: The quality stand-in's accuracy before the config's drops (:mod:`.quality`).
    accuracy: float = 0.85
    #: The fraction of prompts that are near ties: their greedy output varies between runs.
    noise: float = 0.0

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, argv: Sequence[str] = ()
    ) -> SimSettings:
        """The knobs of a server started with ``argv`` (a fault may apply to some servers
        only)."""
        env = os.environ if environ is None else environ
        version = emulated_version(env)
        if version not in SIMULATED_VERSIONS:
            _die(
                f"SGLANG_SIM_VERSION={version!r} is not simulated; use one of "
                + ", ".join(SIMULATED_VERSIONS)
            )
        speed = _float(env, "SGLANG_SIM_SPEED_FACTOR", 1.0)
        if speed == 0:
            _die("SGLANG_SIM_SPEED_FACTOR=0 would never decode; give a value > 0, e.g. 0.9")
        ttft = _float(env, "SGLANG_SIM_TTFT_MS", -1.0)
        itl = _float(env, "SGLANG_SIM_ITL_MS", -1.0)
        default_gpu = GpuSpec()
        gpu = GpuSpec(
            name=env.get("SGLANG_SIM_GPU_NAME", default_gpu.name),
            memory_gb=_float(env, "SGLANG_SIM_GPU_MEMORY_GB", default_gpu.memory_gb),
            bandwidth_tbps=_float(env, "SGLANG_SIM_GPU_BANDWIDTH_TBPS", default_gpu.bandwidth_tbps),
            tflops=_float(env, "SGLANG_SIM_GPU_TFLOPS", default_gpu.tflops),
            total_mib=int(_float(env, "SGLANG_SIM_GPU_MEMORY_MIB", 0)) or None,
            capability=_capability(env.get("SGLANG_SIM_GPU_CAPABILITY", "12.0")),
        )
        return cls(
            version=version,
            startup_scale=_float(env, "SGLANG_SIM_STARTUP_SCALE", 1.0),
            time_scale=_float(env, "SGLANG_SIM_TIME_SCALE", 1.0),
            speed_factor=speed,
            fault=_fault(env.get("SGLANG_SIM_FAULT", ""), argv),
            ignore_flag=env.get("SGLANG_SIM_IGNORE_FLAG", "").strip().lstrip("-").replace("-", "_"),
            ttft_ms=ttft if ttft >= 0 else None,
            itl_ms=itl if itl >= 0 else None,
            capacity=int(_float(env, "SGLANG_SIM_CAPACITY", 0)),
            gpu=gpu,
            seed=int(_float(env, "SGLANG_SIM_SEED", 0)),
            accuracy=min(1.0, _float(env, "SGLANG_SIM_ACCURACY", 0.85)),
            noise=min(1.0, _float(env, "SGLANG_SIM_NOISE", 0.0)),
        )

    @property
    def fixed_timing(self) -> bool:
        """TTFT/ITL injection is on: the model's timing is replaced by the given figures."""
        return self.ttft_ms is not None or self.itl_ms is not None
