"""The launcher's ``--help`` flags cached across sessions (``lifecycle/launcher_cache.py``), on a real
launcher: a virtual environment into which pip installed a distribution named ``sglang`` whose
``launch_server`` answers ``--help`` with argparse and counts how often it was asked.

Each child ``pytest --sglang-dry-run`` is a session of its own (a new process: nothing is kept in
memory between them); the dry run preflights the config, which needs the flags.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from pytest_sglang.lifecycle import launcher, launcher_cache
from pytest_sglang.lifecycle.deployers import make_deployer
from pytest_sglang.lifecycle.hosts import resolve_host, transport_for

LAUNCH_SERVER = '''"""A launcher whose --help is counted (in $HELP_COUNT) and costs nothing else."""
import argparse, os, sys
if "--help" in sys.argv and os.environ.get("HELP_COUNT"):
    with open(os.environ["HELP_COUNT"], "a") as f:
        f.write("help\\n")
parser = argparse.ArgumentParser(prog="python -m sglang.launch_server")
for flag in FLAGS:
    parser.add_argument(flag)
parser.parse_args()
'''
FLAGS = ["--model-path", "--port", "--host", "--tp-size"]


def _wheel(directory: Path, flags: list[str]) -> Path:
    dist_info = "sglang-0.5.23.dist-info"
    files = {
        "sglang/__init__.py": b'__version__ = "0.5.23"\n',
        "sglang/launch_server.py": f"FLAGS = {flags!r}\n{LAUNCH_SERVER}".encode(),
        f"{dist_info}/METADATA": b"Metadata-Version: 2.1\nName: sglang\nVersion: 0.5.23\n",
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
    path = directory / "sglang-0.5.23-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        for name, data in files.items():
            wheel.writestr(name, data)
    return path


@pytest.fixture
def counted_launcher(tmp_path: Path) -> Path:
    """The python of a fresh venv where pip (offline) installed the counting sglang."""
    if importlib.util.find_spec("pip") is None:
        pytest.skip("pip is not installed in the test interpreter")
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True
    )
    python = tmp_path / "venv" / "bin" / "python"
    _install(python, _wheel(tmp_path, FLAGS))
    return python


def _install(python: Path, wheel: Path) -> None:
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-index"]
    options = ["--no-deps", "--no-input", "--disable-pip-version-check", "-q", "--force-reinstall"]
    subprocess.run([*pip, *options, str(wheel)], check=True)


def _inventory(tmp_path: Path, python: Path) -> Path:
    inventory = tmp_path / "sglang-hosts.toml"
    inventory.write_text(
        f'[hosts.gpu-box]\nssh = "local"\nlaunch = "{python} -m sglang.launch_server"\n'
        'env = { HF_TOKEN = "hf_cachesecret1", HELP_COUNT = "' + str(tmp_path / "count") + '" }\n'
    )
    return inventory


SUITE = """
import pytest
from pytest_sglang import ServerConfig

@pytest.mark.parametrize("sglang_server", [ServerConfig(model_path="/m")], indirect=True)
def test_serves(sglang_server):
    pass
"""


def _helps(tmp_path: Path) -> int:
    count = tmp_path / "count"
    return len(count.read_text().splitlines()) if count.exists() else 0


def test_a_later_session_skips_help_until_sglang_changes_or_refresh(
    pytester: pytest.Pytester, tmp_path: Path, counted_launcher: Path
) -> None:
    inventory = _inventory(tmp_path, counted_launcher)
    pytester.makepyfile(SUITE)
    cache = tmp_path / "cache"
    env = {"PYTEST_SGLANG_CACHE_DIR": str(cache)}
    args = ["--sglang-dry-run", "--sglang-host", "gpu-box", "--sglang-inventory", str(inventory)]

    def session(*extra: str) -> None:
        old = dict(os.environ)
        os.environ.update(env)
        try:
            result = pytester.runpytest_subprocess(*args, *extra)
        finally:
            os.environ.clear()
            os.environ.update(old)
        result.assert_outcomes(skipped=1)

    session()
    assert _helps(tmp_path) == 1, "the first session runs --help"
    session()
    assert _helps(tmp_path) == 1, "a later session with the same SGLang must not run --help"
    session("--sglang-refresh")
    assert _helps(tmp_path) == 2, "--sglang-refresh runs --help again"
    # SGLang changes on the host (an upgrade with one more flag): the cache misses.
    _install(counted_launcher, _wheel(tmp_path, [*FLAGS, "--new-flag"]))
    session()
    assert _helps(tmp_path) == 3, "a changed SGLang must be asked again"
    stored = [p.read_text() for p in (cache / "probes").glob("*.json")]
    assert len(stored) == 2 and any('"--new-flag"' in text for text in stored)
    assert not any("hf_cachesecret1" in text for text in stored), "a secret reached the cache"


def test_cached_flags_cost_one_command_and_a_bad_entry_is_a_miss(
    tmp_path: Path, counted_launcher: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a new session with the flags cached, version and flags take one command on the
    host; a cache entry that cannot be read is asked again and rewritten."""
    monkeypatch.setenv(launcher_cache.CACHE_ENV, str(tmp_path / "cache"))
    spec = resolve_host("gpu-box", inventory_path=_inventory(tmp_path, counted_launcher))

    def new_session() -> frozenset[str]:
        for memo in (launcher._HELP_CACHE, launcher._VERSION_CACHE, launcher._IDENTITY_CACHE):
            memo.clear()  # what a new process starts with
        deployer = make_deployer(spec, transport_for(spec))
        assert deployer.launcher.sglang_version() == "0.5.23"
        flags = deployer.launcher.help_flags()
        new_session.round_trips = deployer.transport.round_trips  # type: ignore[attr-defined]
        deployer.close()
        return flags

    first = new_session()
    assert set(FLAGS) <= first and _helps(tmp_path) == 1
    assert new_session() == first and _helps(tmp_path) == 1
    assert new_session.round_trips == 1  # type: ignore[attr-defined]
    (entry,) = (tmp_path / "cache" / "probes").glob("*.json")
    entry.write_text("{not json")
    assert new_session() == first and _helps(tmp_path) == 2
    assert new_session() == first and _helps(tmp_path) == 2  # rewritten, read again
