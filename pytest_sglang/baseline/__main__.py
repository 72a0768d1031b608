"""``python -m pytest_sglang.baseline``: a metric's history and its steps, and a bisect helper.

``history``: every stored run of each benchmark (across the fingerprints its upgrades made),
the change points found in ``--metric`` (:mod:`.changepoint`) and, for each, the software and
commit of the last run before it and the first run after it::

    python -m pytest_sglang.baseline history --metric output_throughput baselines/

``bisect``: confirm a step by measuring one benchmark with two launchers on the same machine,
one after the other: two of the host's named launchers (``[hosts.X.launchers]``, e.g. two
SGLang installs), the first saving into a scratch baseline folder, the second gated against it
(as an upgrade when their software differs) with the same statistics as in CI::

    python -m pytest_sglang.baseline bisect --sglang-host gpu-01 --before 0.5.22 \\
        --after 0.5.23 scenarios/test_decode.py::test_decode -- --sglang-rounds 5

Without ``--sglang-host``, ``--before`` and ``--after`` name two inventory entries on the same
machine whose ``launch`` (or ``env``) differ.

Exit status: ``history`` 0 (2 on a usage error); ``bisect`` that of the second pytest session
(1 when the after-launcher regressed).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import SglangError
from ..options import number
from ..terminal import Column, TextTable
from .changepoint import DEFAULT_MIN_SIZE
from .fingerprint import SOFTWARE_FIELDS, software_label
from .gates import DEFAULT_ALPHA, DEFAULT_NOISE_FLOOR, known_metric
from .history import History, describe_run, histories

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pytest_sglang.baseline",
        description="Baseline histories, their change points, and a bisect helper.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    hist = sub.add_parser(
        "history",
        help="every stored run of a metric per benchmark, and where it stepped",
        description="Every stored run of METRIC per benchmark and machine, oldest first, and "
        "the change points found in it (binary segmentation with a two-sample t-test at each "
        "split, Bonferroni-corrected).",
    )
    hist.add_argument("--metric", required=True, help="e.g. output_throughput, median_itl_ms")
    hist.add_argument(
        "--alpha",
        type=number(float, above=0, below=1),
        default=DEFAULT_ALPHA,
        help="significance level of a step (after the correction). Default: %(default)r",
    )
    hist.add_argument(
        "--min-size",
        type=number(int, minimum=1),
        default=DEFAULT_MIN_SIZE,
        help="least runs on each side of a step (1: the latest run alone may be one). "
        "Default: %(default)r",
    )
    hist.add_argument(
        "--floor",
        type=number(float, minimum=0),
        default=DEFAULT_NOISE_FLOOR,
        help="least relative noise assumed per run, as the gates do. Default: %(default)r",
    )
    hist.add_argument("--json", action="store_true", help="print JSON instead of tables")
    hist.add_argument(
        "path",
        nargs="?",
        default="baselines",
        help="the baseline store, a config's or a workload's folder, or one file. "
        "Default: %(default)r",
    )
    bis = sub.add_parser(
        "bisect",
        help="measure tests with two launchers on one machine, the second gated on the first",
        description="Run the tests on launcher --before of --sglang-host (saving into a scratch "
        "baseline folder), then on --after, gated against it: two of the host's named "
        "launchers ([hosts.X.launchers], e.g. two SGLang installs). Without --sglang-host, "
        "--before and --after are two inventory hosts on the same machine whose launch or env "
        "differ. Extra pytest options go after '--'.",
    )
    bis.add_argument(
        "--sglang-host",
        metavar="HOST",
        help="the host whose launchers --before and --after name (an inventory entry)",
    )
    bis.add_argument(
        "--before", required=True, metavar="NAME", help="the known-good launcher (or host entry)"
    )
    bis.add_argument(
        "--after", required=True, metavar="NAME", help="the suspect launcher (or host entry)"
    )
    bis.add_argument("--keep", metavar="DIR", help="keep the scratch baselines and summary in DIR")
    bis.add_argument("tests", nargs="+", help="pytest node ids or paths (then '--' pytest options)")
    return parser


def _software_columns(history: History) -> list[str]:
    """The software fields shown: SGLang always, the others where they vary."""
    varying = [
        f for f in SOFTWARE_FIELDS if len({str(r.software.get(f, "")) for r in history.runs}) > 1
    ]
    return ["sglang_version", *[f for f in varying if f != "sglang_version"]]


def _hardware(history: History) -> str:
    hw = history.hardware
    name = str(hw.get("gpu_name") or "unknown GPU")
    count = hw.get("gpu_count")
    return f"{count} x {name}" if count else name


def _history_lines(history: History, steps: Sequence[Any], alpha: float) -> list[str]:
    columns = _software_columns(history)
    table = TextTable(
        [
            Column("run", ">"),
            Column("saved at"),
            Column(history.metric, ">"),
            *(Column(software_label(f)) for f in columns),
            Column("commit"),
            Column("note", optional=True),
        ]
    )
    starts = {s.index for s in steps}
    for i, run in enumerate(history.runs):
        commit = str(run.commit.get("id") or "")[:12]
        note = "step" if i in starts else ""
        if run.upgrade is not None:
            accepted = run.upgrade.get("accepted")
            note = ", ".join(
                filter(None, [note, f"accepted by {run.upgrade.get('by')}" if accepted else ""])
            )
        table.add(
            str(i + 1),
            run.saved_at[:19],
            f"{run.value:.4g}",
            *(str(run.software.get(f, "") or "-") for f in columns),
            commit or "-",
            note,
        )
    n = len(history.runs)
    lines = [
        f"{history.folder} on {_hardware(history)}: {history.metric}, "
        f"{n} run{'' if n == 1 else 's'}"
    ]
    lines += ["  " + line for line, _ in table.lines()]
    for s in steps:
        lines.append(
            f"  step before run {s.index + 1}: {s.before:.4g} -> {s.after:.4g} "
            f"({s.delta_pct:+.1f}%), p={s.p_value:.2g} (corrected over {s.splits} splits)"
        )
        lines.append(f"    last before: {describe_run(history.runs[s.index - 1])}")
        lines.append(f"    first after: {describe_run(history.runs[s.index])}")
    if not steps:
        lines.append(f"  no step (none significant at alpha={alpha:g})")
    return lines


def _history(args: argparse.Namespace) -> int:
    if not known_metric(args.metric):
        print(f"unknown metric {args.metric!r}; use a bench metric, e.g. output_throughput")
        return 2
    found = histories(Path(args.path), args.metric)
    results = [
        (h, h.steps(alpha=args.alpha, min_size=args.min_size, floor=args.floor)) for h in found
    ]
    if args.json:
        print(json.dumps([h.as_dict(steps) for h, steps in results], indent=2, default=str))
        return 0
    if not results:
        print(f"no stored run of {args.metric} under {args.path}")
        return 0
    for i, (history, steps) in enumerate(results):
        if i:
            print()
        print("\n".join(_history_lines(history, steps, args.alpha)))
    return 0


def _pytest(tests: Sequence[str], on: Sequence[str], store: Path, *extra: str) -> int:
    argv = [sys.executable, "-m", "pytest", *tests, *on]
    argv += ["--sglang-baseline-dir", str(store), *extra]
    print(f"[bisect] {' '.join(argv[1:])}", flush=True)
    return subprocess.run(argv, check=False).returncode


def _sides(args: argparse.Namespace) -> tuple[list[str], list[str], str]:
    """The pytest options that put the tests on ``--before`` and on ``--after`` (two launchers
    of ``--sglang-host``, or two host entries), and how the lines name the pair."""
    pair = f"{args.before} -> {args.after}"
    if args.sglang_host is None:
        return ["--sglang-host", args.before], ["--sglang-host", args.after], pair
    host = ["--sglang-host", args.sglang_host]
    return (
        [*host, "--sglang-launcher", args.before],
        [*host, "--sglang-launcher", args.after],
        f"{pair} on {args.sglang_host}",
    )


def _bisect(args: argparse.Namespace, pytest_args: list[str]) -> int:
    if args.before == args.after:
        print(f"[bisect] --before and --after are both {args.before!r}: nothing to compare")
        return 2
    before, after, pair = _sides(args)
    scratch = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="sglang-bisect-"))
    scratch.mkdir(parents=True, exist_ok=True)
    store, summary = scratch / "baselines", scratch / "summary.json"
    rc = _pytest(args.tests, before, store, "--sglang-baseline-save", *pytest_args)
    if rc != 0:
        print(f"[bisect] the run on {args.before} failed (exit {rc}); nothing to compare with")
        return rc
    rc = _pytest(
        args.tests,
        after,
        store,
        "--sglang-baseline-require",
        f"--sglang-summary={summary}",
        *pytest_args,
    )
    rows: list[dict[str, Any]] = []
    if summary.is_file():
        rows = list(json.loads(summary.read_text()).get("comparisons", []))
    shown: set[str] = set()
    for row in rows:
        test = str(row.get("nodeid", "")).rsplit("::", 1)[-1]
        upgrade = row.get("upgrade")
        if isinstance(upgrade, dict):
            if test not in shown:
                shown.add(test)
                print(f"[bisect] {test} {pair}: {upgrade['summary']}")
        else:
            delta = row.get("delta_pct")
            change = "-" if delta is None else f"{delta:+.1f}%"
            print(f"[bisect] {test} {row.get('metric')}: {change} ({row.get('verdict')})")
    print(f"[bisect] scratch baselines and summary: {scratch}")
    return rc


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in words:
        cut = words.index("--")
        words, extra = words[:cut], words[cut + 1 :]
    args = _parser().parse_args(words)
    try:
        if args.command == "history":
            return _history(args)
        return _bisect(args, extra)
    except SglangError as exc:
        print(str(exc), file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
