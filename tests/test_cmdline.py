"""The command-line codec: each reader is the inverse of its writer, and reads unit text as
systemd does.

The properties run on any argv and any value (``$``, ``%``, quotes, spaces, backslashes,
non-ASCII); control characters are refused when written. The systemd test at the end has the
real systemd run a unit whose ``ExecStart=``, ``Environment=`` and EnvironmentFile hold both
what the codec writes and hand-written spellings (unquoted words, single quotes, C escapes,
``$$``, ``%%``), and compares what the process received with what the codec reads.
"""

from __future__ import annotations

import json
import random
import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_sglang.cmdline import (
    env_file_line,
    flag_groups,
    join_exec_start,
    join_shell,
    quote_environment,
    read_env_file,
    secret_flag_values,
    split_environment,
    split_exec_start,
    split_shell,
    unit_assignments,
)
from pytest_sglang.errors import ConfigError
from pytest_sglang.secrets import REDACTED, Redactor

#: The characters every quoting gets wrong once, then anything printable.
_TRICKY = st.sampled_from([*"$%\"'\\ ;=-{}`#xé中", "\\n", "$$", "%%", "\\x41"])
_PRINTABLE = st.characters(exclude_categories=("Cs", "Cc"))
words = st.lists(st.one_of(_TRICKY, _PRINTABLE), max_size=10).map("".join)
arguments = st.lists(words.filter(lambda w: w != ";"), max_size=8)
executables = st.text(
    st.characters(exclude_categories=("Cs", "Cc"), exclude_characters="\"'\\"), max_size=10
).map(lambda tail: "/" + tail)
env_names = st.from_regex(r"\A[A-Za-z_][A-Za-z0-9_]{0,8}\Z")


@given(executables, arguments)
def test_exec_start_reads_back_exactly_what_it_writes(executable: str, args: list[str]) -> None:
    argv = [executable, *args]
    written = join_exec_start(argv)
    # every $ and % doubled: a lenient reader would read a missing escape back unchanged
    assert "$" not in written.replace("$$", "") and "%" not in written.replace("%%", "")
    assert split_exec_start(written) == [argv]


@given(env_names, words)
def test_environment_reads_back_exactly_what_it_writes(name: str, value: str) -> None:
    assert split_environment(quote_environment(name, value)) == {name: value}


@given(
    st.dictionaries(env_names, st.lists(st.one_of(_TRICKY, _PRINTABLE, st.just("\t"))).map("".join))
)
def test_env_file_reads_back_exactly_what_it_writes(env: dict[str, str]) -> None:
    text = "".join(env_file_line(name, value) + "\n" for name, value in env.items())
    assert read_env_file(text) == env


@given(arguments)
def test_shell_words_read_back_exactly(argv: list[str]) -> None:
    assert split_shell(join_shell(argv)) == argv


@pytest.mark.parametrize("bad", ["a\nb", "a\rb", "\x00", "tab\there", "\x7f"])
def test_control_characters_are_refused_when_written(bad: str) -> None:
    with pytest.raises(ConfigError, match="control character") as exc:
        join_exec_start(["/bin/echo", bad])
    assert bad not in str(exc.value)  # the value may be a secret
    with pytest.raises(ConfigError, match="control character"):
        quote_environment("X", bad)
    if bad != "tab\there":
        with pytest.raises(ConfigError, match="control character"):
            env_file_line("X", bad)


def test_what_cannot_be_an_executable_or_a_word_is_refused() -> None:
    for argv in ([], ["python3"], ['/opt/"x"/python'], ["/bin/echo", ";"]):
        with pytest.raises(ConfigError):
            join_exec_start(argv)


@pytest.mark.parametrize(
    ("value", "argv"),
    [
        (
            '/srv/python -m sglang --api-key "k$$9%%z"',
            ["/srv/python", "-m", "sglang", "--api-key", "k$9%z"],
        ),
        ("/bin/echo k$$9%%z 'a b' \"c d\"", ["/bin/echo", "k$9%z", "a b", "c d"]),
        ("/bin/echo a\"b c\"d 'e'f", ["/bin/echo", "ab cd", "ef"]),
        (r"/bin/echo \x41\101\u00e9 \s \d", ["/bin/echo", "AAé", " ", r"\d"]),
        ("-/bin/echo ${HOME} $HOME %i", ["/bin/echo", "${HOME}", "$HOME", "%i"]),
        (r"/bin/echo a \; b", ["/bin/echo", "a", ";", "b"]),
    ],
)
def test_exec_start_is_read_as_systemd_reads_it(value: str, argv: list[str]) -> None:
    assert split_exec_start(value) == [argv]


def test_a_lone_semicolon_separates_commands_and_bad_quoting_is_one_line() -> None:
    assert split_exec_start("/bin/a x ; /bin/b y") == [["/bin/a", "x"], ["/bin/b", "y"]]
    with pytest.raises(ConfigError, match=r"^unbalanced quoting in a unit setting$"):
        split_exec_start('/bin/echo "k$$9')


def test_environment_and_env_file_are_read_as_systemd_reads_them() -> None:
    assert split_environment('\'A=x y\' B=k$9%%z "C=\\"q\\"" junk') == {
        "A": "x y",
        "B": "k$9%z",
        "C": '"q"',
    }
    text = "# c\nA=plain value\nB='single $x \\n'\nC=\"a\\$b\\\\c\\d\"\nexport D=1\n\n"
    assert read_env_file(text) == {
        "A": "plain value",
        "B": "single $x \\n",
        "C": "a$b\\c\\d",
        "D": "1",
    }


