"""The pytest entry point: options and hooks only; the work happens in plain classes."""

from __future__ import annotations

from typing import Any

import pytest

from .config import ServerConfig


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("sglang", "SGLang server deployment and benchmarking")
    group.addoption(
        "--sglang-host",
        action="append",
        default=[],
        metavar="NAME",
        help="Host to deploy on: an inventory name, an ssh_config alias, or 'local' (the "
        "built-in simulator). Repeatable. Default: local.",
    )
    group.addoption(
        "--sglang-inventory",
        default=None,
        metavar="PATH",
        help="TOML host inventory. Default: the ini option sglang_inventory, else "
        "sglang-hosts.toml in the rootdir.",
    )
    parser.addini(
        "sglang_inventory",
        "TOML host inventory (relative to the rootdir).",
        default="sglang-hosts.toml",
    )


def pytest_make_parametrize_id(config: pytest.Config, val: object, argname: str) -> str | None:
    """Test ids come from the configs' own ids (``eagle-s3-k1``), not ``sglang_server0``."""
    if isinstance(val, ServerConfig):
        return val.id
    return None


def _unused(*_: Any) -> None:  # pragma: no cover - placeholder for later hooks
    return None
