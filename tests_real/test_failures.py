"""Real start-up failures, not replays: the real server refuses or dies, on this machine, in twelve
different ways (and a flag its parser lacks is refused before it starts), and each deployment
ends with one line that names the real cause. (A value outside a flag's choices never reaches
the server: the config is refused when it is built.)

Each case is a config of the tiny model that the real SGLang 0.5.23 cannot serve here; the
child session's test for it must error in its fixture with a reason that names what SGLang said
(``match``), said once, with no traceback of the plugin's own. A crash after ready (the
scheduler process killed under a running server) must fail the next request's test with the
cause, not hang.
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import CPU_FLAGS, RealSglang, local_real_entry

#: id -> (config expression in the child's scenario, what the one-line reason must say).
CASES: dict[str, tuple[str, str]] = {
    "missing-model": (
        'on_model("/nonexistent/model")',
        r"/nonexistent/model",
    ),
    "unknown-architecture": (
        "on_model(MODELS['unknown-arch'])",
        r"FooForCausalLM",
    ),
    "missing-weights": (
        "on_model(MODELS['no-weights'])",
        r"(?i)safetensors|weights|\.bin|\.pt",
    ),
    "bad-tokenizer": (
        "production(extra_args=('--tokenizer-path', MODELS['bad-tokenizer']))",
        r"(?i)tokenizer|json",
    ),
    "refused-by-resolution": (
        "production(extra_args=('--enable-deterministic-inference',))",
        r"deterministic inference",
    ),
    "context-too-long": (
        "production(context_length=100000)",
        r"(?i)context.len|max_position_embeddings",
    ),
    "tp-on-one-cpu-node": (
        "production(tp_size=2)",
        r"SGLANG_CPU_OMP_THREADS_BIND",
    ),
    "unknown-flag": (
        "production(extra_args=('--no-such-flag', '1'))",
        r"--no-such-flag",
    ),
    # a decode error is named by whose reading failed (the tokenizer's file, a config value)
    "bad-tokenizer-config": (
        "production(extra_args=('--tokenizer-path', MODELS['bad-tokenizer-config']))",
        r"\btokenizer\b.*JSONDecodeError",
    ),
    "override-not-json": (
        "production(extra_args=('--json-model-override-args', '{rope_scaling: 2'))",
        r"\binvalid config\b.*JSONDecodeError",
    ),
    # the model's config.json says a hidden size its weights do not have
    "weights-disagree-with-config": (
        "on_model(MODELS['doubled-hidden'])",
        r"\bmodel loading\b.*size of tensor",
    ),
    "kv-pool-too-small": (
        "production(extra_args=('--max-total-tokens', '16'))",
        r"(?i)memory|token",
    ),
}

SCENARIO = """
import json
import pytest
from pytest_sglang import ServerConfig, production

MODELS = json.loads({models!r})


def on_model(path):  # production's flags on another model directory
    return ServerConfig.from_argv(f"--model-path {{path}} {flags}")


CASES = {{
{cases}
}}


@pytest.mark.parametrize("sglang_server", list(CASES.values()), ids=list(CASES), indirect=True)
def test_start(sglang_server):
    pass
"""


def _broken_models(root: Path, model: Path) -> dict[str, str]:
    """Copies of the tiny model, each broken in one way."""
    out = {}
    names = (
        "unknown-arch",
        "no-weights",
        "bad-tokenizer",
        "bad-tokenizer-config",
        "doubled-hidden",
    )
    for name in names:
        target = root / name
        shutil.copytree(model, target)
        out[name] = str(target)
    config = json.loads((root / "unknown-arch" / "config.json").read_text())
    config["architectures"] = ["FooForCausalLM"]
    (root / "unknown-arch" / "config.json").write_text(json.dumps(config))
    config = json.loads((root / "doubled-hidden" / "config.json").read_text())
    config["hidden_size"] *= 2
    (root / "doubled-hidden" / "config.json").write_text(json.dumps(config))
    (root / "no-weights" / "model.safetensors").unlink()
    (root / "bad-tokenizer" / "tokenizer.json").write_text("{ this is not json")
    (root / "bad-tokenizer-config" / "tokenizer_config.json").write_text('{"model_max_length": ')
    return out


#: The child's conftest: when a fixture fails, how long after the server's log last changed
#: (its last line, or the deployer's exit record after it) the failure was reported.
TIMING = """
import glob, json, os, time

def pytest_runtest_logreport(report):
    if report.when != "setup" or not report.failed:
        return
    logs = glob.glob(os.path.join(os.environ["TMPDIR"], "pytest-sglang-*", "server.log"))
    last = max((os.path.getmtime(p) for p in logs), default=None)
    with open("timing.jsonl", "a") as fh:
        fh.write(json.dumps({"id": report.nodeid, "at": time.time(), "last": last}) + "\\n")
