"""The seeds' loop as it is really done: "production, with ``--speculative-num-steps N``".

``production(**changes)`` is the host's production config with the changes applied: read from
the production unit on a real host (``--sglang-host llm-two``), from the inventory's
``production`` line on the built-in simulator (sglang-hosts.toml). The test ids name only the
changes (``production-s1``, ``production-s3``); the journal check verifies the whole resolved
config, and the figures land in the benchmark table beside the seeds' configs.
"""

from __future__ import annotations

import pytest

from pytest_sglang import SglangBench, Workload, production, sweep


@pytest.mark.parametrize(
    "sglang_server", sweep(production(), speculative_num_steps=[1, 3]), indirect=True
)
def test_production_with_other_draft_steps(sglang_bench: SglangBench) -> None:
    deployment = sglang_bench.deployment
    result = sglang_bench(Workload.single_stream(64))
    assert result.failed == 0, result.errors
    assert deployment.server_args["speculative_num_steps"] == (
        deployment.config.speculative_num_steps
    )
