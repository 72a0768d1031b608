"""ServerConfig.from_argv: a launch command line read back, round-tripped on the real catalog.

The oracle for "means the same" is argparse itself: the simulator's parser is rebuilt from the
real 0.5.23 ``launch_server`` catalog (``pytest_sglang.sim.cli``), so a command line and the one
``to_argv`` writes back must parse there to the same namespace.
"""

from __future__ import annotations

import json
import random
import shlex
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from helpers import SEED_FIELDS
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_sglang import ConfigError, ServerConfig
from pytest_sglang.argv_parse import human_readable_int, read_launch, split_flags, split_launch
from pytest_sglang.config import DESTRUCTIVE_FLAGS, SGLANG_FIELDS, _typed_flags
from pytest_sglang.sim.cli import parse_args
from pytest_sglang.versions import SIMULATED_VERSIONS, cli_catalog, field_flag

DATA = Path(__file__).parent / "data"
SEED_ARGV: list[str] = json.loads((DATA / "server_args_argv_seed_eagle_steps2.json").read_text())
PYTHON_LAUNCHER = ["/opt/venv/bin/python3", "-m", "sglang.launch_server"]

#: A value for every typed field, in SGLANG_FIELDS order (to_argv's order).
EVERY_TYPED: dict[str, Any] = dict(
    zip(
        SGLANG_FIELDS,
        [
            *("/models/Llama-3.1-8B-Instruct", "llama", "0.0.0.0", 30001, 2, 0.85),
            *(32, 32768, -1, "flashinfer", "fp8_e4m3", "fp8", 64),
            *("EAGLE3", "/models/EAGLE3-LLaMA3.1-Instruct-8B", 3, 4, 16),
        ],
        strict=True,
    )
)
TYPED_DESTS = {*SGLANG_FIELDS, "cuda_graph_max_bs_decode"}
#: Flags a config refuses whatever their value (:data:`~pytest_sglang.config.DESTRUCTIVE_FLAGS`,
#: the host's files): every other flag of the catalog round-trips.
REFUSED = [arg for arg in cli_catalog() if set(arg["flags"]) & set(DESTRUCTIVE_FLAGS)]
UNTYPED = [arg for arg in cli_catalog() if arg["dest"] not in TYPED_DESTS and arg not in REFUSED]
_VALUES = {
    "int": "3",
    "float": "0.5",
    "human_readable_int": "2k",
    "loads": '{"k": 1}',
    "json_list_type": '["a"]',
    # real 0.5.23 accepts only its phases and their keys here (tests/data/conformance tricky)
    "parse_cuda_graph_config_arg": '{"decode": {"max_bs": 8}}',
}


def sample_words(arg: dict[str, Any], variant: int = 0) -> list[str]:
    """``arg`` of the catalog as a command line would give it, with representative values."""
    flags = arg["flags"]
    if arg["action"] == "BooleanOptionalAction":
        return [flags[variant % 2]]  # --x, or --no-x
    flag = flags[variant % len(flags)]
    if arg["nargs"] == 0:
        return [flag]
    choices = arg["choices"]

    def value(i: int) -> str:
        if choices:
            return str(choices[(variant + i) % len(choices)])
        return _VALUES.get(arg["type"], f"v{i}-{arg['dest']}")

    count = 2 if arg["nargs"] in ("+", "*") else 1
    return [flag, *(value(i) for i in range(count))]


def grouped(argv: list[str]) -> Counter[tuple[str, tuple[str, ...]]]:
    """The multiset of (flag, values) of a command line; ``--flag=v`` counts as ``--flag v``."""
    groups: list[list[str]] = []
    for word in argv:
        if word.startswith("--"):
            flag, eq, inline = word.partition("=")
            groups.append([flag, inline] if eq else [flag])
        else:
            groups[-1].append(word)
    return Counter((g[0], tuple(g[1:])) for g in groups)


def oracle(argv: list[str], version: str = "0.5.23") -> dict[str, Any]:
    """What argparse with the real launch_server flags makes of ``argv``."""
    return parse_args(argv, version)


