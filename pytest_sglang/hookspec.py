"""Hooks between the package's own plugins (pytest-xdist's ``newhooks.py`` pattern).

The pytest-xdist plugin (:mod:`.distributed`) moves each plugin's results from the workers to
the controller without knowing them: each plugin that keeps results answers these hooks under a
key of its own in the worker's output. Registered by the entry plugin (:mod:`.plugin`).
"""

from __future__ import annotations

from typing import Any

import pytest


@pytest.hookspec
def pytest_sglang_worker_output(config: pytest.Config, output: dict[str, Any]) -> None:
    """On an xdist worker at the end of the session (hosts restored): add this plugin's
    results to ``output`` under a key of its own; the controller gets them as they are
    (JSON-like values only)."""


@pytest.hookspec
def pytest_sglang_merge_worker_output(config: pytest.Config, output: dict[str, Any]) -> None:
    """On the xdist controller, as each worker finishes: merge what the worker's
    :func:`pytest_sglang_worker_output` put in ``output`` into this process's results."""
