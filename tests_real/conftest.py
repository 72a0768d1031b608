"""The real-SGLang tier: every test here runs the real ``sglang`` package (``make test-real``).

``make test-real`` installs the release named by ``REAL_SGLANG_VERSION`` into its own cached venv
(``tests_real/install_sglang.sh``) and runs this directory with ``PYTEST_SGLANG_REAL_VENV``
pointing at it. Here:

- :func:`real_sglang` (session): the venv, the tiny model built from nothing by
  ``tests_real/tiny_model.py`` (cached under ``~/.cache/pytest-sglang`` by the builder's digest),
  the CPU patch directory and the environment a server needs on this CPU-only machine;
- :func:`real_inventory`: an inventory with the real server as a ``local`` process host
  (``real``), and on request a systemd test host whose production unit runs it.

Without the venv the whole tier fails with one line naming ``make test-real`` (under ``CI=true``
and everywhere else alike: asking for this tier and not getting it is never a silent skip).
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest

TIER = Path(__file__).resolve().parent
sys.path.insert(0, str(TIER.parent / "tests"))  # helpers, testhost
sys.path.insert(0, str(TIER))

import tiny_model  # noqa: E402
from testhost import STATE_ROOT, TestHostFactory, missing_prerequisites  # noqa: E402

from pytest_sglang.deploy.probes import CACHE_ENV  # noqa: E402

# As in tests/: the tier's probe cache is its own, never the user's ~/.cache (tests/conftest.py).
if CACHE_ENV not in os.environ:
    os.environ[CACHE_ENV] = tempfile.mkdtemp(prefix="pytest-sglang-cache-")
    atexit.register(shutil.rmtree, os.environ[CACHE_ENV], True)

VENV_ENV = "PYTEST_SGLANG_REAL_VENV"
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


@pytest.fixture(scope="session")
def real_sglang() -> RealSglang:
    """The tier's real SGLang: its venv, version and tiny model (built once, then cached)."""
    raw = os.environ.get(VENV_ENV, "")
    venv = Path(raw).expanduser() if raw else None
    if venv is None or not (venv / "bin" / "python").exists():
        pytest.fail(
            f"the real-SGLang tier needs the real package: run `make test-real` "
            f"({VENV_ENV}={raw or 'unset'} has no bin/python)",
            pytrace=False,
        )
    probe = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import importlib.metadata as m;"
         "print(m.version('sglang'))"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    if probe.returncode != 0:
        pytest.fail(f"{venv}: sglang is not installed there: run `make test-real`", pytrace=False)
    version = probe.stdout.strip()
    model = CACHE / f"tiny-llama-{tiny_model.digest()}"
    if not (model / "config.json").exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        built = subprocess.run(
            [str(venv / "bin" / "python"), str(TIER / "tiny_model.py"), str(model)],
            capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        if built.returncode != 0:
            tail = (built.stderr.strip().splitlines() or ["no output"])[-1]
            pytest.fail(f"building the tiny model failed: {tail}", pytrace=False)
    return RealSglang(venv=venv, version=version, model=model)


@pytest.fixture(scope="session")
def systemd_host_factory(request: pytest.FixtureRequest) -> TestHostFactory:
    """Test hosts as in tests/ (tests/testhost.py); here CI must have them, like the tier."""
    missing = missing_prerequisites()
    if missing:
        message = "the systemd test host needs " + ", ".join(missing)
        if os.environ.get("CI") == "true":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    factory = TestHostFactory(STATE_ROOT)
    request.addfinalizer(factory.close)
    return factory
