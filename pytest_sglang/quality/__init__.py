"""Quality beside speed: output equivalence, accuracy evals, and their gates.

- :mod:`.tasks`: what an accuracy eval asks (the built-in arithmetic task of
  :mod:`pytest_sglang.arithmetic`, task JSONL, GSM8K JSONL) and how answers are scored;
- :mod:`.stats`: Wilson intervals, the proportions test, McNemar's exact test, the minimum
  detectable drops;
- :mod:`.pairing`: the per-item outcomes that pair two runs over the same items;
- :mod:`.evals`: running them on a deployed server through the load generator;
- :mod:`.gate`: comparing them with the stored baselines (paired where the items match);
- :mod:`.noise`: the equivalence noise floor (the reference's agreement with itself);
- :mod:`.verdict`: which configs' quality holds, beside the tuning verdict;
- :mod:`.pytest_plugin`: the ``sglang_quality`` fixture and the reports.

This package's ``__init__`` imports only the pure modules (no pytest, no load generator).
"""

from __future__ import annotations

from .tasks import Item, Task

__all__ = ["Item", "Task"]