"""
#: How soon after the server's last line a failure must end its fixture.
REACTION_S = 2.0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _reasons(out: str) -> dict[str, str]:
    """The first line of each ``ERROR at setup of test_start[<case>]`` section."""
    found = {}
    for match in re.finditer(
        r"ERROR at setup of test_start\[(?P<case>[\w-]+)\] _+\n(?P<line>.*)", out
    ):
        found[match["case"]] = match["line"]
    return found


def test_each_real_failure_ends_its_fixture_with_the_cause(
    pytester: pytest.Pytester, real_sglang: RealSglang, monkeypatch: pytest.MonkeyPatch
) -> None:
    models = _broken_models(pytester.path / "models", real_sglang.model)
    state = pytester.path / "state"
    state.mkdir()
    monkeypatch.setenv("TMPDIR", str(state))  # the child's server logs, for their timing
    pytester.makeconftest(TIMING)
    pytester.makepyfile(
        test_failures=SCENARIO.format(
            models=json.dumps(models),
            flags=CPU_FLAGS,
            cases="\n".join(f"    {k!r}: {expr}," for k, (expr, _) in CASES.items()),
        )
    )
    inventory = pytester.path / "hosts.toml"
    inventory.write_text(local_real_entry("real", real_sglang, real_sglang.production_line()))
    # the servers' own failures: the host's resolution (tests_real/test_host_resolve.py) would
    # refuse the configs its parser and resolution refuse before any server starts
    result = pytester.runpytest_subprocess(
        "--sglang-inventory", str(inventory), "--sglang-host", "real",
        "--sglang-host-resolve=off", timeout=1800,
    )  # fmt: skip
    out = result.stdout.str()
    result.assert_outcomes(errors=len(CASES))
    reasons = _reasons(out)
    assert set(reasons) == set(CASES), out[-3000:]
    for case, (_, cause) in CASES.items():
        assert re.search(cause, reasons[case]), (
            f"{case}: the reason does not name {cause!r}: {reasons[case]}"
        )
        stated = [line for line in out.splitlines() if line.startswith(reasons[case])]
        assert len(stated) == 1, f"{case}: said more than once"
    timings = [
        json.loads(line) for line in (pytester.path / "timing.jsonl").read_text().splitlines()
    ]
    slow = [
        (t["id"], round(t["at"] - t["last"], 1))
        for t in timings
        if t["last"] is not None
        and "unknown-flag" not in t["id"]
        and t["at"] - t["last"] > REACTION_S
    ]
    assert not slow, (
        f"failures reported more than {REACTION_S} s after the server's last line: {slow}"
    )


PORT_SCENARIO = """
import pytest
from pytest_sglang import production


@pytest.mark.parametrize("sglang_server", [production()], indirect=True)
def test_start(sglang_server):
    pass
"""


def test_a_port_another_server_holds_is_one_line(
    pytester: pytest.Pytester, real_sglang: RealSglang
) -> None:
    """Another server holds the port (a host's launcher carries ``--port``, so the plugin does
    not pick a free one): SGLang logs the bind error and then lingers; the fixture must end at
    the error line with the cause, not wait for the process."""
    port = _free_port()
    holder = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while socket.socket().connect_ex(("127.0.0.1", port)) != 0:
            assert time.monotonic() < deadline, "the port holder never listened"
            time.sleep(0.1)
        entry = local_real_entry("real", real_sglang, real_sglang.production_line())
        entry = entry.replace("-m sglang.launch_server", f"-m sglang.launch_server --port {port}")
        inventory = pytester.path / "hosts.toml"
        inventory.write_text(entry)
        pytester.makepyfile(test_port=PORT_SCENARIO)
        result = pytester.runpytest_subprocess(
            "--sglang-inventory", str(inventory), "--sglang-host", "real", timeout=600
        )
    finally:
        holder.kill()
        holder.wait()
    result.assert_outcomes(errors=1)
    reason = _reasons(result.stdout.str())["production"]
    assert "port in use" in reason and "address already in use" in reason, reason


ENV_SCENARIO = """
import pytest
from pytest_sglang import production


@pytest.mark.parametrize(
    "sglang_server", [production(env={"SGLANG_USE_MLX": "not-a-value"})], indirect=True
)
def test_serves(sglang_server):
    assert sglang_server.get("/health").status_code == 200
"""


def test_an_environment_value_sglang_replaces_with_its_default_is_no_failure(
    pytester: pytest.Pytester, real_sglang: RealSglang
) -> None:
    """0.5.23 warns of a typed environment variable's value of no type (``Invalid value for
    SGLANG_USE_MLX: ..., using default "False"``) and serves: the start is not failed on it."""
    inventory = pytester.path / "hosts.toml"
    inventory.write_text(local_real_entry("real", real_sglang, real_sglang.production_line()))
    pytester.makepyfile(test_env=ENV_SCENARIO)
    result = pytester.runpytest_subprocess(
        "--sglang-inventory", str(inventory), "--sglang-host", "real", timeout=600
    )
    result.assert_outcomes(passed=1)
