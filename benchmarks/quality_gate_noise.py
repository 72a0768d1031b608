"""How often does the accuracy gate cry wolf, and how often does it catch a real drop?

Pure simulation of the counts (no server), as ``gate_noise.py`` does for the speed gates. Each
trial draws a stored baseline run and a current run of ``n`` items and asks two rules whether
the current run regressed:

- ours: :func:`pytest_sglang.quality.gate.decide_rate` with ``accuracy:-1%`` (a drop beyond one
  point AND a one-sided proportions test at alpha 0.05: pooled z, Fisher's exact test for small
  counts);
- a fixed threshold with no test, as accuracy floors are usually written ("fail when accuracy
  falls more than 2 points below the baseline").

Two samplings: *independent* (every item right with probability p, the textbook setting the
stated minimum detectable drop is computed for), and *simulator* (the real stand-in of
:mod:`pytest_sglang.sim.quality` on the built-in task: the FP8 KV cache config against the
bf16 one with the same ``SGLANG_SIM_SEED``, so the same items; false alarms from an equally
good config that errs on other items: another seed).

Run: ``python benchmarks/quality_gate_noise.py [--trials 2000] [--items 200 500 1000 2000]``.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_sglang.baseline.gates import DEFAULT_ALPHA, parse_gate
from pytest_sglang.quality.gate import decide_rate
from pytest_sglang.quality.stats import min_detectable_drop
from pytest_sglang.quality.tasks import Task
from pytest_sglang.sim.quality import BASE_ACCURACY, KV_CACHE_DROP, QualityModel
from pytest_sglang.sim.tokenizer import NUMBER_BASE

GATE = parse_gate("accuracy", "-1%")
FIXED_POINTS = 2.0


def _fails(k_cur: int, k_base: int, n: int, alpha: float) -> tuple[bool, bool]:
    ours = decide_rate(GATE, k_cur, n, k_base, n, alpha=alpha).verdict == "regression"
    fixed = (k_base - k_cur) / n * 100 > FIXED_POINTS
    return ours, fixed


def independent(n: int, trials: int, p: float, drop: float, alpha: float) -> list[float]:
    rng = random.Random(2100 + n)

    def draw(q: float) -> int:
        return sum(rng.random() < q for _ in range(n))

    fa = hit = fa_fixed = hit_fixed = 0
    for _ in range(trials):
        base = draw(p)
        a, b = _fails(draw(p), base, n, alpha)
        fa, fa_fixed = fa + a, fa_fixed + b
        a, b = _fails(draw(p - drop), base, n, alpha)
        hit, hit_fixed = hit + a, hit_fixed + b
    return [fa / trials, hit / trials, fa_fixed / trials, hit_fixed / trials]


def _correct(model: QualityModel, task: Task) -> int:
    return sum(
        model.script(item.prompt, 0)[-1] - NUMBER_BASE == int(item.answer) for item in task.items
    )


def simulator(n: int, trials: int, alpha: float) -> list[float]:
    task = Task.arithmetic(n)
    fa = hit = fa_fixed = hit_fixed = 0
    for seed in range(trials):
        base = _correct(QualityModel({}, seed=seed), task)
        other = _correct(QualityModel({}, seed=seed + 100_000), task)
        fp8 = _correct(QualityModel({"kv_cache_dtype": "fp8_e4m3"}, seed=seed), task)
        a, b = _fails(other, base, n, alpha)
        fa, fa_fixed = fa + a, fa_fixed + b
        a, b = _fails(fp8, base, n, alpha)
        hit, hit_fixed = hit + a, hit_fixed + b
    return [fa / trials, hit / trials, fa_fixed / trials, hit_fixed / trials]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--sim-trials", type=int, default=200)
    parser.add_argument("--items", type=int, nargs="+", default=[200, 500, 1000, 2000])
    parser.add_argument("--alpha", type=float, default=DEFAULT_ALPHA)
    args = parser.parse_args(argv)
    p, drop = BASE_ACCURACY, KV_CACHE_DROP["fp8_e4m3"]
    print(
        f"accuracy {p:.0%}; regression = {drop * 100:.0f} points lower (the simulator's FP8 KV "
        f"cache); ours: accuracy:-1% at alpha {args.alpha:g}; fixed: drop > {FIXED_POINTS:g} "
        "points"
    )
    print(
        f"{'sampling':<12} {'items':>6} {'MDD@80%':>8} | {'false alarm':>11} {'caught':>7} "
        f"(ours) | {'false alarm':>11} {'caught':>7} (fixed)"
    )
    ok = True
    rows = [
        ("independent", n, independent(n, args.trials, p, drop, args.alpha)) for n in args.items
    ]
    rows += [("simulator", n, simulator(n, args.sim_trials, args.alpha)) for n in args.items]
    for label, n, (fa, hit, fa_fixed, hit_fixed) in rows:
        mdd = min_detectable_drop(p, n, alpha=args.alpha) * 100
        if n == 500:
            ok = ok and fa <= args.alpha * 1.3 and (hit >= 0.75 or label != "independent")
        print(
            f"{label:<12} {n:>6} {mdd:>7.1f}p | {fa:>11.1%} {hit:>7.1%}        | "
            f"{fa_fixed:>11.1%} {hit_fixed:>7.1%}"
        )
    print(
        "targets at 500 items: false alarm <= alpha (+30% sampling slack), 6-point drop caught "
        ">= 75% independent"
        if ok
        else "MISSED"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
