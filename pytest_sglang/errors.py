"""The exceptions pytest-sglang raises.

Every message is one line that says what failed, where (field, host, file) and what to try.
Third-party errors (paramiko, requests, pydantic) are translated at the boundary with
``raise ... from exc`` so callers only ever need to catch these::

    SglangError
    ├── ConfigError            an invalid ServerConfig, config file or option
    ├── InventoryError         an unknown host, a missing field, an unreadable inventory
    ├── TransportError         SSH or local command execution failed
    │   ├── ConnectError       could not connect or authenticate
    │   ├── HostKeyError       unknown or changed host key (strict checking)
    │   └── CommandTimeout     a remote command ran past its timeout
    ├── PreflightError         the host's SGLang lacks a flag the config uses
    │   └── ConfigRefused      the host's SGLang refuses the config (its parser or resolution)
    ├── DeployError            writing the unit/files or (re)starting the service failed
    │   └── RestoreError       the host could not be returned to its original state
    ├── ServerStartError       the server failed to become ready (classified reason)
    │   └── StartAbandoned     not waited for: another part of its topology failed
    ├── JournalError           the startup journal contradicts the requested config
    └── BaselineError          the baseline store cannot be read/written, or is unusable
"""

from __future__ import annotations

__all__ = [
    "BaselineError",
    "CommandTimeout",
    "ConfigError",
    "ConfigRefused",
    "ConnectError",
    "DeployError",
    "HostKeyError",
    "InventoryError",
    "JournalError",
    "PreflightError",
    "RestoreError",
    "ServerStartError",
    "SglangError",
    "StartAbandoned",
    "TransportError",
]


class SglangError(Exception):
    """Base class of every error raised by pytest-sglang."""


class ConfigError(SglangError, ValueError):
    """A configuration (model, file or command-line option) is invalid."""


class InventoryError(SglangError):
    """A host name cannot be resolved to a usable host specification."""


class TransportError(SglangError):
    """Running a command or moving a file on a host failed."""

    def __init__(self, message: str, *, host: str = "") -> None:
        super().__init__(message)
        self.host = host


class ConnectError(TransportError):
    """The connection or the authentication to a host failed."""


class HostKeyError(ConnectError):
    """The host key is unknown or has changed; strict checking refuses it."""


class CommandTimeout(TransportError):
    """A command did not finish within its timeout."""


class PreflightError(SglangError):
    """The host's SGLang cannot run the requested configuration."""


class ConfigRefused(PreflightError):
    """The host's own SGLang refuses the configuration: its parser or its resolution raised
    (the message carries SGLang's own last line). Nothing on the host was changed."""

    reason = "invalid config"


class DeployError(SglangError):
    """Deploying a configuration on a host failed."""


class RestoreError(DeployError):
    """The host could not be restored to the state it had before the session."""


class ServerStartError(SglangError):
    """The server did not become ready; ``reason`` classifies why. ``step``: systemd's own
    setup step that failed before the server's program ran (``CGROUP``, ``EXEC``), if that
    is how it ended."""

    def __init__(
        self, message: str, *, reason: str, excerpt: str = "", step: str | None = None
    ) -> None:
        super().__init__(message)
        self.reason = reason
        self.excerpt = excerpt
        self.step = step


class StartAbandoned(ServerStartError):
    """The server's start was given up, not failed: another part of the same topology failed
    first, so waiting for this one (minutes, on a GPU host) would change nothing. The server
    was stopped; the host is restored with the others at the end of the session."""

    def __init__(self, message: str, *, excerpt: str = "") -> None:
        super().__init__(message, reason="abandoned", excerpt=excerpt)


class JournalError(SglangError, AssertionError):
    """The startup journal does not prove that the requested configuration took effect."""


class BaselineError(SglangError):
    """The baseline store cannot be read or written, or a required baseline is unusable."""
