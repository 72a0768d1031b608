"""The plugin is installed through its entry point and shows its options."""

from __future__ import annotations

import argparse

import pytest


def test_help_shows_the_sglang_group(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(
        ["*SGLang server deployment*", "*--sglang-host=NAME*", "*--sglang-inventory=PATH*"]
    )


def test_plugin_is_registered_by_entry_point(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        def test_registered(pytestconfig):
            assert pytestconfig.pluginmanager.has_plugin("sglang")
        """
    )
    pytester.runpytest().assert_outcomes(passed=1)


def test_host_option_is_repeatable(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        def test_hosts(pytestconfig):
            assert pytestconfig.getoption("sglang_host") == ["a", "b"]
        """
    )
    # hosts are resolved at the start: these two are simulators on this machine
    pytester.path.joinpath("sglang-hosts.toml").write_text(
        '[hosts.a]\nssh = "local"\n[hosts.b]\nssh = "local"\n'
    )
    result = pytester.runpytest("--sglang-host", "a", "--sglang-host", "b")
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize(
    ("arg", "message"),
    [
        ("--sglang-ready-timeout=0", "*--sglang-ready-timeout*must be > 0, got 0*"),
        ("--sglang-ready-timeout=soon", "*--sglang-ready-timeout*not a number: 'soon'*"),
        ("--sglang-rounds=0", "*--sglang-rounds*must be >= 1, got 0*"),
        ("--sglang-rounds=2.5", "*--sglang-rounds*not a whole number: '2.5'*"),
        ("--sglang-baseline-history=0", "*--sglang-baseline-history*must be >= 1, got 0*"),
        ("--sglang-gate-alpha=1", "*--sglang-gate-alpha*between 0 and 1, got 1*"),
        ("--sglang-lock-timeout=nan", "*--sglang-lock-timeout*not a number: 'nan'*"),
        ("--sglang-gate-alpha=nan", "*--sglang-gate-alpha*not a number: 'nan'*"),
    ],
)
def test_bad_option_values_are_one_line_usage_errors(
    pytester: pytest.Pytester, arg: str, message: str
) -> None:
    result = pytester.runpytest(arg)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_one_sided_upper_bound_names_it() -> None:
    from pytest_sglang.options import number

    with pytest.raises(argparse.ArgumentTypeError, match=r"^must be < 1, got 2$"):
        number(float, below=1)("2")