def one_line_error(argv: list[str] | str, version: str = "0.5.23") -> str:
    with pytest.raises(ConfigError) as info:
        ServerConfig.from_argv(argv, version)
    message = str(info.value)
    assert "\n" not in message
    return message


# -- the launcher ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "launcher",
    [
        PYTHON_LAUNCHER,
        ["python", "-m", "sglang.launch_server"],
        ["sglang", "serve"],
        ["/usr/bin/env", "NCCL_P2P_DISABLE=1", "python3", "-m", "sglang.launch_server"],
        ["python3", "-m", "sglang.launch_server", "stray-positional"],
        [],
    ],
)
def test_the_launcher_is_every_word_before_the_first_flag(launcher: list[str]) -> None:
    assert split_launch([*launcher, *SEED_ARGV]) == (launcher, SEED_ARGV)
    assert read_launch([*launcher, *SEED_ARGV], _typed_flags()).launcher == tuple(launcher)
    assert ServerConfig.from_argv([*launcher, *SEED_ARGV]) == ServerConfig.from_argv(SEED_ARGV)


def test_the_seeds_production_line_reads_as_the_seed_config() -> None:
    execstart = ["/usr/bin/python3", "-m", "sglang.launch_server", *SEED_ARGV]
    line = read_launch(execstart, _typed_flags())
    config = ServerConfig.from_argv(execstart)

    assert config == ServerConfig(**SEED_FIELDS, host="0.0.0.0", port=30000)
    assert config.extra_args == ()
    assert line.launcher == ("/usr/bin/python3", "-m", "sglang.launch_server")
    assert line.notes == ("--tp read as --tp-size (argparse abbreviation)",)
    # The seed's `--tp 4` comes back spelled out, meaning the same to SGLang's parser.
    assert ("--tp-size", ("4",)) in grouped(config.to_argv())
    assert oracle(config.to_argv()) == oracle(SEED_ARGV)
    # "Production, with --speculative-num-steps 3": one flag differs.
    changed = config.replace(speculative_num_steps=3).to_argv()
    assert grouped(changed) - grouped(config.to_argv()) == Counter(
        {("--speculative-num-steps", ("3",)): 1}
    )


def test_a_whole_command_line_string_is_split_as_a_shell_would() -> None:
    text = "python3 -m sglang.launch_server " + shlex.join(SEED_ARGV)
    assert ServerConfig.from_argv(text) == ServerConfig.from_argv(SEED_ARGV)


# -- typed fields ----------------------------------------------------------------------------


def test_every_typed_field_takes_exactly_one_value_in_the_catalog() -> None:
    """read_launch gives a typed field the one word after its flag: true of every such flag."""
    for arg in cli_catalog():
        if arg["dest"] in TYPED_DESTS:
            assert (arg["action"], arg["nargs"]) == ("_StoreAction", None), arg


@pytest.mark.parametrize("version", ["0.5.12", *SIMULATED_VERSIONS])
def test_every_typed_field_round_trips_exactly_in_each_version(version: str) -> None:
    config = ServerConfig(**EVERY_TYPED)
    argv = config.to_argv(version)
    assert len(argv) == 2 * len(SGLANG_FIELDS)

    back = ServerConfig.from_argv(argv, version)

    assert back == config
    assert back.tuned() == EVERY_TYPED
    assert back.to_argv(version) == argv


@pytest.mark.parametrize(("spelling", "field"), sorted(_typed_flags().items()))
def test_every_spelling_of_a_typed_flag_sets_its_field(spelling: str, field: str) -> None:
    config = ServerConfig(**EVERY_TYPED)
    argv = config.to_argv()
    argv[argv.index(field_flag(field))] = spelling
    assert ServerConfig.from_argv(argv) == config


