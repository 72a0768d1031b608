"""A 4-config sweep on two hosts with pytest-xdist, against the same sweep on one host.

Both runs use two simulator hosts of this machine (inventory entries with ``ssh = "local"``) at a
fixed startup scale and realistic serving speed; the sweep deploys each config once and runs a
single-stream decode benchmark and a health check on it. Target: two hosts take <= 0.6x the time
of one.

Usage: .venv/bin/python benchmarks/xdist_scale.py [--startup-scale 0.2]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from helpers import child_env, child_pytest_argv, host_args, local_entry, save_inventory

SUITE = """
import pytest
from pytest_sglang import ServerConfig, sweep
from pytest_sglang.bench import Workload

BASE = ServerConfig(
    model_path="/shared/models/Qwen3.5-122B-A10B", served_model_name="qwen3.5-122b", tp_size=4,
    speculative_algorithm="EAGLE", speculative_num_steps=1, speculative_eagle_topk=1,
)
CONFIGS = sweep(BASE, speculative_num_steps=[1, 2, 3, 4])

@pytest.mark.parametrize("sglang_server", CONFIGS, indirect=True)
def test_decode(sglang_bench):
    assert sglang_bench(Workload.single_stream(64)).failed == 0

@pytest.mark.parametrize("sglang_server", CONFIGS, indirect=True)
def test_health(sglang_server):
    assert sglang_server.get("/health").status_code == 200
"""


def run(tmp: Path, *args: str, scale: str) -> tuple[float, list[dict[str, object]]]:
    out = tmp / "summary.json"
    env = child_env({"SGLANG_SIM_STARTUP_SCALE": scale, "SGLANG_SIM_TIME_SCALE": "1"}, drop=())
    started = time.monotonic()
    subprocess.run(
        child_pytest_argv(
            "-q",
            str(tmp / "test_sweep.py"),
            "--sglang-inventory",
            str(tmp / "hosts.toml"),
            "--sglang-summary",
            str(out),
            *args,
        ),
        check=True,
        env=env,
        capture_output=True,
        cwd=tmp,
    )
    elapsed = time.monotonic() - started
    return elapsed, json.loads(out.read_text())["deployments"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--startup-scale", default="0.2")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        (tmp / "test_sweep.py").write_text(SUITE)
        save_inventory(tmp / "hosts.toml", local_entry("sim-a"), local_entry("sim-b"))
        one, one_records = run(tmp, *host_args("sim-a"), scale=args.startup_scale)
        two, two_records = run(
            tmp, "-n", "2", *host_args("sim-a", "sim-b"), scale=args.startup_scale
        )
    hosts = sorted({str(r["host"]) for r in two_records})
    print(f"{'run':<34} {'wall s':>8} {'deployments':>12}  hosts")
    print(f"{'one host':<34} {one:>8.1f} {len(one_records):>12}  sim-a")
    print(f"{'two hosts, -n 2':<34} {two:>8.1f} {len(two_records):>12}  {', '.join(hosts)}")
    verdict = "ok" if two <= 0.6 * one else "MISSED"
    print(f"\nratio {two / one:.2f} (target <= 0.60): {verdict}")


if __name__ == "__main__":
    main()
