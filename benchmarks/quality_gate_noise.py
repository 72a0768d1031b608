"""How often do the quality gates cry wolf, and how often do they catch a real drop?

Pure simulation of per-item outcomes (no server), as ``gate_noise.py`` does for the speed gates.
Each trial draws a stored baseline run and a current run over the same ``n`` items and asks
three rules whether the current run regressed:

- **paired**: :func:`pytest_sglang.quality.gate.decide_rate` with ``accuracy:-1%`` and the
  discordant items (McNemar's exact test), what the gate uses when both runs kept their
  per-item outcomes over the same items;
- **unpaired**: the same without them (pooled z, Fisher's exact test for small counts), what it
  uses for an older stored run or another item set;
- **fixed**: a threshold with no test, as accuracy floors are usually written ("fail when
  accuracy falls more than 2 points below the baseline").

Three samplings of the same items:

- *independent*: every item right with probability p in each run, independently: the textbook
  setting of the unpaired minimum detectable drop, and the worst case for pairing;
- *churn*: the current run keeps the baseline's answers except on a fraction ``--churn`` of the
  items, whose answers are drawn again (at p: no change; lower: a drop), as a config that
  changes a few answers does;
- *simulator*: the stand-in of :mod:`pytest_sglang.sim.quality` on the built-in task: a worse
  build (``SGLANG_SIM_ACCURACY`` lower, same ``SGLANG_SIM_SEED``) is wrong on a superset of the
  items; false alarms from an equally good config that errs on other items (another seed).

Then the equivalence noise floor (:mod:`pytest_sglang.quality.noise`) on 64 prompts: a reference
whose near-tie prompts (a fraction ``t``) take one of two outputs per pass, an equivalent config
with the same noise, and configs that change a further fraction of the outputs; the rule "fail
when significantly below the reference's self-agreement" against a plain ``min_rate=0.95``.

Run: ``python benchmarks/quality_gate_noise.py [--trials 2000] [--items 200 500 1000 2000]``.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_sglang.baseline.gates import DEFAULT_ALPHA, parse_gate
from pytest_sglang.quality.gate import DEFAULT_QUALITY_GATES, decide_rate
from pytest_sglang.quality.noise import judge_floor
from pytest_sglang.quality.pairing import discordant
from pytest_sglang.quality.stats import min_detectable_drop, paired_min_detectable_drop
from pytest_sglang.quality.tasks import Task
from pytest_sglang.sim.quality import BASE_ACCURACY, QualityModel

GATE = parse_gate("accuracy", "-1%")
FIXED_POINTS = 2.0
DROPS = (0.02, 0.04, 0.06)
TESTS = ("unpaired", "paired", "fixed")

Outcomes = list[bool]
#: (baseline, equally good current, {drop: worse current}) for one trial.
Trial = tuple[Outcomes, Outcomes, dict[float, Outcomes]]


def _fails(base: Outcomes, cur: Outcomes, alpha: float) -> tuple[bool, bool, bool]:
    n, k_base, k_cur = len(base), sum(base), sum(cur)
    unpaired = decide_rate(GATE, k_cur, n, k_base, n, alpha=alpha)
    paired = decide_rate(GATE, k_cur, n, k_base, n, alpha=alpha, pairs=discordant(base, cur))
    fixed = (k_base - k_cur) / n * 100 > FIXED_POINTS
    return unpaired.verdict == "regression", paired.verdict == "regression", fixed


def independent(n: int, p: float, rng: random.Random) -> Trial:
    def run(q: float) -> Outcomes:
        return [rng.random() < q for _ in range(n)]

    return run(p), run(p), {d: run(p - d) for d in DROPS}


def churn(fraction: float) -> Callable[[int, float, random.Random], Trial]:
    def trial(n: int, p: float, rng: random.Random) -> Trial:
        base = [rng.random() < p for _ in range(n)]

        def run(q: float) -> Outcomes:
            return [rng.random() < q if rng.random() < fraction else b for b in base]

        return base, run(p), {d: run(p - d / fraction) for d in DROPS}

    return trial


def simulator(tasks: dict[int, Task]) -> Callable[[int, float, random.Random], Trial]:
    def trial(n: int, p: float, rng: random.Random) -> Trial:
        prompts = [item.prompt for item in tasks[n].items]
        seed = rng.randrange(1 << 30)

        def run(model: QualityModel) -> Outcomes:
            return [model.right(prompt) for prompt in prompts]

        base = run(QualityModel({}, seed=seed, base=p))
        other = run(QualityModel({}, seed=rng.randrange(1 << 30), base=p))
        return base, other, {d: run(QualityModel({}, seed=seed, base=p - d)) for d in DROPS}

    return trial


def measure(
    sample: Callable[[int, float, random.Random], Trial],
    n: int,
    trials: int,
    p: float,
    alpha: float,
) -> dict[str, dict[float, float]]:
    """{test: {0.0: false-alarm rate, drop: caught rate}}."""
    rng = random.Random(3400 + n)
    hits = {t: dict.fromkeys((0.0, *DROPS), 0) for t in TESTS}
    for _ in range(trials):
        base, same, worse = sample(n, p, rng)
        for drop, cur in ((0.0, same), *worse.items()):
            for test, fired in zip(TESTS, _fails(base, cur, alpha)):
                hits[test][drop] += fired
    return {t: {d: h / trials for d, h in row.items()} for t, row in hits.items()}


def _table(
    title: str,
    sample: Callable[[int, float, random.Random], Trial],
    items: Sequence[int],
    trials: int,
    p: float,
    alpha: float,
    psi: float,
) -> dict[int, dict[str, dict[float, float]]]:
    print(f"\n{title} ({trials} trials per row)")
    heads = ["false alarm", *(f"{d * 100:.0f}-point drop caught" for d in DROPS)]
    print(f"{'items':>6} {'MDD U':>6} {'MDD P':>6} | " + " | ".join(h.center(22) for h in heads))
    print(f"{'':>6} {'':>6} {'':>6} | " + " | ".join("U / P / F".center(22) for _ in heads))
    out: dict[int, dict[str, dict[float, float]]] = {}
    for n in items:
        rates = out[n] = measure(sample, n, trials, p, alpha)
        mdd_u = min_detectable_drop(p, n, alpha=alpha) * 100
        mdd_p = paired_min_detectable_drop(psi, n, alpha=alpha) * 100
        cells = [" / ".join(f"{rates[t][d]:.1%}" for t in TESTS).center(22) for d in (0.0, *DROPS)]
        print(f"{n:>6} {mdd_u:>6.1f} {mdd_p:>6.1f} | " + " | ".join(cells))
    return out


# -- the equivalence noise floor ------------------------------------------------------------


def _floor_trial(
    rng: random.Random, prompts: int, ties: float, changed: float
) -> tuple[list[bool], list[bool]]:
    """(config's agreement with the reference's first pass, the reference's second pass's)."""
    agreement, floor = [], []
    for _ in range(prompts):
        tie = rng.random() < ties
        first, second, config = (rng.random() < 0.5 if tie else False for _ in range(3))
        floor.append(first == second)
        agreement.append(first == config and rng.random() >= changed)
    return agreement, floor


def noise_floor(trials: int, alpha: float) -> None:
    gate = DEFAULT_QUALITY_GATES["exact_match_rate"]
    prompts = 64
    changes = (0.0, 0.1, 0.25)
    print(
        f"\nequivalence noise floor, {prompts} prompts ({trials} trials per row): a fraction t of "
        "near ties, each agreeing between two passes half the time; a config that changes a "
        "further fraction c of outputs fails ... (floor rule / plain min_rate=0.95)"
    )
    print(
        f"{'t':>5} {'self-agreement':>15} | " + " | ".join(f"c={c:.0%}".rjust(15) for c in changes)
    )
    rng = random.Random(3405)
    for ties in (0.0, 0.2, 0.4, 0.8):
        cells, selfs = [], 0.0
        for changed in changes:
            floor_fails = raw_fails = 0
            for _ in range(trials):
                agreement, floor = _floor_trial(rng, prompts, ties, changed)
                judged = judge_floor(gate, agreement, floor, alpha=alpha)
                floor_fails += judged.verdict == "below"
                raw_fails += sum(agreement) / prompts < 0.95
                selfs += sum(floor) / prompts
            cells.append(f"{floor_fails / trials:.1%}/{raw_fails / trials:.1%}".rjust(15))
        print(f"{ties:>5.0%} {selfs / (trials * len(changes)):>15.1%} | " + " | ".join(cells))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--sim-trials", type=int, default=1000)
    parser.add_argument("--floor-trials", type=int, default=2000)
    parser.add_argument("--items", type=int, nargs="+", default=[200, 500, 1000, 2000])
    parser.add_argument("--churn", type=float, default=0.1)
    parser.add_argument("--alpha", type=float, default=DEFAULT_ALPHA)
    args = parser.parse_args(argv)
    p, alpha = BASE_ACCURACY, args.alpha
    print(
        f"accuracy {p:.0%}; gate accuracy:-1% at alpha {alpha:g}; U: unpaired test, P: paired "
        f"(McNemar exact), F: fixed rule (drop > {FIXED_POINTS:g} points); MDD: minimum "
        "detectable drop at 80 % power, points (P: at the sampling's no-change discordance)"
    )
    independent_psi = 2 * p * (1 - p)
    tables = {
        "independent": _table(
            "independent: every item right with probability p in each run",
            independent,
            args.items,
            args.trials,
            p,
            alpha,
            independent_psi,
        ),
        "churn": _table(
            f"churn: {args.churn:.0%} of the items answered again, the rest unchanged",
            churn(args.churn),
            args.items,
            args.trials,
            p,
            alpha,
            args.churn * independent_psi,
        ),
        "simulator": _table(
            "simulator: a worse build is wrong on a superset of the items; false alarms from "
            "another seed",
            simulator({n: Task.arithmetic(n) for n in args.items}),
            args.items,
            args.sim_trials,
            p,
            alpha,
            independent_psi,
        ),
    }
    noise_floor(args.floor_trials, alpha)
    ok = True
    if 500 in args.items:
        for rows in tables.values():
            fa = rows[500]
            ok = ok and all(fa[t][0.0] <= alpha * 1.3 for t in ("unpaired", "paired"))
        ok = ok and tables["independent"][500]["unpaired"][0.06] >= 0.75
        ok = ok and tables["churn"][500]["paired"][0.02] > tables["churn"][500]["unpaired"][0.02]
    print(
        "\ntargets at 500 items: false alarms <= alpha (+30% sampling slack) for both tests in "
        "every sampling, a 6-point drop caught >= 75% unpaired on independent items, the paired "
        "test ahead on churn"
        if ok
        else "\nMISSED"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
