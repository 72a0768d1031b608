"""The built-in task: multi-step arithmetic word problems with exact answers, made offline.

Why built in: an accuracy gate must run in CI without a download, and on the simulator, which
has to know the right answer to stand in for a model (:mod:`pytest_sglang.sim.quality`). The
problems use a small fixed grammar, so :func:`solve` reads the answer back from the text alone:

    Mia has 12 apples. Mia buys 7 more apples. Then Mia gives away 5 apples. Then Mia buys
    3 bags with 4 apples in each bag. How many apples does Mia have now?

Each step is one of: ``buys N more ITEM`` (+N), ``gives away N ITEM`` (-N, never below 0),
``doubles the ITEM`` (x2), ``buys K bags with M ITEM in each bag`` (+K*M). Problems are drawn
from a seeded :class:`random.Random`, so the same ``(count, seed, steps)`` always gives the
same problems. This module imports nothing of the package (the simulator imports it).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

__all__ = ["Problem", "generate", "solve"]

NAMES = ("Mia", "Noah", "Ava", "Liam", "Zoe", "Omar", "Lena", "Ravi", "Ines", "Tom")
ITEMS = ("apples", "stamps", "marbles", "books", "coins", "shells", "cards", "pencils")


@dataclass(frozen=True)
class Problem:
    """One word problem and its exact integer answer."""

    question: str
    answer: int


def _step(rng: random.Random, name: str, item: str, value: int) -> tuple[str, int]:
    kind = rng.choice(("add", "sub", "double", "bags"))
    if kind == "sub" and value > 1:
        n = rng.randint(1, value - 1)
        return f"Then {name} gives away {n} {item}.", value - n
    if kind == "double" and value <= 200:
        return f"Then {name} doubles the {item}.", value * 2
    if kind == "bags":
        k, m = rng.randint(2, 6), rng.randint(2, 9)
        return f"Then {name} buys {k} bags with {m} {item} in each bag.", value + k * m
    n = rng.randint(2, 30)
    return f"Then {name} buys {n} more {item}.", value + n


def generate(count: int, *, seed: int = 0, steps: int = 3) -> list[Problem]:
    """``count`` problems of ``steps`` steps each (after the start), seeded."""
    if count < 1 or steps < 1:
        raise ValueError(f"arithmetic task: count={count} and steps={steps} must be >= 1")
    rng = random.Random(f"pytest-sglang-arithmetic-{seed}-{steps}")
    out: list[Problem] = []
    for _ in range(count):
        name, item = rng.choice(NAMES), rng.choice(ITEMS)
        value = rng.randint(5, 40)
        sentences = [f"{name} has {value} {item}."]
        for _ in range(steps):
            sentence, value = _step(rng, name, item, value)
            sentences.append(sentence)
        sentences.append(f"How many {item} does {name} have now?")
        out.append(Problem(" ".join(sentences), value))
    return out


_PROBLEM = re.compile(
    r"(?P<name>[A-Z][a-z]+) has (?P<start>\d+) (?P<item>[a-z]+)\.(?P<body>.*?)"
    r"How many (?P=item) does (?P=name) have now\?",
    re.DOTALL,
)
_STEPS = re.compile(
    r"buys (?P<k>\d+) bags with (?P<m>\d+) [a-z]+ in each bag"
    r"|buys (?P<add>\d+) more"
    r"|gives away (?P<sub>\d+)"
    r"|(?P<double>doubles)"
)


def solve(text: str) -> int | None:
    """The answer to the LAST built-in problem in ``text`` (a few-shot prompt has several), or
    None when ``text`` holds none."""
    matches = list(_PROBLEM.finditer(text))
    if not matches:
        return None
    last = matches[-1]
    value = int(last.group("start"))
    for step in _STEPS.finditer(last.group("body")):
        if step.group("k"):
            value += int(step.group("k")) * int(step.group("m"))
        elif step.group("add"):
            value += int(step.group("add"))
        elif step.group("sub"):
            value = max(0, value - int(step.group("sub")))
        else:
            value *= 2
    return value
