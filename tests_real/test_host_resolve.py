"""The host's own SGLang as the authority on what a config resolves to, with the real package.

The resolver program (``pytest_sglang/lifecycle/resolver_program.py``) runs in the tier venv's
Python, as the launcher's Python on a host, with the tier's CPU flags and the tiny model: one
round trip for all the configs, each parsed and resolved as ``launch_server`` does before it logs
``server_args=``, and no server is started. It must refuse what the real package refuses, with
its own last line (its parser, and its resolution), resolve with each config's environment,
agree with the built-in predictor where the predictor is right, never keep a secret, and answer
a second time from the cache. Runs alone in a few minutes on two cores (SGLang's imports):
``pytest tests_real/test_host_resolve.py``.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import pytest

from conftest import CPU_FLAGS, RealSglang, local_real_entry
from pytest_sglang import ServerConfig
from pytest_sglang.errors import ConfigError, ConfigRefused
from pytest_sglang.lifecycle.host_resolve import adopt, request_key
from pytest_sglang.lifecycle.launcher_cache import CACHE_ENV
from pytest_sglang.session import SglangSession

SECRET = "sekrit-4711"


def test_the_real_package_resolves_refuses_and_agrees_in_one_round_trip(
    real_sglang: RealSglang, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    inventory = tmp_path / "hosts.toml"
    inventory.write_text(local_real_entry("real", real_sglang, real_sglang.production_line()))
    session = SglangSession(["real"], inventory=inventory, ssh_config=None, ready_timeout=300)
    deployer = session.host("real").deployer
    base = f"--model-path {real_sglang.model} {CPU_FLAGS}"
    too_long = ServerConfig.from_argv(f"{base} --context-length 999999")
    allowed = too_long.replace(env={"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1"})
    configs = {
        "plain": ServerConfig.from_argv(f"{base} --served-model-name tiny --api-key {SECRET}"),
        "ngram": ServerConfig.from_argv(f"{base} --speculative-algorithm NGRAM"),
        # a context longer than the model's is allowed by the config's environment:
        # resolution runs with it
        "too-long-allowed": allowed,
        # the parser refuses a value the plugin's checks let through
        "graph-config": ServerConfig.from_argv(f"{base} --cuda-graph-config nope"),
    }
    plans = {name: deployer.launch_plan(config) for name, config in configs.items()}
    # Without that variable the plugin refuses it before asking the host (it reads the model's
    # config.json: pytest_sglang/refusals.py) ...
    with pytest.raises(ConfigError, match=r"context_length: SGLang would refuse it: .*999999"):
        deployer.launch_plan(too_long)
    # ... and so does the host's SGLang, asked directly with the same plan less the variable
    plans["too-long"] = dataclasses.replace(
        plans["too-long-allowed"],
        config=too_long,
        deployed=plans["too-long-allowed"].deployed.replace(env={}),
    )

    started = time.monotonic()
    resolution = deployer.resolve_on_host(list(plans.values()))
    elapsed = time.monotonic() - started
    assert resolution.failure == ""
    assert (resolution.asked, resolution.cached) == (len(plans), 0)
    assert resolution.import_s is not None
    print(
        f"\nthe real SGLang {real_sglang.version} resolved {resolution.asked} configs in "
        f"{elapsed:.1f}s ({resolution.import_s:.1f}s importing SGLang)"
    )
    answers = {
        name: resolution.answers[request_key(plan, deployer.redactor)]
        for name, plan in plans.items()
    }
    assert deployer.deployed is None  # nothing was started

    with pytest.raises(
        ConfigRefused,
        match=r"refuses config .*: ValueError: .*context_length \(999999\) is greater than",
    ):
        adopt(plans["too-long"], answers["too-long"])
    with pytest.raises(
        ConfigRefused, match=r"refuses config .*: sglang serve: error: argument --cuda-graph-config"
    ):
        adopt(plans["graph-config"], answers["graph-config"])
    assert answers["graph-config"].kind == "usage"
    assert answers["too-long"].kind == "ValueError"

    allowed, _notes = adopt(plans["too-long-allowed"], answers["too-long-allowed"])
    assert allowed.expected.server_args["context_length"] == 999999

    # NGRAM's rewrite: the built-in predictor and the real package agree, warnings and all
    ngram, notes = adopt(plans["ngram"], answers["ngram"])
    assert notes == []
    assert ngram.expected == plans["ngram"].expected
    rewritten = ("max_running_requests", "speculative_num_draft_tokens", "speculative_eagle_topk")
    assert [ngram.expected.server_args[k] for k in rewritten] == [48, 12, 10]

    plain = answers["plain"].server_args
    assert plain is not None and plain["served_model_name"] == "tiny"
    assert plain["device"] == "cpu"
    assert "api_key" not in plain  # it holds a secret: the predictor's value stays
    stored = list((tmp_path / "cache" / "resolved").glob("*.json"))
    assert len(stored) == len(plans)  # every verdict is kept, refusals too
    assert not any(SECRET in path.read_text() for path in stored)

    # a later session: every answer from the cache, no SGLang imported
    again = deployer.resolve_on_host(list(plans.values()))
    assert (again.asked, again.cached) == (0, len(plans))
    assert again.answers == resolution.answers