@pytest.mark.parametrize(
    ("words", "field", "value"),
    [
        (["--tp-size=4"], "tp_size", 4),
        (["--tp=4"], "tp_size", 4),
        (["--tensor-parallel", "4"], "tp_size", 4),
        (["--mem-fraction-static=0.85"], "mem_fraction_static", 0.85),
        (
            ["--speculative-algorithm=EAGLE3", "--speculative-draft-model=/d"],
            "speculative_draft_model_path",
            "/d",
        ),
        (["--served-model-name=a=b"], "served_model_name", "a=b"),
        (["--chunked-prefill-size", "-1"], "chunked_prefill_size", -1),
        (["--context-length=32k"], "context_length", 32000),
        (["--context-length", "25.6k"], "context_length", 25600),
        (["--context-length", "128Ki"], "context_length", 131072),
        (["--context-length", "1Mi"], "context_length", 1048576),
        (["--quantization", "fp8"], "quantization", "fp8"),
    ],
)
def test_typed_values_are_typed_as_argparse_would(
    words: list[str], field: str, value: object
) -> None:
    config = ServerConfig.from_argv(["--model-path", "/m", *words])
    assert getattr(config, field) == value
    assert type(getattr(config, field)) is type(value)
    if not words[-1].endswith("i"):  # the simulator's parser knows SI suffixes only
        assert oracle(["--model-path", "/m", *words])[field] == value
    assert config.extra_args == ()


def test_speculative_algorithm_is_typed_as_the_literal() -> None:
    config = ServerConfig.from_argv([*SEED_ARGV, "--speculative-algorithm", "NEXTN"])
    assert config.speculative_algorithm == "NEXTN"


def test_human_readable_int_follows_sglangs_help_text() -> None:
    assert [human_readable_int(t) for t in ("32768", "1k", "1M", "25.6k", "1Ki", "1Mi")] == [
        32768,
        1000,
        1000000,
        25600,
        1024,
        1048576,
    ]
    for bad in ("32K", "1.5Ki", "0.0001k", "k", "", "abc"):
        with pytest.raises(ValueError):
            human_readable_int(bad)


def test_a_repeated_typed_flag_last_wins_with_a_note() -> None:
    argv = [*SEED_ARGV, "--speculative-num-steps", "3", "--tp-size=2"]
    line = read_launch(argv, _typed_flags())
    config = ServerConfig.from_argv(argv)

    assert (config.speculative_num_steps, config.tp_size) == (3, 2)
    assert oracle(argv)["speculative_num_steps"] == 3
    assert oracle(argv)["tp_size"] == 2
    assert "speculative_num_steps given 2 times (2, 3); the last wins, as in argparse" in line.notes
    assert "tp_size given 2 times (4, 2); the last wins, as in argparse" in line.notes


def test_a_renamed_flag_is_read_in_any_release_with_a_note_where_misspelled() -> None:
    old = ["--model-path", "/m", "--cuda-graph-max-bs", "8"]
    assert ServerConfig.from_argv(old, "0.5.12").to_argv("0.5.12") == old
    assert read_launch(old, _typed_flags(), "0.5.12").notes == ()

    line = read_launch(old, _typed_flags(), "0.5.23")
    assert line.fields["cuda_graph_max_bs"] == "8"
    assert line.notes == (
        "--cuda-graph-max-bs is spelled --cuda-graph-max-bs-decode in SGLang 0.5.23",
    )
    assert ServerConfig.from_argv(old).to_argv() == [
        "--model-path",
        "/m",
        "--cuda-graph-max-bs-decode",
        "8",
    ]


# -- other flags: verbatim, in order ---------------------------------------------------------


def test_split_flags_gives_each_flag_the_words_the_catalog_says_it_takes() -> None:
    argv = [
        "--enable-metrics",
        "stray",
        "--cuda-graph-bs-decode",
        "1",
        "2",
        "4",
        "--lora-paths",
        "a=/p/a",
        "b",
        "--model-checksum",
        "--my-flag",
        "x",
        "y",
        "--dtype=half",
        "z",
        "--no-enable-tf32-matmul",
    ]
    got = [(g.flag, g.values, g.stray, g.resolved) for g in split_flags(argv)]
    assert got == [
        ("--enable-metrics", (), ("stray",), "--enable-metrics"),
        ("--cuda-graph-bs-decode", ("1", "2", "4"), (), "--cuda-graph-bs-decode"),
        ("--lora-paths", ("a=/p/a", "b"), (), "--lora-paths"),
        ("--model-checksum", (), (), "--model-checksum"),
        ("--my-flag", ("x", "y"), (), None),
        ("--dtype", ("half",), ("z",), "--dtype"),
        ("--no-enable-tf32-matmul", (), (), "--no-enable-tf32-matmul"),
    ]
    assert [w for g in split_flags(argv) for w in g.words] == argv
    leading = split_flags(["junk", "--enable-metrics"])[0]
    assert (leading.flag, leading.values, leading.stray) == ("", (), ("junk",))


