"""Secrets never reach an output: the redactor on its own, then a whole pytest session.

The session test deploys the real simulator with a token in ``config.env``, a password in the
host's environment and the same kind of secret as ``--api-key`` (which SGLang logs verbatim in its
``server_args`` line, so it reaches the journal), runs a benchmark and a test that carelessly
prints and asserts on the secrets, and writes every report there is. Then it searches the terminal
output and every file written for the secret values.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_sglang.secrets import REDACTED, Redactor

TOKEN = "hf_Zq9TOKENvalue_4d1c"
API_KEY = "sk-APIKEY-77e1b0c9"
SECRETS = (TOKEN, API_KEY)


def test_secret_names_follow_the_patterns_and_the_extras() -> None:
    r = Redactor(["MY_*_CRED"])
    for name in (
        "HF_TOKEN",
        "OPENAI_API_KEY",
        "DB_PASSWORD",
        "x_token",
        "MY_DB_CRED",
        "AWS_SECRET",
        "OPENAI_APIKEY",
        "BASIC_AUTH",
        "SSH_PRIVATE",
    ):
        assert r.is_secret_name(name), name
    for name in ("PATH", "SGLANG_SIM_SPEED_FACTOR", "KEYBOARD"):
        assert not r.is_secret_name(name), name


def test_values_are_redacted_in_every_spelling() -> None:
    r = Redactor()
    r.add_env({"HF_TOKEN": "a\"b\\c'd", "PATH": "/usr/bin"})
    r.add_argv(["--api-key", "k3y-value", "--ssl-keyfile", "/etc/key.pem", "--admin-api-key=zz99"])
    text = 'env a"b\\c\'d json "a\\"b\\\\c\'d" key k3y-value zz99 keyfile /etc/key.pem /usr/bin'
    out = r.redact(text)
    assert "k3y-value" not in out and "zz99" not in out and 'a"b' not in out
    assert "/etc/key.pem" in out and "/usr/bin" in out  # a key *file* path is not a secret
    assert r.redact_obj({"a": ["x k3y-value"], "n": 1}) == {"a": [f"x {REDACTED}"], "n": 1}
    assert r.env_view({"HF_TOKEN": "whatever", "X": "k3y-value!"}) == {
        "HF_TOKEN": REDACTED,
        "X": f"{REDACTED}!",
    }


def test_only_flags_that_name_a_secret_hide_their_value() -> None:
    argv = [
        "--max-total-tokens",
        "16384",
        "--tokenizer-mode",
        "auto",
        "--skip-tokenizer-init",
        "--trust-remote-code",
        "--hf-token",
        "hf_abcdef",
        "--api-key",
        "--port",
        "30000",
        "--ssl-keyfile-password=pw1234",
        "--x",
        "a=b",
    ]
    r = Redactor()
    r.add_argv(argv)
    # token counts, modes and the next flag are ordinary text, in reports and everywhere else
    assert r.redact(
        "max_total_num_tokens=16384, tokenizer_mode=auto --trust-remote-code 30000"
    ) == ("max_total_num_tokens=16384, tokenizer_mode=auto --trust-remote-code 30000")
    assert r.redact("hf_abcdef pw1234") == f"{REDACTED} {REDACTED}"
    shown = [r.redact(word) for word in argv]
    assert shown[1] == "16384" and shown[3] == "auto" and shown[5] == "--trust-remote-code"
    assert shown[7] == REDACTED and shown[9:11] == ["--port", "30000"]
    assert shown[11] == f"--ssl-keyfile-password={REDACTED}" and shown[13] == "a=b"


def test_short_values_are_not_treated_as_secrets() -> None:
    r = Redactor()
    r.add_env({"HF_TOKEN": "1"})
    assert r.redact("1 2 3") == "1 2 3" and not r.active


SESSION_TESTS = f"""
import pytest
from pytest_sglang import ServerConfig
from pytest_sglang.bench import Workload

CFG = ServerConfig(
    model_path="/models/Qwen3-8B",
    served_model_name="qwen3-8b",
    extra_args=("--api-key", {API_KEY!r}),
    env={{"HF_TOKEN": {TOKEN!r}}},
)

@pytest.mark.parametrize("sglang_server", [CFG], indirect=True)
def test_bench(sglang_bench):
    sglang_bench(Workload.single_stream(8))

@pytest.mark.parametrize("sglang_server", [CFG], indirect=True)
def test_careless(sglang_server):
    print("journal:", sglang_server.journal.text)
    print("server_args:", sglang_server.server_args)
    print("artifacts:", sglang_server.artifacts)
    assert {TOKEN!r} in sglang_server.journal.text + {API_KEY!r}

OOM = CFG.replace(name="oom", env={{"HF_TOKEN": {TOKEN!r}, "SGLANG_SIM_FAULT": "oom"}})

@pytest.mark.parametrize("sglang_server", [OOM], indirect=True)
def test_failing_deploy(sglang_server):
    pass
"""


def _files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()]


def test_a_session_with_secrets_writes_none_of_them(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SGLANG_SIM_STARTUP_SCALE", "0")
    monkeypatch.setenv("SGLANG_SIM_TIME_SCALE", "0")
    pytester.makepyfile(SESSION_TESTS)
    out = pytester.path / "out"
    out.mkdir()
    result = pytester.runpytest(
        "-rA",
        f"--junitxml={out / 'junit.xml'}",
        f"--sglang-summary={out / 'summary.json'}",
        f"--alluredir={out / 'allure'}",
        f"--benchmark-json={out / 'bench.json'}",
    )
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed") == 1, result.stdout.str()[-3000:]
    assert outcomes.get("failed", 0) + outcomes.get("errors", 0) + outcomes.get("error", 0) == 2
    text = result.stdout.str() + result.stderr.str()
    assert REDACTED in text  # the careless prints were there, redacted
    leaks = [s for s in SECRETS if s in text]
    assert not leaks, f"secret in terminal output: {leaks}"
    written = _files(out)
    assert {p.name for p in written} >= {"junit.xml", "summary.json", "bench.json"}
    assert any(p.parent.name == "allure" for p in written)
    for path in written:
        data = path.read_bytes().decode("utf-8", "replace")
        for secret in SECRETS:
            assert secret not in data, f"secret leaked into {path.relative_to(out)}"
    summary = json.loads((out / "summary.json").read_text())
    assert {d["outcome"] for d in summary["deployments"]} == {"ready", "failed"}
