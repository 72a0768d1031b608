"""pytest-sglang: SGLang server configurations as pytest fixtures.

Deploy a configuration on a GPU host (or the built-in simulator), wait until it can really serve,
prove from its startup journal that the requested flags took effect, benchmark it, and compare the
numbers with stored baselines.
"""

from __future__ import annotations

from .config import FileSpec, ServerConfig
from .errors import (
    BaselineError,
    CommandTimeout,
    ConfigError,
    ConnectError,
    DeployError,
    HostKeyError,
    InventoryError,
    JournalError,
    PreflightError,
    RestoreError,
    ServerStartError,
    SglangError,
    TransportError,
)
from .production import production
from .resolution import ExpectedJournal
from .server_args import parse_server_args
from .sweep import load_configs, sweep

__version__ = "0.1.0"

__all__ = [
    "BaselineError",
    "CommandTimeout",
    "ConfigError",
    "ConnectError",
    "DeployError",
    "ExpectedJournal",
    "FileSpec",
    "HostKeyError",
    "InventoryError",
    "JournalError",
    "PreflightError",
    "RestoreError",
    "ServerConfig",
    "ServerStartError",
    "SglangError",
    "TransportError",
    "__version__",
    "load_configs",
    "parse_server_args",
    "production",
    "sweep",
]
