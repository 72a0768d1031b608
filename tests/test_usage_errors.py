"""Mistakes a new user makes are caught once, at the start, with one line each.

A wrong host, inventory or option value is a pytest usage error (exit 4) before anything is
collected; a wrong config in a test module is one collection error (exit 2) naming the mistake
first, never an error per test or a traceback through the plugin.
"""

from __future__ import annotations

import pytest

SIX_TESTS = """
import pytest
from pytest_sglang import ServerConfig

CONFIG = ServerConfig(model_path="m")

@pytest.mark.parametrize("sglang_server", [CONFIG], indirect=True)
@pytest.mark.parametrize("n", range(6))
def test_a(sglang_server, n):
    pass
"""


def lines_with(result: pytest.RunResult, text: str) -> list[str]:
    return [line for line in result.outlines + result.errlines if text in line]


def assert_usage_error(result: pytest.RunResult, message: str) -> None:
    """Exit 4, the message exactly once (pytest's ``ERROR: ...`` line), no test run."""
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert lines_with(result, message) == [f"ERROR: {message}"]
    assert "passed" not in result.stdout.str() and "error" not in result.stdout.str().lower()


def test_unknown_host_is_one_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(SIX_TESTS)
    result = pytester.runpytest("--sglang-host", "no-such-host", "--sglang-ssh-config", "/dev/null")
    assert_usage_error(
        result,
        "host 'no-such-host' is not in the inventory (no --sglang-inventory) nor in /dev/null; "
        "add [hosts.no-such-host] or use user@host",
    )


def test_missing_inventory_is_one_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(SIX_TESTS)
    result = pytester.runpytest("--sglang-inventory", "nope.toml")
    assert_usage_error(result, "inventory nope.toml does not exist; check --sglang-inventory")


def test_invalid_inventory_is_one_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(SIX_TESTS)
    inventory = pytester.path / "sglang-hosts.toml"  # the default one, in the rootdir
    inventory.write_text("[hosts.local]\nsudo = 1\n")
    result = pytester.runpytest()
    assert_usage_error(
        result, f"[hosts.local] in {inventory}: 'sudo' must be true or false, got int"
    )


def test_inventory_that_is_not_toml_is_one_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(SIX_TESTS)
    pytester.path.joinpath("hosts.toml").write_text("[hosts.x\n")
    result = pytester.runpytest("--sglang-inventory", "hosts.toml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    (line,) = lines_with(result, "hosts.toml")
    assert line.startswith("ERROR: inventory hosts.toml is not valid TOML: ")


def test_help_still_works_with_a_broken_inventory(pytester: pytest.Pytester) -> None:
    pytester.path.joinpath("sglang-hosts.toml").write_text("[hosts.x\n")
    result = pytester.runpytest("--help")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*--sglang-inventory=PATH*"])


@pytest.mark.parametrize(
    ("arg", "message"),
    [
        ("--sglang-rounds=0", "argument --sglang-rounds: must be >= 1, got 0"),
        ("--sglang-ready-timeout=-1", "argument --sglang-ready-timeout: must be > 0, got -1"),
        ("--sglang-gate-alpha=2", "argument --sglang-gate-alpha: must be between 0 and 1, got 2"),
    ],
)
def test_option_out_of_range_is_one_usage_error(
    pytester: pytest.Pytester, arg: str, message: str
) -> None:
    pytester.makepyfile(SIX_TESTS)
    result = pytester.runpytest(arg)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    (line,) = lines_with(result, message)  # argparse's own: "pytest: error: argument ..."
    assert line.endswith(f": error: {message}")


def test_config_typo_is_one_collection_error_naming_the_field_first(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_typo="""
import pytest
from pytest_sglang import ServerConfig

SEED = ServerConfig(model_path="/shared/models/Qwen3.5-122B-A10B", tp_sise=4)

@pytest.mark.parametrize("sglang_server", [SEED], indirect=True)
def test_a(sglang_server):
    pass
"""
    )
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.assert_outcomes(errors=1)
    message = "ServerConfig: unknown field 'tp_sise' (did you mean 'tp_size'?) (test_typo.py:4)"
    # the ERRORS section, then the short summary (cut to the terminal's 80 columns, after the
    # field): the same line, no traceback
    section, summary = lines_with(result, "tp_sise")
    assert section == message
    assert summary.startswith("ERROR test_typo.py - ServerConfig: unknown field 'tp_sise'")


def test_parametrize_without_indirect_is_one_collection_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_direct="""
import pytest
from pytest_sglang import ServerConfig

@pytest.mark.parametrize("sglang_server", [ServerConfig(model_path="m")])
def test_a(sglang_server):
    pass

@pytest.mark.parametrize("sglang_server", [ServerConfig(model_path="m")], indirect=["sglang_server"])
def test_b(sglang_server):
    pass
"""
    )
    result = pytester.runpytest("--collect-only")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    message = (
        "parametrize('sglang_server', ...) needs indirect=True: test_a would get the "
        "ServerConfig undeployed"
    )
    section, summary = lines_with(result, "needs indirect")
    assert section == message
    assert summary.startswith(f"ERROR test_direct.py - {message[:40]}")
    assert "test_b" not in result.stdout.str()


@pytest.mark.parametrize(
    ("option", "name", "reason"),
    [
        ("--sglang-summary", "afile/summary.json", "{tmp}/afile is not a folder"),
        ("--sglang-summary", "adir", "it is a folder"),
        ("--sglang-html", "afile/deeper/report.html", "{tmp}/afile is not a folder"),
        ("--alluredir", "afile", "it is not a folder"),
        ("--alluredir", "afile/allure", "{tmp}/afile is not a folder"),
    ],
)
def test_an_unwritable_output_path_is_one_usage_error_before_anything_runs(
    pytester: pytest.Pytester, option: str, name: str, reason: str
) -> None:
    """Checked at the start, not when written after the whole run (a summary lost in a
    traceback), and before allure-pytest creates its folder (an INTERNALERROR)."""
    pytester.makepyfile(SIX_TESTS)
    (pytester.path / "afile").write_text("")
    (pytester.path / "adir").mkdir()
    path = pytester.path / name
    result = pytester.runpytest(option, str(path))
    assert_usage_error(
        result,
        f"{option} {path}: cannot be written ({reason.format(tmp=pytester.path)}); "
        "give a writable path",
    )
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def test_a_writable_output_path_that_does_not_exist_yet_is_fine(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile("def test_nothing():\n    pass\n")
    summary = pytester.path / "new" / "dir" / "summary.json"
    result = pytester.runpytest("--sglang-summary", str(summary))
    result.assert_outcomes(passed=1)
    assert summary.exists()
