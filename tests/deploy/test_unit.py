"""The unit and EnvironmentFile renderers: what they write has the strict quoted form, and
reads back exactly (the real systemd reads them back in test_systemd.py)."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from pytest_sglang.cmdline import read_env_file, split_exec_start
from pytest_sglang.errors import ConfigError
from pytest_sglang.lifecycle.unit import render_env_file, render_unit

#: What the writers may produce: every ExecStart= word double-quoted, only ``\\`` and ``"``
#: backslash-escaped, every ``%`` and ``$`` doubled; EnvironmentFile values double-quoted with
#: ``\\ " $ ` `` escaped. The codec's readers (systemd's rules, checked against systemd itself
#: in tests/test_cmdline.py) then say what systemd makes of them.
_QUOTED = r'"(?:[^"\\%$]|\\[\\"]|%%|\$\$)*"'
_EXEC_START = re.compile(rf"{_QUOTED}(?: {_QUOTED})*")
_ENV_LINE = re.compile(r'[A-Za-z_][A-Za-z0-9_]*="(?:[^"\\$`]|\\["\\$`])*"')


def systemd_exec_words(value: str) -> list[str]:
    """ExecStart= value -> argv, as systemd does it, once the value is shown to be written
    the strict way (a missing escape would read back the same through a lenient reader)."""
    assert _EXEC_START.fullmatch(value), value
    (argv,) = split_exec_start(value)
    return argv


def systemd_env_file(text: str) -> dict[str, str]:
    """EnvironmentFile -> variables, once every line is shown to be written the strict way."""
    for line in text.split("\n"):  # systemd cuts at \n (and \r, refused in values) only
        assert not line or line.startswith("#") or _ENV_LINE.fullmatch(line), line
    return read_env_file(text)


def unit_fields(text: str) -> dict[str, list[str]]:
    fields: dict[str, list[str]] = {}
    for line in text.splitlines():
        if "=" in line and not line.startswith("#"):
            key, _, value = line.partition("=")
            fields.setdefault(key, []).append(value)
    return fields


def make_unit(argv: list[str]) -> str:
    return render_unit(
        description="SGLang eagle-s2 (pytest-sglang)",
        exec_argv=argv,
        environment_file="/etc/pytest-sglang/sglang-qwen.env",
        config_id="eagle-s2",
        digest="0123456789ab",
    )


def test_unit_directives() -> None:
    text = make_unit(["/opt/venv/bin/python", "-m", "sglang.launch_server", "--port", "30000"])
    fields = unit_fields(text)
    assert fields["Environment"] == ["PYTHONUNBUFFERED=1"]
    assert fields["EnvironmentFile"] == ["/etc/pytest-sglang/sglang-qwen.env"]
    assert fields["SuccessExitStatus"] == ["SIGKILL"]
    assert fields["KillMode"] == ["mixed"]
    assert fields["TimeoutStopSec"] == ["30"]
    assert fields["Restart"] == ["no"]
    assert fields["StandardOutput"] == fields["StandardError"] == ["journal"]
    assert text.startswith("# Written by pytest-sglang (config eagle-s2, digest 0123456789ab)")
    assert systemd_exec_words(fields["ExecStart"][0])[-2:] == ["--port", "30000"]


def test_special_characters_are_literal() -> None:
    argv = ["/bin/x", "%n", "$HOME", "${X}", 'a"b', "a\\b", "a b", "", "'", "héllo"]
    fields = unit_fields(make_unit(argv))
    assert systemd_exec_words(fields["ExecStart"][0]) == argv


printable = st.text(
    alphabet=st.characters(blacklist_categories=("Cc", "Cs")), min_size=0, max_size=30
)


@given(st.lists(printable.filter(lambda a: a != ";"), max_size=8))
def test_exec_start_round_trip(args: list[str]) -> None:
    argv = ["/opt/venv/bin/python", *args]
    text = make_unit(argv)
    assert len(text.splitlines()) == len(make_unit(["/x"]).splitlines())  # no injected lines
    assert systemd_exec_words(unit_fields(text)["ExecStart"][0]) == argv


@given(
    st.dictionaries(
        st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,10}", fullmatch=True),
        st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cs")) | st.just("\t")),
        max_size=6,
    )
)
@example(env={"A": "\u2028", "B": "x\x85y", "C": "\u2029 "})  # str.splitlines cuts there
def test_env_file_round_trip(env: dict[str, str]) -> None:
    assert systemd_env_file(render_env_file(env)) == env


@pytest.mark.parametrize("bad", ["a\nb", "a\rb", "a\0b", "\x1b[31m", "\x7f"])
def test_control_characters_refused(bad: str) -> None:
    with pytest.raises(ConfigError, match="control character"):
        make_unit(["/bin/x", bad])
    with pytest.raises(ConfigError, match="control character") as info:
        render_env_file({"SECRET": bad})
    assert bad not in str(info.value)  # the value may be a secret: never echoed


def test_refusals() -> None:
    with pytest.raises(ConfigError, match="absolute path"):
        make_unit(["python", "-m", "x"])
    with pytest.raises(ConfigError, match="empty"):
        make_unit([])
    with pytest.raises(ConfigError, match="';'"):
        make_unit(["/bin/x", ";"])
    with pytest.raises(ConfigError, match="not a valid environment variable name"):
        render_env_file({"1BAD": "x"})
    with pytest.raises(ConfigError, match="not a valid environment variable name"):
        render_env_file({"A-B": "x"})
    with pytest.raises(ConfigError, match="Description"):
        render_unit(
            description="a\nExecStartPre=/bin/evil", exec_argv=["/x"], environment_file="/e"
        )


def test_secret_never_in_unit() -> None:
    text = make_unit(["/bin/x"])
    assert "EnvironmentFile=" in text and "HF_TOKEN" not in text
    assert 'HF_TOKEN="hf_abc\\$x"' in render_env_file({"HF_TOKEN": "hf_abc$x"})


def test_the_dropin_resets_execstart_and_owns_only_what_it_must() -> None:
    from pytest_sglang.lifecycle.unit import render_dropin

    text = render_dropin(
        exec_argv=["/usr/bin/python3", "-m", "sglang.launch_server", "--model-path", "/m"],
        environment_file="/etc/pytest-sglang/x.env",
        config_id="eagle-s3",
    )
    lines = text.splitlines()
    assert lines[lines.index("[Service]") + 1] == "ExecStart="  # production's reset first
    assert 'ExecStart="/usr/bin/python3" "-m" "sglang.launch_server"' in text
    assert "Restart=no" in lines and "EnvironmentFile=/etc/pytest-sglang/x.env" in lines
    for production_setting in ("User=", "WorkingDirectory=", "LimitNOFILE=", "Description="):
        assert production_setting not in text  # production's own stay in force


def test_effective_exec_start_follows_systemctl_cat() -> None:
    from pytest_sglang.lifecycle.systemd import _without_our_dropin, effective_exec_start

    cat = (
        "# /etc/systemd/system/s.service\n"
        "[Service]\n"
        "ExecStart=/opt/venv/bin/python -m sglang.launch_server \\\n"
        "    --model-path /m \\\n"
        "    --tp 4\n"
        "# /etc/systemd/system/s.service.d/10-prod.conf\n"
        "[Service]\n"
        "ExecStart=\n"
        "ExecStart=-/opt/venv/bin/python -m sglang.launch_server --model-path '/m 2'\n"
        "# /etc/systemd/system/s.service.d/zz-pytest-sglang.conf\n"
        "[Service]\n"
        "ExecStart=\n"
        'ExecStart="/usr/bin/python3" "--model-path" "/ours"\n'
    )
    assert effective_exec_start(cat) == [
        ["/usr/bin/python3", "--model-path", "/ours"]
    ]  # what systemd runs during a session
    production = effective_exec_start(_without_our_dropin(cat))
    assert production == [
        ["/opt/venv/bin/python", "-m", "sglang.launch_server", "--model-path", "/m 2"]
    ]
    continued = effective_exec_start(cat.split("# /etc/systemd/system/s.service.d")[0])
    assert continued == [
        ["/opt/venv/bin/python", "-m", "sglang.launch_server", "--model-path", "/m", "--tp", "4"]
    ]
    several = "[Service]\nExecStart=/bin/a --model-path x\nExecStart=/bin/b --model-path y\n"
    assert len(effective_exec_start(several)) == 2  # refused by the deployer with one line


def test_the_flag_diff_names_what_changes_against_production() -> None:
    from pytest_sglang.lifecycle.dry_run import render_flag_diff

    production = ["/py", "-m", "s", "--model-path", "/m", "--speculative-num-steps", "2"]
    ours = ["/py", "-m", "s", "--model-path", "/m", "--speculative-num-steps", "3"]
    assert render_flag_diff(production, ours) == (
        "  - --speculative-num-steps 2\n  + --speculative-num-steps 3"
    )
    assert render_flag_diff(production, production) == ""
