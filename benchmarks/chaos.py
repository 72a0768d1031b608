"""Chaos: interrupt real pytest sessions at random points and check the host comes back intact.

Each round starts a pytest session (a subprocess, as CI runs it) that deploys a config with an
extra file on a systemd + OpenSSH test host and runs a short benchmark against it, waits until
the host's unit really is the session's (so every round interrupts a reconfigured host), then
sends SIGINT, SIGTERM or SIGKILL a random 0..max-delay seconds later: during the restart, the
readiness wait, the benchmark or after it. The session must still be running then and must exit
as the signal says (2, pytest's "interrupted", for SIGINT and SIGTERM; killed for SIGKILL); after
it (and, for SIGKILL, after the follow-up ``pytest --sglang-restore``, which must exit 0 and say
it restored), the unit, its drop-in,
the extra file and the env-file directory must be byte-identical to the originals (sha256, mode,
owner), the service must be in its prior state (active, running the original command), and no
backup or lock may be left behind. Prints one line per round and the tally (target: N/N).

Needs root, systemd-nspawn and sshd (it boots the nspawn test host of tests/testhost.py).
Usage: .venv/bin/python benchmarks/chaos.py [--sessions 20] [--seed 1]
"""

from __future__ import annotations

import argparse
import random
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from helpers import (  # noqa: E402
    booted_test_host,
    child_pytest_argv,
    file_states,
    host_entry,
    interruptible,
    save_inventory,
)

SERVICE = "sglang-chaos.service"
UNIT = f"/etc/systemd/system/{SERVICE}"
DROPIN = f"/etc/systemd/system/{SERVICE}.d/override.conf"
OURS = f"/etc/systemd/system/{SERVICE}.d/zz-pytest-sglang.conf"  # the session's drop-in
EXTRA = "/opt/chaos-kernels/E=16.json"
WATCHED = (
    UNIT,
    DROPIN,
    OURS,
    EXTRA,
    "/etc/pytest-sglang",
    "/var/lib/pytest-sglang",
    "/run/lock/pytest-sglang.json",
)
ORIGINAL_UNIT = (
    "[Unit]\nDescription=production (stand-in)\n[Service]\nExecStart=/bin/sleep infinity\n"
)
ORIGINAL_DROPIN = "[Service]\nEnvironment=PROD=1\n"
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGKILL)
#: The exit status each signal must give: pytest's "interrupted" (2) for SIGINT and for SIGTERM
#: (which the plugin unwinds like Ctrl-C); killed by the signal for SIGKILL.
EXPECTED_RC = {signal.SIGINT: 2, signal.SIGTERM: 2, signal.SIGKILL: -signal.SIGKILL}

SESSION_TEST = f"""
import pathlib, time
import pytest
from pytest_sglang import ServerConfig
from pytest_sglang.bench import Workload

CONFIG = ServerConfig(model_path="/models/Qwen3-8B", served_model_name="qwen3-8b",
                      files={{"{EXTRA}": {{"content": "{{\\"chaos\\": 1}}"}}}})

@pytest.mark.parametrize("sglang_server", [CONFIG], indirect=True)
def test_bench(sglang_bench):
    sglang_bench(Workload.fixed_concurrency(4, num_requests=24, output_tokens=48))
    time.sleep(60)  # the session must still be running when the signal comes
"""


@dataclass
class Tally:
    rounds: list[tuple[str, float, bool, str]] = field(default_factory=list)

    @property
    def ok(self) -> int:
        return sum(1 for r in self.rounds if r[2])

    def line(self) -> str:
        return f"chaos: {self.ok}/{len(self.rounds)} sessions left the host as it was"


def snapshot(host: Any) -> dict[str, str]:
    """sha256 + mode + owner of each watched path, and the service's state and command."""
    out = file_states(host.ssh, WATCHED)
    out["active"] = host.ssh(f"systemctl is-active {SERVICE}").stdout.strip()
    show = host.ssh(f"systemctl show -p ExecStart --value {SERVICE}").stdout
    out["command"] = show.split(";")[1].strip() if ";" in show else show.strip()
    return out


def install_production(host: Any) -> dict[str, str]:
    host.ssh(f"mkdir -p {UNIT}.d /opt/chaos-kernels", check=True)
    host.ssh(f"cat > {UNIT}", input=ORIGINAL_UNIT, check=True)
    host.ssh(f"cat > {DROPIN} && chmod 640 {DROPIN}", input=ORIGINAL_DROPIN, check=True)
    host.ssh(f"echo '{{\"1\": 16}}' > '{EXTRA}' && chmod 600 '{EXTRA}'", check=True)
    host.ssh(f"systemctl daemon-reload && systemctl restart {SERVICE}", check=True)
    return snapshot(host)


