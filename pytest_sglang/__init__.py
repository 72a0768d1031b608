"""pytest-sglang: SGLang server configurations as pytest fixtures.

Deploy a configuration on a GPU host (or the built-in simulator), wait until it can really serve,
prove from its startup journal that the requested flags took effect, benchmark it, and compare the
numbers with stored baselines.

This module is the public API (docs/api.md lists it, generated from these docstrings): scenarios,
the docs and the README import only from here, and from :mod:`pytest_sglang.sim` for the
simulator's own performance model. Everything else is internal and may move.

The package's layout (internal), in the order data flows (config → launch plan → deploy →
ready → verify → bench → compare → report):

- configs: :mod:`.config` (``ServerConfig``), :mod:`.sweep`, :mod:`.topology` (replicas behind
  the router), :mod:`.server_args` and :mod:`.argv_parse` (a config from a command line),
  :mod:`.cmdline` (the one codec for command lines and unit values), :mod:`.aliases` (deprecated
  spellings), :mod:`.addresses` (what ``--host`` can bind, by its shape), :mod:`.resolution`
  (what SGLang will resolve a config to, offline), :mod:`.refusals` (what real SGLang refuses,
  said before deploy), :mod:`.gpu_rules` (SGLang's attention rules that depend on the GPU,
  shared with the simulator), :mod:`.model_config_rules` (ModelConfig's check of
  --quantization against the checkpoint, shared too),
  :mod:`.model_identity` (a model from its config.json), :mod:`.versions` (what differs
  between SGLang releases), :mod:`.container` (SGLang run by a container engine),
  :mod:`.secrets` (the redactor);
- :mod:`.lifecycle`: one deployment, from the host spec to the restore; :mod:`.transport`: how a
  host is reached;
- measurement, layered (each imports only those before it): :mod:`.sim` (the simulator),
  :mod:`.bench` (load and metrics), :mod:`.baseline` (stored runs and gates), :mod:`.quality`
  (accuracy and equivalence), :mod:`.report` (terminal, HTML, Allure); :mod:`.arithmetic` (the
  built-in task both the simulator and the quality evals use);
- pytest: :mod:`.plugin` (the entry plugin: options, fixtures), :mod:`.session` (the hosts one
  pytest session holds), :mod:`.stash` (what plugins share), :mod:`.hookspec` (hooks),
  :mod:`.distributed` (pytest-xdist), :mod:`.options`, :mod:`.output_paths`, :mod:`.terminal`;
  :mod:`.errors` (the exception tree).

Why some names load on first use (:func:`__getattr__`): the fixtures' classes and the
measurement types pull in the plugin machinery (pytest, aiohttp, the report stack). The simulator
and the on-host load generator import this package in every process they start, and must not pay
for what only a pytest session needs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .config import FileSpec, ServerConfig
from .errors import (
    BaselineError,
    CommandTimeout,
    ConfigError,
    ConfigRefused,
    ConnectError,
    DeployError,
    HostKeyError,
    InventoryError,
    JournalError,
    PreflightError,
    RestoreError,
    ServerStartError,
    SglangError,
    StartAbandoned,
    TransportError,
)
from .lifecycle.production import production
from .resolution import ADJUST_DRAFT_TOKENS_WARNING, ExpectedJournal
from .server_args import parse_server_args
from .sweep import load_configs, sweep
from .topology import Router, Topology

if TYPE_CHECKING:
    from .bench.datasets import (
        ConversationPrompts,
        LongContextPrompts,
        MooncakeTrace,
        SharedPrefixPrompts,
    )
    from .bench.metrics import BenchResult
    from .bench.pytest_plugin import SglangBench
    from .bench.slo import Slo
    from .bench.workload import JsonlPrompts, RandomPrompts, ShareGPTPrompts, Workload
    from .lifecycle.deployment import Deployment
    from .lifecycle.topology_deployment import TopologyDeployment
    from .quality.evals import AccuracyResult, EquivalenceResult
    from .quality.pytest_plugin import SglangQuality
    from .quality.tasks import Item, Task
    from .report.tuning import best_per_workload, tuning_verdicts
    from .stash import bench_results, quality_results

__version__ = "0.1.0"

#: Public names that load on first use: name -> the module that defines it.
_LAZY: dict[str, str] = {
    "AccuracyResult": ".quality.evals",
    "BenchResult": ".bench.metrics",
    "ConversationPrompts": ".bench.datasets",
    "LongContextPrompts": ".bench.datasets",
    "MooncakeTrace": ".bench.datasets",
    "SharedPrefixPrompts": ".bench.datasets",
    "Deployment": ".lifecycle.deployment",
    "TopologyDeployment": ".lifecycle.topology_deployment",
    "EquivalenceResult": ".quality.evals",
    "Item": ".quality.tasks",
    "JsonlPrompts": ".bench.workload",
    "RandomPrompts": ".bench.workload",
    "ShareGPTPrompts": ".bench.workload",
    "SglangBench": ".bench.pytest_plugin",
    "SglangQuality": ".quality.pytest_plugin",
    "Slo": ".bench.slo",
    "Task": ".quality.tasks",
    "Workload": ".bench.workload",
    "bench_results": ".stash",
    "best_per_workload": ".report.tuning",
    "quality_results": ".stash",
    "tuning_verdicts": ".report.tuning",
}


def __getattr__(name: str) -> Any:
    """Load a public name of :data:`_LAZY` from its module, once (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "ADJUST_DRAFT_TOKENS_WARNING",
    "AccuracyResult",
    "BaselineError",
    "BenchResult",
    "CommandTimeout",
    "ConfigError",
    "ConfigRefused",
    "ConnectError",
    "ConversationPrompts",
    "DeployError",
    "Deployment",
    "EquivalenceResult",
    "ExpectedJournal",
    "FileSpec",
    "HostKeyError",
    "InventoryError",
    "Item",
    "JournalError",
    "JsonlPrompts",
    "LongContextPrompts",
    "MooncakeTrace",
    "PreflightError",
    "RandomPrompts",
    "RestoreError",
    "Router",
    "ServerConfig",
    "ServerStartError",
    "SglangBench",
    "SglangError",
    "SglangQuality",
    "ShareGPTPrompts",
    "SharedPrefixPrompts",
    "Slo",
    "StartAbandoned",
    "Task",
    "Topology",
    "TopologyDeployment",
    "TransportError",
    "Workload",
    "__version__",
    "bench_results",
    "best_per_workload",
    "load_configs",
    "parse_server_args",
    "production",
    "quality_results",
    "sweep",
    "tuning_verdicts",
]
