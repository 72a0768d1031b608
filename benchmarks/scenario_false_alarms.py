"""How often does ``pytest scenarios/`` cry wolf on a busy machine; is a 15 % slower build caught?

``gate_noise.py`` answers this for the gate's statistics on simulated numbers; this script
answers it for the whole thing a user runs, end to end, on the built-in simulator:

1. ``pytest scenarios/ --sglang-baseline-save`` into an empty folder (must pass: a session never
   gates against what it saved itself);
2. ``--cycles`` times: an unchanged rerun that compares with, then saves into, the same folder
   (every failure is a false alarm), and a rerun of a build 15 % slower
   (``SGLANG_SIM_SPEED_FACTOR=0.85``) that compares without saving (every pass is a miss);

all with ``--hogs`` CPU-bound processes running beside it (default: one per core), the way a CI
runner shares its cores. It prints, per cycle and in total, the sessions that failed, the gate
rows compared and those that said "regression".

Run: ``python benchmarks/scenario_false_alarms.py [--cycles 5] [--hogs 2] [--slowdown 0.15]``
(about 3 minutes a cycle on 2 cores; the tuning scenario is left out, as in ``make scenarios``).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Session:
    """One ``pytest scenarios/`` session: its exit status and its gate rows."""

    label: str
    returncode: int
    seconds: float
    compared: int
    regressions: list[str]

    def line(self) -> str:
        rows = ", ".join(self.regressions) or "-"
        return (
            f"{self.label:<22} exit {self.returncode}  {self.seconds:6.1f} s  "
            f"{self.compared:3d} rows compared, {len(self.regressions)} regression(s): {rows}"
        )


def _hog() -> None:  # pragma: no cover - runs in a child process until killed
    while True:
        pass


def run_session(label: str, store: Path, *, save: bool, speed: float) -> Session:
    """Run the scenarios once against ``store`` and read its gate rows from the summary."""
    summary = store.parent / f"{label.replace(' ', '-')}.json"
    argv = [
        sys.executable,
        "-m",
        "pytest",
        "scenarios/",
        "-m",
        "not tuning",
        "-q",
        "-p",
        "no:cacheprovider",
        f"--sglang-baseline-dir={store}",
        f"--sglang-summary={summary}",
    ]
    if save:
        argv.append("--sglang-baseline-save")
    env = {**os.environ, "SGLANG_SIM_SPEED_FACTOR": str(speed)}
    started = time.monotonic()
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    seconds = time.monotonic() - started
    rows = json.loads(summary.read_text()).get("comparisons", []) if summary.exists() else []
    rows = [r for r in rows if r.get("verdict") not in ("missing", "skipped")]
    regressions = [
        f"{str(r.get('nodeid')).rsplit('::', 1)[-1]}:{r.get('metric')}"
        for r in rows
        if str(r.get("verdict", "")).lower() == "regression"
    ]
    if proc.returncode not in (0, 1):
        print(proc.stdout[-3000:] + proc.stderr[-3000:], file=sys.stderr)
    return Session(label, proc.returncode, seconds, len(rows), regressions)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=5)
    parser.add_argument("--hogs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--slowdown", type=float, default=0.15)
    args = parser.parse_args(argv)
    hogs = [multiprocessing.Process(target=_hog, daemon=True) for _ in range(args.hogs)]
    for hog in hogs:
        hog.start()
    print(
        f"{args.cycles} save/compare cycles; {args.hogs} CPU-bound processes beside them on "
        f"{os.cpu_count()} cores; slower build = {args.slowdown:.0%} lower speed"
    )
    try:
        with tempfile.TemporaryDirectory(prefix="scenario-false-alarms-") as tmp:
            store = Path(tmp) / "baselines"
            first = run_session("save (empty folder)", store, save=True, speed=1.0)
            print(first.line(), flush=True)
            unchanged: list[Session] = []
            slower: list[Session] = []
            for cycle in range(1, args.cycles + 1):
                unchanged.append(run_session(f"unchanged {cycle}", store, save=True, speed=1.0))
                print(unchanged[-1].line(), flush=True)
                slow = run_session(f"slower {cycle}", store, save=False, speed=1 - args.slowdown)
                slower.append(slow)
                print(slow.line(), flush=True)
    finally:
        for hog in hogs:
            hog.kill()
    alarms = sum(s.returncode != 0 for s in unchanged)
    rows = sum(s.compared for s in unchanged)
    row_alarms = sum(len(s.regressions) for s in unchanged)
    caught = sum(s.returncode != 0 for s in slower)
    print(
        f"empty folder: {'passed' if first.returncode == 0 else 'FAILED'}; "
        f"unchanged reruns failing (false alarms): {alarms}/{len(unchanged)} sessions, "
        f"{row_alarms}/{rows} gate rows; {args.slowdown:.0%} slower build caught: "
        f"{caught}/{len(slower)} sessions"
    )
    return 0 if first.returncode == 0 and alarms == 0 and caught == len(slower) else 1


if __name__ == "__main__":
    raise SystemExit(main())
