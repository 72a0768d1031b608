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
        if value != value:  # nan passes every comparison below: a timeout that never ends
            raise argparse.ArgumentTypeError(f"not {what}: {text!r}")
        if minimum is not None and value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum:g}, got {text}")
        too_low = above is not None and value <= above
        too_high = below is not None and value >= below
        if too_low or too_high:
            if above is not None and below is not None:
                raise argparse.ArgumentTypeError(
                    f"must be between {above:g} and {below:g}, got {text}"
                )
            bound = f"> {above:g}" if too_low else f"< {below:g}"
            raise argparse.ArgumentTypeError(f"must be {bound}, got {text}")
        return value

    parse.__name__ = f"{kind.__name__}_value"  # argparse names the type in its messages
    return parse
