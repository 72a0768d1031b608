"""Typed values for ``--sglang-*`` options, checked as argparse parses them.

Every option module uses these, so a bad value always reads the same way:
``argument --sglang-rounds: must be >= 1, got 0``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

__all__ = ["number"]


def number(
    kind: type[int] | type[float],
    *,
    minimum: float | None = None,
    above: float | None = None,
    below: float | None = None,
) -> Callable[[str], float]:
    """An argparse ``type=`` for a number of ``kind`` within the given bounds.

    ``minimum`` is inclusive; ``above`` and ``below`` are exclusive.
    """
    what = "a whole number" if kind is int else "a number"

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not {what}: {text!r}") from None
        if minimum is not None and value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum:g}, got {text}")
        if above is not None and value <= above:
            if below is not None:
                raise argparse.ArgumentTypeError(
                    f"must be between {above:g} and {below:g}, got {text}"
                )
            raise argparse.ArgumentTypeError(f"must be > {above:g}, got {text}")
        if below is not None and value >= below:
            raise argparse.ArgumentTypeError(f"must be between {above:g} and {below:g}, got {text}")
        return value

    parse.__name__ = f"{kind.__name__}_value"  # argparse names the type in its messages
    return parse
