"""The real-host probes against real output, not against the project's own fakes.

- GPU inventory (``report.environment.host_facts``) and fingerprint (``baseline.fingerprint``):
  ``nvidia-smi`` replays, over the local shell, output that real RTX PRO 6000 Blackwell, H100
  and H200 hosts printed in public bug reports (tests/data/nvidia_smi_published.json: the
  published lines, their sources, and how the ``--query-gpu`` lines follow from them).
- SGLang version (``Deployer.sglang_version``): the launcher's Python is a real virtual
  environment into which pip installed a distribution named ``sglang`` (version 0.5.23), so
  ``importlib.metadata`` reads real installed metadata; and one without it.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, cast

import pytest

from pytest_sglang.baseline.fingerprint import gpu_facts
from pytest_sglang.config import ServerConfig
from pytest_sglang.errors import PreflightError
from pytest_sglang.lifecycle.deployers import make_deployer
from pytest_sglang.lifecycle.hosts import resolve_host, transport_for
from pytest_sglang.lifecycle.process import ProcessDeployer
from pytest_sglang.lifecycle.spec import HostSpec
from pytest_sglang.report.environment import NVIDIA_SMI, host_facts
from pytest_sglang.transport.local import LocalTransport

if TYPE_CHECKING:
    from pytest_sglang.lifecycle.deployment import Deployment

DATA = json.loads(
    (Path(__file__).resolve().parents[1] / "data" / "nvidia_smi_published.json").read_text()
)
HOSTS: list[dict[str, Any]] = DATA["hosts"]

# Answers the probes' exact query with the host's CSV lines and a bare call with its published
# table; anything else (another query, a table that was not published) fails like a tool error.
FAKE_NVIDIA_SMI = """#!/bin/sh
here=$(dirname "$0")
if [ "$*" = "{query}" ]; then exec cat "$here/query.out"; fi
if [ "$#" -eq 0 ] && [ -f "$here/table.out" ]; then exec cat "$here/table.out"; fi
echo "nvidia-smi: nothing published for: $*" >&2
exit 6
"""


def _by_id(host: dict[str, Any]) -> str:
    return str(host["id"])


@pytest.fixture(params=HOSTS, ids=_by_id)
def published_host(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> dict[str, Any]:
    """PATH leads to an nvidia-smi that prints this host's output, and to an nvcc that fails."""
    host: dict[str, Any] = request.param
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "query.out").write_text("".join(line + "\n" for line in host["query_stdout"]))
    if host["published_command"] == "nvidia-smi":
        (bindir / "table.out").write_text("".join(line + "\n" for line in host["published"]))
    query = NVIDIA_SMI.removeprefix("nvidia-smi ")
    tools = {"nvidia-smi": FAKE_NVIDIA_SMI.replace("{query}", query), "nvcc": "#!/bin/sh\nexit 1\n"}
    for name, text in tools.items():
        (bindir / name).write_text(text)
        (bindir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    return host


@pytest.mark.parametrize("host", HOSTS, ids=_by_id)
def test_the_derived_query_lines_follow_from_the_published_ones(host: dict[str, Any]) -> None:
    """Each derived CSV line's name and driver are in the published text, once per GPU."""
    assert host["query_stdout"] and host["source"].startswith("https://github.com/")
    text = "\n".join(host["published"])
    for line in host["query_stdout"]:
        name, driver = line.split(", ")
        assert driver in text
        assert len(host["query_stdout"]) == sum(name in row for row in host["published"])


def test_the_probes_ask_the_query_the_data_answers() -> None:
    """The fake answers NVIDIA_SMI's query with lines derived for DATA's: they must agree."""
    assert DATA["query"] == NVIDIA_SMI


def test_gpu_facts_from_published_output(published_host: dict[str, Any]) -> None:
    """The baseline fingerprint's GPU fields, from a real host's nvidia-smi output."""
    expect = published_host["expect"]
    facts = gpu_facts(LocalTransport())
    assert facts == {key: expect[key] for key in ("gpu_name", "gpu_count", "driver", "cuda")}


def test_report_gpu_inventory_from_published_output(published_host: dict[str, Any]) -> None:
    """The report's ``gpus``/``driver`` of a (non-simulated) host, from its nvidia-smi output."""
    spec = HostSpec(
        name="gpu-a",
        kind="ssh",
        launch="/opt/sglang/.venv/bin/python -m sglang.launch_server",
        hostname="gpu-a",
        deployer="process",
    )
    deployer = ProcessDeployer(spec, LocalTransport())  # the host's shell is this machine's
    deployment = SimpleNamespace(
        host="gpu-a",
        deployer=deployer,
        config=ServerConfig(model_path="/models/m"),
        sglang_version="0.5.23",
    )
    facts = host_facts(cast("Deployment", deployment))
    expect = published_host["expect"]
    assert (facts.gpus, facts.driver) == (expect["gpus"], expect["driver"])


# -- the SGLang version probe -----------------------------------------------------------------

SGLANG_VERSION = "0.5.23"


def _wheel(directory: Path) -> Path:
    """A minimal pure-Python wheel of a distribution named ``sglang`` (stdlib only)."""
    dist_info = f"sglang-{SGLANG_VERSION}.dist-info"
    files = {
        "sglang/__init__.py": f'__version__ = "{SGLANG_VERSION}"\n'.encode(),
        f"{dist_info}/METADATA": (
            f"Metadata-Version: 2.1\nName: sglang\nVersion: {SGLANG_VERSION}\n"
        ).encode(),
        f"{dist_info}/WHEEL": (
            b"Wheel-Version: 1.0\nGenerator: pytest-sglang-tests\nRoot-Is-Purelib: true\n"
            b"Tag: py3-none-any\n"
        ),
    }
    record = []
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}\n")
    files[f"{dist_info}/RECORD"] = "".join([*record, f"{dist_info}/RECORD,,\n"]).encode()
    path = directory / f"sglang-{SGLANG_VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        for name, data in files.items():
            wheel.writestr(name, data)
    return path