def test_unknown_and_untyped_flags_are_kept_verbatim_in_order() -> None:
    tail = [
        "--my-plugin-flag",
        "a",
        "b",
        "--enable-metrics",
        "--enable-metr",
        "--enable-metrics-for-all",
        "--cuda-graph-bs-decode",
        "1",
        "2",
        "4",
        "--lora-paths",
        "x=/p/x",
        "y=/p/y",
        "--log-level=debug",
        "--no-enable-tf32-matmul",
        "--cuda-graph-bs-decode",
        "8",
        "--future-flag",
    ]
    argv = ["--port", "1", *tail[:3], *SEED_ARGV, *tail[3:]]
    line = read_launch(argv, _typed_flags())
    config = ServerConfig.from_argv(argv)

    assert config.extra_args == tuple(tail)
    assert config.port == 30000  # the seed's --port comes later: last wins
    assert (
        "--enable-metrics-for-all read as --enable-metrics-for-all-schedulers "
        "(argparse abbreviation)"
    ) in line.notes
    assert (
        "--enable-metr is ambiguous: it begins --enable-metrics, "
        "--enable-metrics-for-all-schedulers: SGLang refuses it"
    ) in line.notes
    assert ServerConfig.from_argv(config.to_argv()) == config


def test_a_stray_word_after_an_untyped_flag_stays_where_it_was_with_a_note() -> None:
    argv = [*SEED_ARGV, "--enable-metrics", "yes"]
    line = read_launch(argv, _typed_flags())
    assert line.extra_args == ("--enable-metrics", "yes")
    assert "yes after --enable-metrics: SGLang refuses it" in line.notes


# -- the whole real catalog ------------------------------------------------------------------


def catalog_argv(seed: int) -> tuple[list[str], list[str]]:
    """Every argument of the 0.5.23 catalog, with values, in a shuffled order; and the words
    of the untyped ones in that order."""
    groups = [(False, sample_words(arg, seed + i)) for i, arg in enumerate(UNTYPED)]
    typed = ServerConfig(**EVERY_TYPED).to_argv()
    groups += [(True, typed[i : i + 2]) for i in range(0, len(typed), 2)]
    random.Random(seed).shuffle(groups)
    argv = [w for _, words in groups for w in words]
    return argv, [w for is_typed, words in groups if not is_typed for w in words]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_flag_of_the_real_catalog_round_trips(seed: int) -> None:
    argv, untyped_words = catalog_argv(seed)
    assert len(grouped(argv)) == len(cli_catalog()) - len(REFUSED)

    config = ServerConfig.from_argv(argv)
    again = config.to_argv()

    assert config.tuned() == EVERY_TYPED
    assert config.extra_args == tuple(untyped_words)
    assert grouped(again) == grouped(argv)
    assert ServerConfig.from_argv(again) == config
    assert oracle(again) == oracle(argv)