def test_unit_assignments_join_continued_lines() -> None:
    text = "[Service]\n# note\nExecStart=/bin/a \\\n  --x 1 \\\n# skipped\n  --y 2\nUser=me\n"
    assert unit_assignments(text) == [("ExecStart", "/bin/a  --x 1  --y 2"), ("User", "me")]


@given(arguments)
def test_flag_groups_cover_every_word_after_the_first_flag(argv: list[str]) -> None:
    first = next((i for i, w in enumerate(argv) if w.startswith("--")), len(argv))
    assert [w for g in flag_groups(argv) for w in g.words] == argv[first:]


def test_the_redactor_learns_what_the_server_receives_from_a_unit() -> None:
    unit = (
        "[Service]\n"
        'Environment="HF_TOKEN=hf$Tok%%en7" PLAIN=1\n'
        'ExecStart=/srv/python -m sglang --api-key "k$$9%%z" --port 30000\n'
    )
    r = Redactor()
    r.add_unit_text(unit)
    assert r.redact("k$9%z hf$Tok%en7") == f"{REDACTED} {REDACTED}"
    # the unit's own spelling of the key too: a dry run's diff shows it
    assert r.redact(unit) == unit.replace("hf$Tok%%en7", REDACTED).replace("k$$9%%z", REDACTED)
    r.add_env_file_text('SECRET_KEY="a\\$b`c"\n')
    assert r.redact("a$b`c") == REDACTED
    assert secret_flag_values(["--api-key=abcd", "--hf-token", "x"]) == [
        (0, "abcd", True),
        (2, "x", False),
    ]


# -- through systemd itself -----------------------------------------------------------------

SERVICE = "pytest-sglang-codec.service"
UNIT = f"/etc/systemd/system/{SERVICE}"
ENV_FILE = "/run/pytest-sglang-codec.env"
OUT = "/run/pytest-sglang-codec.json"
#: Writes its argv and its CODEC_* environment as JSON.
SCRIPT = (
    "import json, os, sys; json.dump({'argv': sys.argv[1:], 'env': {k: v for k, v in "
    "os.environ.items() if k.startswith('CODEC_')}}, open('" + OUT + "', 'w'))"
)
NASTY = [
    "k$9%z",
    "k$$9%%z",
    "$HOME",
    "${HOME}",
    "%n",
    "%",
    "$",
    "a b",
    "",
    " ",
    "'",
    '"',
    "\\",
    "\\n",
    "\\x41",
    "a\"b'c",
    "é ü 中",
    "--api-key=$x%y",
    ";x",
    "\\;",
    "x;",
]
#: Spelled by hand, as a production unit might be: what the codec reads must be what runs.
#: (No variable reference: its value is the unit's environment, which the codec does not read.)
HAND_WRITTEN = r"""k$$9%%z 'a b' "c d" a"b c"d 'e'f \x41\101 \u00e9 \s \d %% \; 'x;y' "" ''"""


def _random_words(count: int) -> list[str]:
    rng = random.Random(33)
    alphabet = "$%\"' \\;=-{}`#xé中"
    words = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8))) for _ in range(count)]
    return [w for w in words if w != ";"]


def test_unit_values_round_trip_through_systemd(systemd_transport: Any) -> None:
    t = systemd_transport
    python = sys.executable
    argv = [python, "-c", SCRIPT, *NASTY, *_random_words(120)]
    written = join_exec_start(argv)
    env = {f"CODEC_{i}": value for i, value in enumerate(NASTY[:12])}
    file_env = {f"CODEC_F{i}": value for i, value in enumerate([*NASTY, "\ttab"])}
    environment = " ".join(quote_environment(name, value) for name, value in env.items())
    hand_environment = 'CODEC_H1=k$9%%z \'CODEC_H2=a b\' "CODEC_H3=\\"q\\" %%"'
    hand_env_file = "CODEC_G1=plain value\nCODEC_G2='single $x'\nCODEC_G3=\"a\\$b\\\\c\\d\"\n"
    unit_text = (
        "[Service]\nType=oneshot\n"
        f"Environment={environment}\nEnvironment={hand_environment}\n"
        f"EnvironmentFile={ENV_FILE}\n"
    )
    env_text = "".join(env_file_line(k, v) + "\n" for k, v in file_env.items()) + hand_env_file
    received: dict[str, Any] = {}
    try:
        for exec_start in (
            written,
            f'{written[: written.index(" ")]} -c "{SCRIPT}" {HAND_WRITTEN}',
        ):
            t.put(env_text.encode(), ENV_FILE, mode=0o600)
            t.put((unit_text + f"ExecStart={exec_start}\n").encode(), UNIT, mode=0o644)
            t.check_output("systemctl daemon-reload && systemctl start -- %s", SERVICE, timeout=60)
            got = json.loads(t.get(OUT))
            assert [python, "-c", SCRIPT, *got["argv"]] == split_exec_start(exec_start)[0]
            received = got["env"]
    finally:
        t.run("rm -f -- %s %s %s; systemctl daemon-reload", UNIT, ENV_FILE, OUT)
    assert split_exec_start(written) == [argv]
    units = unit_assignments(unit_text)
    expected = {
        k: v
        for key, value in units
        if key == "Environment"
        for k, v in split_environment(value).items()
    }
    expected.update(read_env_file(env_text))
    assert received == expected
    assert {k: received[k] for k in env} == env and {k: received[k] for k in file_env} == file_env
