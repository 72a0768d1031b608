"""The real server on this machine, for the tier's tests and for a scenario of your own.

:func:`find_real_sglang` finds the tier's venv (``PYTEST_SGLANG_REAL_VENV``, else the default
that ``make test-real`` installs into) and builds the tiny model once; :func:`local_real_entry`
writes an inventory entry that runs the real server as a process on this machine. Run as a
script, it prints such an inventory, so that any scenario can run against the real server::

    .venv/bin/python tests_real/real_host.py > real-hosts.toml
    .venv/bin/pytest my_scenario.py --sglang-inventory real-hosts.toml --sglang-host real

``production()`` there is the tiny model on CPU (its flags: :data:`CPU_FLAGS`).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import tiny_model

TIER = Path(__file__).resolve().parent
VENV_ENV = "PYTEST_SGLANG_REAL_VENV"
#: Where ``make test-real`` installs the release it names (REAL_VENV in the Makefile).
DEFAULT_VENV = "~/.cache/pytest-sglang/real-0.5.23"
#: The model cache, shared with the test hosts (their root is an overlay of this machine's).
CACHE = Path(os.environ.get("PYTEST_SGLANG_REAL_CACHE", "~/.cache/pytest-sglang")).expanduser()
#: Flags every real server on CPU gets: the CPU device, the native backends (what SGLang would
#: fall back to anyway, said up front) and a small KV pool (else it is sized from free RAM).
CPU_FLAGS = (
    "--device cpu --attention-backend torch_native --sampling-backend pytorch "
    "--disable-cuda-graph --max-total-tokens 16384"
)


@dataclass(frozen=True)
class RealSglang:
    """What a test needs to run the real server here."""

    venv: Path
    version: str
    model: Path
    patch_dir: Path = TIER / "cpu_patch"
    extra_env: Mapping[str, str] = field(default_factory=dict)

    @property
    def python(self) -> str:
        return str(self.venv / "bin" / "python")

    @property
    def launch(self) -> str:
        return f"{self.python} -m sglang.launch_server"

    @property
    def env(self) -> dict[str, str]:
        """The server's environment on CPU: SGLang's CPU engine, the tier's one patch, and no
        model hub (a path that is not a local model must fail here, never be downloaded)."""
        return {
            "SGLANG_USE_CPU_ENGINE": "1",
            "PYTHONPATH": str(self.patch_dir),
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            **self.extra_env,
        }

    def production_line(self, *extra: str) -> str:
        """The tier's production command line (flags only): the tiny model on CPU."""
        return " ".join([f"--model-path {self.model}", CPU_FLAGS, *extra])


def _toml_table(env: Mapping[str, str]) -> str:
    return "{ " + ", ".join(f'{k} = "{v}"' for k, v in env.items()) + " }"


def local_real_entry(name: str, real: RealSglang, production: str) -> str:
    """``[hosts.<name>]``: the real server as a process on this machine."""
    return (
        f"[hosts.{name}]\n"
        f'ssh = "local"\n'
        f'launch = "{real.launch}"\n'
        f'production = "{production}"\n'
        f"env = {_toml_table(real.env)}\n"
    )


class RealSglangMissing(RuntimeError):
    """The tier's venv or model is not there; the message says what to run."""


def find_real_sglang() -> RealSglang:
    """The tier's real SGLang: its venv, version and tiny model (built once, then cached)."""
    raw = os.environ.get(VENV_ENV) or DEFAULT_VENV
    venv = Path(raw).expanduser()
    if not (venv / "bin" / "python").exists():
        raise RealSglangMissing(
            f"the real-SGLang tier needs the real package: run `make test-real` "
            f"({VENV_ENV}={raw} has no bin/python)"
        )
    probe = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import importlib.metadata as m;"
         "print(m.version('sglang'))"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    if probe.returncode != 0:
        raise RealSglangMissing(f"{venv}: sglang is not installed there: run `make test-real`")
    model = CACHE / f"tiny-llama-{tiny_model.digest()}"
    if not (model / "config.json").exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        built = subprocess.run(
            [str(venv / "bin" / "python"), str(TIER / "tiny_model.py"), str(model)],
            capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        if built.returncode != 0:
            tail = (built.stderr.strip().splitlines() or ["no output"])[-1]
            raise RealSglangMissing(f"building the tiny model failed: {tail}")
    return RealSglang(venv=venv, version=probe.stdout.strip(), model=model)


def main() -> int:
    try:
        real = find_real_sglang()
    except RealSglangMissing as exc:
        print(f"real_host.py: {exc}", file=sys.stderr)
        return 2
    print(f"# The real SGLang {real.version} on this machine's CPU, serving the tier's tiny model.")
    print(local_real_entry("real", real, real.production_line()), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
