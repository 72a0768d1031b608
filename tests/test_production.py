"""``production(**changes)``: the host's production config with changes, in real sessions.

On the ``local`` simulator the inventory gives production's command line; on a systemd host it
is read from the production unit (tests/deploy/test_production_context.py covers that path).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_sglang import ServerConfig, production, sweep
from pytest_sglang.errors import ConfigError
from pytest_sglang.lifecycle.production import apply_production, is_production

PRODUCTION_LINE = (
    "/opt/sglang/bin/python -m sglang.launch_server --model-path /models/prod "
    "--served-model-name prod --tp 4 --speculative-algorithm EAGLE "
    "--speculative-num-steps 2 --speculative-eagle-topk 1 --enable-metrics"
)
INVENTORY = f'[hosts.local]\nproduction = "{PRODUCTION_LINE}"\n'


pytestmark = pytest.mark.usefixtures("fast_simulator")


def test_placeholders_name_only_their_changes() -> None:
    assert production().id == "production"
    assert production(speculative_num_steps=3).id == "production-s3"
    points = sweep(production(), speculative_num_steps=[1, 3])
    assert [p.id for p in points] == ["production-s1", "production-s3"]
    assert all(is_production(p) for p in points)
    with pytest.raises(ConfigError, match="'no_such_field' is not a ServerConfig field"):
        production(no_such_field=1)


def test_changes_apply_on_top_of_production_and_are_validated_then() -> None:
    base = ServerConfig.from_argv(PRODUCTION_LINE.split())
    full = apply_production(production(speculative_num_steps=3), base, host="h")
    assert full.model_path == "/models/prod" and full.tp_size == 4
    assert full.speculative_num_steps == 3 and full.speculative_eagle_topk == 1
    assert full.extra_args == ("--enable-metrics",) and full.id == "production-s3"
    no_spec = ServerConfig(model_path="/models/prod")
    with pytest.raises(ConfigError, match=r"^host 'h': production with .* is not a valid config"):
        apply_production(production(speculative_num_steps=3), no_spec, host="h")


def test_a_sweep_from_production_on_the_simulator(pytester: pytest.Pytester) -> None:
    inventory = pytester.path / "hosts.toml"
    inventory.write_text(INVENTORY)
    pytester.makepyfile(
        """
import pytest
from pytest_sglang import production, sweep

@pytest.mark.parametrize(
    "sglang_server", sweep(production(), speculative_num_steps=[1, 3]), indirect=True
)
def test_prod(sglang_server):
    steps = sglang_server.config.speculative_num_steps
    assert sglang_server.config.model_path == "/models/prod"
    assert sglang_server.server_args["speculative_num_steps"] == steps
    assert sglang_server.server_args["tp_size"] == 4
    assert sglang_server.server_args["served_model_name"] == "prod"
    assert sglang_server.get("/metrics").status_code == 200  # production's --enable-metrics
"""
    )
    out = pytester.path / "summary.json"
    result = pytester.runpytest(
        "--sglang-inventory", str(inventory), "--sglang-summary", str(out), "-v"
    )
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test_prod?production-s1? PASSED*", "*production-s3? PASSED*"])
    records = json.loads(Path(out).read_text())["deployments"]
    assert [(r["config_id"], r["outcome"]) for r in records] == [
        ("production-s1", "ready"),
        ("production-s3", "ready"),
    ]


def test_production_without_a_production_line_is_one_clear_line(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        """
import pytest
from pytest_sglang import production

@pytest.mark.parametrize("sglang_server", [production(speculative_num_steps=3)], indirect=True)
def test_prod(sglang_server):
    pass
"""
    )
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*host 'local' has no production command line: set production = *[hosts.local]*"]
    )
    assert "Traceback" not in result.stdout.str()


def test_a_production_that_deletes_its_checkpoint_is_never_deployed_on(
    pytester: pytest.Pytester,
) -> None:
    """Production with --delete-ckpt-after-loading (in any spelling) has no checkpoint left to
    start from once stopped: one line says so, before the host is touched."""
    inventory = pytester.path / "hosts.toml"
    inventory.write_text(INVENTORY.replace("--enable-metrics", "--delete-ckpt-after-load"))
    pytester.makepyfile(
        """
