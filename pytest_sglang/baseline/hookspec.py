"""Hooks to change the host fingerprint that keys the baselines (pytest-benchmark style)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ..lifecycle.deployment import Deployment


@pytest.hookspec(firstresult=True)
def pytest_sglang_generate_fingerprint(
    config: pytest.Config, deployment: Deployment
) -> dict[str, Any] | None:
    """Return the fingerprint of ``deployment``'s host, replacing the collected one.

    The default (``trylast``) asks the host over its transport (nvidia-smi, nvcc, sha256sum of
    the model's config.json). Example ``conftest.py``, for a fleet where the inventory already
    knows the hardware::

        def pytest_sglang_generate_fingerprint(config, deployment):
            return {"gpu_name": "H100 80GB HBM3", "gpu_count": 8, "driver": "550.54",
                    "cuda": "12.4", "sglang_version": deployment.sglang_version,
                    "model_path": deployment.config.model_path}
    """


def pytest_sglang_update_fingerprint(
    config: pytest.Config, deployment: Deployment, fingerprint: dict[str, Any]
) -> None:
    """Change the collected fingerprint in place (every field takes part in the key).

    Example ``conftest.py``: the driver's patch level does not matter to us, the kernel does::

        def pytest_sglang_update_fingerprint(config, deployment, fingerprint):
            fingerprint["driver"] = fingerprint["driver"].split(".")[0]
            fingerprint["kernel"] = deployment.deployer.transport.check_output("uname -r").strip()
    """
