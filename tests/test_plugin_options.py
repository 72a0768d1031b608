"""The plugin is installed through its entry point and shows its options."""

from __future__ import annotations

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
    result = pytester.runpytest("--sglang-host", "a", "--sglang-host", "b")
    result.assert_outcomes(passed=1)