import pytest
from pytest_sglang import production

@pytest.mark.parametrize("sglang_server", [production(speculative_num_steps=3)], indirect=True)
def test_prod(sglang_server):
    pass
"""
    )
    result = pytester.runpytest("--sglang-inventory", str(inventory))
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*host 'local': production runs with --delete-ckpt-after-loading, which deletes the "
         "model's checkpoint once it is loaded: once stopped, production could not start again*"]
    )  # fmt: skip
    assert "Traceback" not in result.stdout.str()


def test_changed_pass_through_flags_keep_productions_others() -> None:
    """A change to ``extra_args`` adds to production's pass-through flags and replaces only the
    flags it sets (in any spelling): production's --device and KV pool size stay."""
    base = ServerConfig.from_argv(
        "--model-path /m --device cpu --max-total-tokens 16384 --enable-tf32-matmul "
        "--schedule-policy fcfs"
    )
    full = apply_production(
        production(extra_args=("--no-enable-tf32-matmul", "--schedule-policy", "lpm")),
        base,
        host="h",
    )
    assert full.extra_args == (
        "--device", "cpu", "--max-total-tokens", "16384",
        "--no-enable-tf32-matmul", "--schedule-policy", "lpm",
    )  # fmt: skip
    with_env = ServerConfig(model_path="/m", env={"A": "1", "B": "2"})
    assert apply_production(production(env={"B": "3"}), with_env, host="h").env == {
        "A": "1",
        "B": "3",
    }


def test_production_and_a_config_with_its_digest_are_deployed_once(
    pytester: pytest.Pytester,
) -> None:
    """``production(speculative_num_steps=3)`` is, on this host, the config a sweep names
    ``eagle-s3``: one digest, so one deployment (the placeholder's group joins the config's,
    though it was written apart), and its results are one config's, under both names."""
    inventory = pytester.path / "hosts.toml"
    inventory.write_text(INVENTORY)
    pytester.makepyfile(
        f"""
import pytest
from pytest_sglang import ServerConfig, production
from pytest_sglang.bench import Workload

BASE = ServerConfig.from_argv({PRODUCTION_LINE.split()!r})
SAME = BASE.replace(speculative_num_steps=3, name="eagle-s3")
OTHER = BASE.replace(speculative_num_steps=1, name="eagle-s1")

@pytest.mark.parametrize(
    "sglang_server", [production(speculative_num_steps=3), OTHER, SAME], indirect=True
)
def test_bench(request, sglang_bench):
    assert request.node.callspec.id == sglang_bench.deployment.config_id
    assert sglang_bench(Workload.single_stream(16), rounds=2).failed == 0
"""
    )
    out = pytester.path / "summary.json"
    result = pytester.runpytest(
        "--sglang-inventory", str(inventory), "--sglang-summary", str(out), "-v"
    )
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        [
            "*test_bench?production-s3? PASSED*",
            "*test_bench?eagle-s3? PASSED*",
            "*test_bench?eagle-s1? PASSED*",
            "*local*production-s3 = eagle-s3*ready*",
        ]
    )
    summary = json.loads(Path(out).read_text())
    assert [(r["names"], r["outcome"]) for r in summary["deployments"]] == [
        (["production-s3", "eagle-s3"], "ready"),
        (["eagle-s1"], "ready"),
    ]
    rows = {r["config_id"]: r for r in summary["benchmarks"]}
    assert rows["production-s3"]["config_digest"] == rows["eagle-s3"]["config_digest"]
    assert rows["production-s3"]["config_digest"] != rows["eagle-s1"]["config_digest"]
    assert rows["eagle-s3"]["config_names"] == ["production-s3", "eagle-s3"]
    assert rows["eagle-s1"]["config_names"] == ["eagle-s1"]
    [verdict] = [v for v in summary["tuning"] if v["objective"] == "single-stream"]
    ranked = sorted(r["names"] for r in verdict["ranking"])  # one entry for the one config
    assert ranked == [["eagle-s1"], ["production-s3", "eagle-s3"]]