def _venv(path: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    return path / "bin" / "python"


@pytest.fixture(scope="module")
def venv_with_sglang(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The python of a fresh venv where pip (offline) installed sglang 0.5.23."""
    if importlib.util.find_spec("pip") is None:
        pytest.skip("pip is not installed in the test interpreter")
    root = tmp_path_factory.mktemp("launcher-venv")
    python = _venv(root / "venv")
    install = [sys.executable, "-m", "pip", "--python", str(python), "install"]
    options = ["--no-index", "--no-deps", "--no-input", "--disable-pip-version-check", "-q"]
    subprocess.run([*install, *options, str(_wheel(root))], check=True)
    return python


@pytest.fixture(scope="module")
def venv_without_sglang(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _venv(tmp_path_factory.mktemp("bare-venv") / "venv")


def _deployer_for(tmp_path: Path, python: Path, extra: str = "") -> ProcessDeployer:
    """The deployer the plugin builds for an inventory host whose launcher is ``python``."""
    inventory = tmp_path / "sglang-hosts.toml"
    inventory.write_text(
        f'[hosts.gpu-box]\nssh = "local"\nlaunch = "{python} -m sglang.launch_server"\n{extra}'
    )
    spec = resolve_host("gpu-box", inventory_path=inventory)
    deployer = make_deployer(spec, transport_for(spec))
    assert isinstance(deployer, ProcessDeployer)
    return deployer


def test_version_probe_reads_the_installed_distribution(
    tmp_path: Path, venv_with_sglang: Path
) -> None:
    """No sglang_version in the inventory: the launcher's Python reports its installed sglang."""
    site = venv_with_sglang.parent.parent / "lib"
    installed = list(site.glob(f"python*/site-packages/sglang-{SGLANG_VERSION}.dist-info"))
    assert len(installed) == 1 and (installed[0] / "INSTALLER").read_text().strip() == "pip"
    deployer = _deployer_for(tmp_path, venv_with_sglang)
    assert deployer.launcher.sglang_version() == SGLANG_VERSION
    deployer.close()


def test_version_probe_without_sglang_names_the_fix(
    tmp_path: Path, venv_without_sglang: Path
) -> None:
    """A launcher Python without sglang: a preflight error naming it, the failure and the fix."""
    deployer = _deployer_for(tmp_path, venv_without_sglang)
    with pytest.raises(PreflightError) as info:
        deployer.launcher.sglang_version()
    message = str(info.value)
    assert f"cannot detect the SGLang version with {venv_without_sglang} (rc=1: " in message
    assert "PackageNotFoundError: No package metadata was found for sglang" in message
    assert message.endswith("set sglang_version in the inventory")
    deployer.close()


def test_inventory_version_is_used_without_probing(
    tmp_path: Path, venv_without_sglang: Path
) -> None:
    """sglang_version in the inventory wins: the probe (which would fail here) never runs."""
    deployer = _deployer_for(tmp_path, venv_without_sglang, 'sglang_version = "0.5.18"\n')
    assert deployer.launcher.sglang_version() == "0.5.18"
    deployer.close()
