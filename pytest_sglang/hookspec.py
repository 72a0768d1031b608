"""Hooks between the package's own plugins, and for outside ones (pytest-xdist's ``newhooks.py``
pattern).

The pytest-xdist plugin (:mod:`.distributed`) moves each plugin's results from the workers to
the controller without knowing them: each plugin that keeps results answers these hooks under a
key of its own in the worker's output. An outside package adds a deployer backend through
:func:`pytest_sglang_deployer`. Registered by the entry plugin (:mod:`.plugin`).
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


@pytest.hookspec(firstresult=True)
def pytest_sglang_deployer(name: str) -> type | str | None:
    """The backend for an inventory's ``deployer = "name"``: a
    :class:`~pytest_sglang.lifecycle.deployer.Deployer` subclass, or its ``"module:Class"``
    path (imported when a host first uses it); None to let another plugin answer. The first
    answer wins; the built-in ``systemd`` and ``process`` answer last, so a plugin may also
    replace one of them."""
