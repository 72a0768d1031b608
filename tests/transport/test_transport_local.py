"""LocalTransport: commands through ``sh -c``, quoting, timeouts, atomic files."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import HOSTILE

from pytest_sglang.errors import CommandTimeout, TransportError
from pytest_sglang.transport import LocalTransport


@pytest.fixture
def local() -> LocalTransport:
    return LocalTransport()


def test_run_returns_status_and_both_streams(local: LocalTransport) -> None:
    result = local.run("echo out; echo err >&2; exit 3")
    assert (result.rc, result.stdout, result.stderr) == (3, "out\n", "err\n")
    assert not result.ok
    assert local.run("true").ok


def test_hostile_arguments_reach_argv_unchanged(local: LocalTransport, tmp_path: Path) -> None:
    result = local.run("printf '%%s\\0' %s %s %s %s %s %s %s %s %s", *HOSTILE)
    assert result.ok, result.stderr
    assert result.stdout.split("\0")[:-1] == HOSTILE
    assert not Path("/tmp/pwned-by-quoting").exists()


def test_check_output_raises_one_line_on_failure(local: LocalTransport) -> None:
    assert local.check_output("echo %s", "hi") == "hi\n"
    with pytest.raises(TransportError, match=r"rc=2.*boom") as info:
        local.check_output("echo boom >&2; exit 2")
    assert "\n" not in str(info.value)


def test_timeout_kills_the_whole_process_group(local: LocalTransport, tmp_path: Path) -> None:
    pidfile = tmp_path / "bg.pid"
    started = time.monotonic()
    with pytest.raises(CommandTimeout, match=r"timeout") as info:
        local.run("sleep 30 & echo $! > %s; wait", pidfile, timeout=0.5)
    assert time.monotonic() - started < 15
    assert "\n" not in str(info.value)
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _running(pid):
        time.sleep(0.05)
    assert not _running(pid), "the backgrounded child survived the timeout"


def _running(pid: int) -> bool:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return False
    return fields[0] != "Z"


def test_put_is_atomic_with_mode_and_get_round_trips(local: LocalTransport, tmp_path: Path) -> None:
    target = tmp_path / "secret.env"
    target.write_text("old")
    data = bytes(range(256)) * 10
    local.put(data, str(target), mode=0o600)
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert local.get(str(target)) == data
    assert os.listdir(tmp_path) == ["secret.env"]  # no temp file left behind
    local.put(b"x", str(target), mode=0o755)
    assert stat.S_IMODE(target.stat().st_mode) == 0o755


def test_file_errors(local: LocalTransport, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"no such file"):
        local.get(str(tmp_path / "absent"))
    with pytest.raises(TransportError, match=r"cannot write .*/no/such/dir/f"):
        local.put(b"x", str(tmp_path / "no/such/dir/f"))


def test_forward_is_the_port_itself(local: LocalTransport) -> None:
    fwd = local.forward(30000)
    assert fwd.local_port == 30000
    fwd.close()


def test_package_imports_paramiko_only_for_ssh() -> None:
    code = (
        "import sys; sys.modules['paramiko'] = None\n"
        "import pytest_sglang.transport as t\n"
        "print(t.LocalTransport().run('echo ok').stdout.strip())\n"
        "try:\n    t.SshTransport\nexcept ImportError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    ok, message = out.stdout.splitlines()
    assert ok == "ok"
    assert "SshTransport needs the 'paramiko' package" in message
