"""Quality beside speed: output equivalence, accuracy evals, and their gates.

- :mod:`.tasks` / :mod:`.arithmetic`: what an accuracy eval asks (the built-in task, task
  JSONL, GSM8K JSONL) and how answers are scored;
- :mod:`.stats`: Wilson intervals, the proportions test, McNemar's exact test, the minimum
  detectable drops;
- :mod:`.pairing`: the per-item outcomes that pair two runs over the same items;
- :mod:`.evals`: running them on a deployed server through the load generator;
- :mod:`.gate`: comparing them with the stored baselines (paired where the items match);
- :mod:`.noise`: the equivalence noise floor (the reference's agreement with itself);
- :mod:`.pytest_plugin`: the ``sglang_quality`` fixture and the reports.

This package's ``__init__`` imports only the pure modules: the simulator imports
:mod:`.arithmetic` to stand in for a model.
"""

from __future__ import annotations

from .tasks import Item, Task

__all__ = ["Item", "Task"]