def remove_production(host: Any) -> None:
    host.ssh(
        f"systemctl stop {SERVICE}; rm -rf {UNIT} {UNIT}.d /opt/chaos-kernels "
        "/var/lib/pytest-sglang /etc/pytest-sglang; systemctl daemon-reload"
    )


def write_inventory(host: Any, path: Path) -> Path:
    env = {"SGLANG_SIM_STARTUP_SCALE": "0.05", "SGLANG_SIM_ITL_MS": "10"}
    return save_inventory(path, host_entry("chaos", host, SERVICE, env))


def _pytest(workdir: Path, inventory: Path, *extra: str) -> list[str]:
    return child_pytest_argv(
        "-q",
        f"--rootdir={workdir}",
        "--sglang-host",
        "chaos",
        "--sglang-inventory",
        str(inventory),
        "--sglang-lock-timeout",
        "30",
        *extra,
    )


def _reconfigured(host: Any) -> bool:
    """The session's own drop-in is in place (what it writes says pytest-sglang)."""
    return bool(host.ssh(f"grep -q pytest-sglang '{OURS}'").returncode == 0)


def one_round(
    host: Any, workdir: Path, inventory: Path, sig: signal.Signals, delay: float
) -> tuple[bool, str]:
    """Start a session, wait until it has reconfigured the host, signal it ``delay`` s later,
    recover if killed; (everything as it must be?, detail)."""
    (workdir / "test_chaos_session.py").write_text(SESSION_TEST)
    log = (workdir / "session.log").open("wb")
    proc = subprocess.Popen(
        [*_pytest(workdir, inventory), str(workdir / "test_chaos_session.py")],
        cwd=workdir,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        preexec_fn=interruptible,
    )
    problems: list[str] = []
    deadline = time.monotonic() + 120
    while not _reconfigured(host) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    if not _reconfigured(host):
        problems.append("the host was never reconfigured")
    time.sleep(delay)
    if proc.poll() is not None:
        problems.append(f"the session ended (rc={proc.returncode}) before the signal")
    else:
        proc.send_signal(sig)
    try:
        proc.wait(timeout=180)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        log.close()
        return False, "the session did not exit within 180 s of the signal"
    log.close()
    detail = f"rc={proc.returncode}"
    if proc.returncode != EXPECTED_RC[sig]:
        problems.append(f"rc {proc.returncode}, expected {EXPECTED_RC[sig]}")
    if sig == signal.SIGKILL:
        follow = subprocess.run(
            _pytest(workdir, inventory, "--sglang-restore"),
            cwd=workdir,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        said = [line for line in follow.stdout.splitlines() if line.startswith("[sglang]")]
        detail += f"; follow-up rc={follow.returncode}: " + (said[-1] if said else "silent")
        if follow.returncode != 0 or not any("restored" in line for line in said):
            problems.append("the follow-up --sglang-restore did not restore")
    if problems:
        tail = (workdir / "session.log").read_text(errors="replace").strip().splitlines()[-3:]
        detail += "; " + "; ".join(problems) + " | session: " + " / ".join(tail)
    return not problems, detail


def run_chaos(
    host: Any, *, sessions: int, seed: int, min_delay: float = 0.0, max_delay: float = 8.0
) -> Tally:
    """Run the rounds against a booted test host; returns the tally."""
    rng = random.Random(seed)
    tally = Tally()
    original = install_production(host)
    try:
        with tempfile.TemporaryDirectory(prefix="sglang-chaos-") as tmp:
            workdir = Path(tmp)
            inventory = write_inventory(host, workdir / "hosts.toml")
            for i in range(sessions):
                sig = SIGNALS[i % len(SIGNALS)] if i < len(SIGNALS) else rng.choice(SIGNALS)
                delay = rng.uniform(min_delay, max_delay)
                behaved, detail = one_round(host, workdir, inventory, sig, delay)
                now = snapshot(host)
                diff = [k for k in original if original[k] != now.get(k)]
                if diff:
                    detail += f"; differs: {', '.join(diff)}"
                intact = behaved and not diff
                tally.rounds.append((sig.name, delay, intact, detail))
                mark = "ok  " if intact else "FAIL"
                print(f"{mark} round {i + 1:>2}: {sig.name:<7} at +{delay:4.1f}s  {detail}")
                if not intact:  # put the host back for the next round (and see if it can)
                    remove_production(host)
                    original = install_production(host)
    finally:
        remove_production(host)
    print(tally.line())
    return tally


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--max-delay", type=float, default=8.0, help="seconds after the reconfiguration"
    )
    args = parser.parse_args()
    with booted_test_host("chaos", "chaos") as host:
        tally = run_chaos(host, sessions=args.sessions, seed=args.seed, max_delay=args.max_delay)
    return 0 if tally.ok == len(tally.rounds) else 1


if __name__ == "__main__":
    sys.exit(main())
