"""Where did a metric step? Binary segmentation with a two-sample t-test at every split.

The input is one value per stored run (the mean of its rounds), oldest first. For a segment of
runs, every split that leaves at least ``min_size`` runs on each side is tested with the same
two-sample t-test the gates use (:func:`.stats.one_sided_t_test`: pooled variance, Welch when
one side is clearly noisier, a floor of relative noise so that a deterministic series cannot
make a 0.1 % wobble significant), made two-sided. The split with the smallest p-value is a
change point when that p-value, multiplied by the number of splits tried (Bonferroni), is below
``alpha``; then both halves are searched the same way, so a history with several steps (an
upgrade that cost 8 %, a later fix that won 5 % back) yields each of them. Last, each step is
tested again between its neighbouring steps, and the weakest is dropped while one is not
significant there (a split of a segment that held one run of the other level is an artefact).

Why this method and not another:

- **Run means, not rounds.** The rounds of one run share a server start, a host state and a
  warm cache; they are not independent of each other the way runs are. One value per run makes
  the test's degrees of freedom honest.
- **Not CUSUM.** CUSUM needs the in-control mean and noise up front, and a threshold tuned to
  them; a baseline history is short (5-50 runs) and both are what we would have to estimate.
- **Not E-divisive (as in MongoDB's signal processing).** Its permutation test needs more runs
  than a baseline usually holds to reach small p-values, and costs thousands of resamples per
  split; a step in the mean is the question here, and for that the t-test is the exact test
  under Gaussian noise, with a p-value and a step size in the metric's own units.
- **Bonferroni** is conservative for neighbouring splits (their tests are correlated), which
  errs toward reporting fewer steps: a reported step is one to believe.

Limitations: a slow drift is reported as a step somewhere in it; two steps closer than
``min_size`` runs apart are seen as one; the halves searched after a first step are tested at
the same ``alpha`` (no correction across the recursion).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .gates import DEFAULT_ALPHA, DEFAULT_NOISE_FLOOR
from .stats import mean, one_sided_t_test

__all__ = ["ChangePoint", "best_split", "change_points"]

#: Runs on each side of a split by default: one run alone is as likely an outlier as a step.
DEFAULT_MIN_SIZE = 2


@dataclass(frozen=True)
class ChangePoint:
    """A step in the series: ``index`` is the first run after it."""

    index: int
    before: float
    after: float
    p_value: float
    #: the splits the Bonferroni correction counted (``p_value`` is already multiplied)
    splits: int

    @property
    def delta_pct(self) -> float:
        return (self.after - self.before) / abs(self.before) * 100.0 if self.before else 0.0


def _two_sided_p(left: Sequence[float], right: Sequence[float], floor: float) -> float:
    lower = one_sided_t_test(right, left, worse_if_lower=True, floor=floor).p
    return min(1.0, 2.0 * min(lower, 1.0 - lower))


def best_split(
    values: Sequence[float],
    *,
    min_size: int = DEFAULT_MIN_SIZE,
    floor: float = DEFAULT_NOISE_FLOOR,
) -> ChangePoint | None:
    """The most significant split of ``values`` (its p-value Bonferroni-corrected), or None
    when the series is too short to split with ``min_size`` runs a side."""
    n = len(values)
    splits = range(min_size, n - min_size + 1)
    if min_size < 1 or not splits or n < 3:  # a variance needs three values in all
        return None
    best: tuple[float, int] | None = None
    for k in splits:
        p = _two_sided_p(values[:k], values[k:], floor)
        if best is None or p < best[0]:
            best = (p, k)
    assert best is not None
    p, k = best
    return ChangePoint(
        index=k,
        before=mean(values[:k]),
        after=mean(values[k:]),
        p_value=min(1.0, p * len(splits)),
        splits=len(splits),
    )


def change_points(
    values: Sequence[float],
    *,
    alpha: float = DEFAULT_ALPHA,
    min_size: int = DEFAULT_MIN_SIZE,
    floor: float = DEFAULT_NOISE_FLOOR,
) -> list[ChangePoint]:
    """Every step found by binary segmentation, in series order; ``before`` and ``after`` are
    the means of the segments on either side (between the neighbouring steps)."""
    found: list[int] = []

    def search(lo: int, hi: int) -> None:
        split = best_split(values[lo:hi], min_size=min_size, floor=floor)
        if split is None or split.p_value >= alpha:
            return
        found.append(lo + split.index)
        search(lo, lo + split.index)
        search(lo + split.index, hi)

    search(0, len(values))
    found.sort()
    while True:  # prune: each step must hold against its neighbouring segments
        points = _with_neighbours(values, found, min_size, floor)
        weakest = max(points, key=lambda c: c.p_value, default=None)
        if weakest is None or weakest.p_value < alpha:
            return points
        found.remove(weakest.index)


def _with_neighbours(
    values: Sequence[float], found: list[int], min_size: int, floor: float
) -> list[ChangePoint]:
    """Each step tested between the steps on either side of it (corrected over the splits
    that segment offers)."""
    out: list[ChangePoint] = []
    bounds = [0, *found, len(values)]
    for i, k in enumerate(found, start=1):
        lo, hi = bounds[i - 1], bounds[i + 1]
        left, right = values[lo:k], values[k:hi]
        splits = max(1, (hi - lo) - 2 * min_size + 1)
        p = min(1.0, _two_sided_p(left, right, floor) * splits)
        out.append(ChangePoint(k, mean(left), mean(right), p, splits))
    return out