# A pool of typed flags in their spellings, two values each; any subset is a valid config.
TYPED_POOL: list[tuple[list[str], list[str]]] = [
    (["--served-model-name"], ["a", "b"]),
    (["--host"], ["0.0.0.0", "127.0.0.1"]),
    (["--port"], ["30000", "30001"]),
    (["--tp-size", "--tensor-parallel-size", "--tp"], ["1", "4"]),
    (["--mem-fraction-static"], ["0.8", "0.85"]),
    (["--max-running-requests"], ["16", "32"]),
    (["--context-length"], ["32768", "32k"]),
    (["--chunked-prefill-size"], ["-1", "8192"]),
    (["--attention-backend"], ["fa3", "flashinfer"]),
    (["--kv-cache-dtype"], ["auto", "fp8_e4m3"]),
    (["--quantization"], ["fp8", "awq"]),
    (["--cuda-graph-max-bs-decode"], ["8", "64"]),
]
SPECULATIVE = [
    ["--speculative-algorithm", "EAGLE"],
    ["--speculative-eagle-topk", "1"],
    ["--speculative-num-steps", "2"],
    ["--speculative-num-steps", "3"],
    ["--speculative-draft-model", "/d"],
]


@st.composite
def command_lines(draw: st.DrawFn) -> list[str]:
    groups: list[list[str]] = [[draw(st.sampled_from(["--model-path", "--model"])), "/m"]]
    for arg in draw(st.lists(st.sampled_from(UNTYPED), max_size=25)):
        words = sample_words(arg, draw(st.integers(0, 3)))
        if len(words) == 2 and arg["nargs"] in (None, "?") and draw(st.booleans()):
            words = [f"{words[0]}={words[1]}"]
        groups.append(words)
    for flags, values in draw(st.lists(st.sampled_from(TYPED_POOL), max_size=12)):
        flag, value = draw(st.sampled_from(flags)), draw(st.sampled_from(values))
        groups.append([f"{flag}={value}"] if draw(st.booleans()) else [flag, value])
    if draw(st.booleans()):
        groups += SPECULATIVE[: draw(st.integers(3, 5))]
    return [w for g in draw(st.permutations(groups)) for w in g]


@settings(max_examples=60, deadline=None)
@given(command_lines())
def test_any_command_line_means_the_same_after_a_round_trip(argv: list[str]) -> None:
    config = ServerConfig.from_argv(argv)
    again = config.to_argv()
    untyped = [g for g in split_flags(argv, _typed_flags()) if g.resolved not in _typed_flags()]

    assert config.extra_args == tuple(w for g in untyped for w in g.words)
    assert ServerConfig.from_argv(again) == config
    assert oracle(again) == oracle(argv)


# -- bad input: one line ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["vllm", "serve", "/models/x", "--port", "8000"],
        ["python3", "-m", "sglang.launch_server", "--port", "30000", "--tp", "4"],
        ["python3", "-m", "sglang.launch_server"],
        [],
        "",
    ],
)
def test_a_command_line_without_model_path_is_not_an_sglang_launch(
    argv: list[str] | str,
) -> None:
    assert one_line_error(argv).startswith("not an SGLang launch: no --model-path flag in ")


def test_the_not_an_sglang_launch_error_names_the_launcher_and_flags_not_values() -> None:
    message = one_line_error(["vllm", "serve", "/models/x", "--api-key", "sk-secret123"])
    assert message == (
        "not an SGLang launch: no --model-path flag in 'vllm serve /models/x' "
        "(flags: --api-key); give the command line of sglang.launch_server"
    )


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--model-path"], "--model-path (model_path) takes one value: '--model-path'"),
        (["--model-path", "/m", "--port"], "--port (port) takes one value: '--port'"),
        (["--model-path", "/m", "--port", "1", "junk"], "--port (port) takes one value"),
        (["--model-path", "/m", "--speculative-num", "3"], "--speculative-num is ambiguous"),
        (["--model-path", "/m", "--port", "abc"], "port: "),
        (["--model-path", "/m", "--context-length", "32K"], "--context-length (context_length): "),
        (["--model-path", "/m", "--speculative-num-steps", "3"], "speculative_algorithm is not"),
    ],
)
def test_bad_typed_flags_are_one_line_errors(argv: list[str], expected: str) -> None:
    assert expected in one_line_error(argv)


def test_a_bad_version_or_unbalanced_quote_is_a_one_line_error() -> None:
    assert "not an SGLang version" in one_line_error(SEED_ARGV, "latest")
    assert "No closing quotation" in one_line_error("python -m sglang.launch_server --model 'x")
