"""How often do the gates cry wolf, and how often do they catch a real 5 % slowdown?

Pure simulation of the numbers (no server): every round of a benchmark measures output
throughput with 2 % run-to-run noise (a normal, relative sd 0.02). A stored baseline is the last
``--history`` saved runs of ``rounds`` rounds each (the plugin's default keeps 10). Each trial
then draws one current run and asks two rules the same question:

- ours: :func:`pytest_sglang.baseline.gates.decide` with the default throughput gate
  (2.5 %, one-sided pooled t-test at alpha 0.05), plus ``--sglang-confirm`` re-runs (default 1)
  pooled with the first run's rounds before failing, exactly as the fixture does;
- pytest-benchmark's ``--benchmark-compare-fail=mean:5%``: its ``PercentageRegressionCheck``
  on the ``mean`` of the round *times* (a round's time is tokens / throughput) against the
  compared run (``--benchmark-compare`` loads one saved run: the latest), failing when
  ``current / compared * 100 - 100 > 5``.

Run: ``python benchmarks/gate_noise.py [--trials 4000] [--noise 0.02] [--rounds 1 3 5 10]``.
"""

from __future__ import annotations

import argparse
import random
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_sglang.baseline.gates import DEFAULT_ALPHA, DEFAULT_GATES, decide
from pytest_sglang.bench.pytest_plugin import DEFAULT_ROUNDS

TRUE_THROUGHPUT = 100.0  # tok/s; only ratios matter
TOKENS = 256  # per round, to turn throughput into pytest-benchmark's round time


def draw(rng: random.Random, rounds: int, factor: float, noise: float) -> list[float]:
    return [TRUE_THROUGHPUT * factor * (1.0 + rng.gauss(0.0, noise)) for _ in range(rounds)]


def ours(
    rng: random.Random,
    history: list[list[float]],
    first: list[float],
    factor: float,
    noise: float,
    confirm: int,
    alpha: float,
    threshold: float,
) -> bool:
    gate = replace(DEFAULT_GATES["output_throughput"], threshold_pct=threshold)
    base = [v for run in history for v in run]
    current = list(first)
    verdict = decide(gate, current, base, alpha=alpha)
    for _ in range(confirm):
        if verdict.verdict != "regression":
            break
        current += draw(rng, len(first), factor, noise)
        verdict = decide(gate, current, base, alpha=alpha)
    return verdict.verdict == "regression"


def pytest_benchmark_rule(latest: list[float], first: list[float], threshold: float = 5) -> bool:
    def mean_time(run: list[float]) -> float:
        return sum(TOKENS / v for v in run) / len(run)

    compared, current = mean_time(latest), mean_time(first)
    return current / compared * 100 - 100 > threshold  # PercentageRegressionCheck("mean", 5)


def rates(
    rounds: int,
    trials: int,
    noise: float,
    history_runs: int,
    confirm: int,
    slowdown: float,
    alpha: float,
    threshold: float,
) -> tuple[float, float, float, float]:
    rng = random.Random(1234 + rounds)
    fa_ours = fa_pb = hit_ours = hit_pb = 0
    for _ in range(trials):
        history = [draw(rng, rounds, 1.0, noise) for _ in range(history_runs)]
        same = draw(rng, rounds, 1.0, noise)
        slow = draw(rng, rounds, 1.0 - slowdown, noise)
        fa_ours += ours(rng, history, same, 1.0, noise, confirm, alpha, threshold)
        hit_ours += ours(rng, history, slow, 1.0 - slowdown, noise, confirm, alpha, threshold)
        fa_pb += pytest_benchmark_rule(history[-1], same)
        hit_pb += pytest_benchmark_rule(history[-1], slow)
    return fa_ours / trials, hit_ours / trials, fa_pb / trials, hit_pb / trials


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=4000)
    parser.add_argument("--noise", type=float, default=0.02, help="relative sd per round")
    parser.add_argument("--history", type=int, default=10, help="stored runs in the baseline")
    parser.add_argument("--confirm", type=int, default=1, help="--sglang-confirm re-runs")
    parser.add_argument("--slowdown", type=float, default=0.05, help="injected regression")
    parser.add_argument("--alpha", type=float, default=DEFAULT_ALPHA)
    parser.add_argument(
        "--threshold", type=float, default=DEFAULT_GATES["output_throughput"].threshold_pct
    )
    parser.add_argument("--rounds", type=int, nargs="+", default=[1, 3, 5, 10])
    args = parser.parse_args(argv)
    print(
        f"{args.trials} trials per row; {args.noise:.0%} noise per round; baseline = last "
        f"{args.history} saved runs; --sglang-confirm {args.confirm}; regression = "
        f"{args.slowdown:.0%} lower throughput"
    )
    print(
        f"{'rounds':>12} | {'false alarm':>11} {'caught':>7} (pytest-sglang defaults) | "
        f"{'false alarm':>11} {'caught':>7} (pytest-benchmark mean:5%)"
    )
    ok = True
    for rounds in args.rounds:
        fa, hit, fa_pb, hit_pb = rates(
            rounds,
            args.trials,
            args.noise,
            args.history,
            args.confirm,
            args.slowdown,
            args.alpha,
            args.threshold,
        )
        meets = fa <= 0.01 and hit >= 0.95
        ok = ok and (meets or rounds < 3)
        label = f"{rounds}{' (default)' if rounds == DEFAULT_ROUNDS else ''}"
        print(
            f"{label:>12} | {fa:>11.2%} {hit:>7.1%} {'meets' if meets else 'below':>24} | "
            f"{fa_pb:>11.2%} {hit_pb:>7.1%}"
        )
    print("targets: false alarm <= 1%, caught >= 95% (met from rounds=3 up)" if ok else "MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
