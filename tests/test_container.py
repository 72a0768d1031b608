"""A launcher that runs SGLang in a container: read, kept word for word, asked apart."""

from __future__ import annotations

import pytest

from pytest_sglang.argv_parse import split_launch
from pytest_sglang.container import container_of

_LINE = (
    "/usr/bin/docker run --rm --name sglang --gpus all -v /models:/models -e HF_TOKEN "
    "--ipc=host -p 30000:30000 --shm-size 32g lmsysorg/sglang:v0.5.23 "
    "python3 -m sglang.launch_server --model-path /models/Qwen3-8B --tp-size 2"
)
LINE = _LINE.split()


def test_the_launcher_ends_at_sglangs_entry_point() -> None:
    launcher, flags = split_launch(LINE)
    assert launcher[-3:] == ["python3", "-m", "sglang.launch_server"]
    assert flags == ["--model-path", "/models/Qwen3-8B", "--tp-size", "2"]
    container = container_of(launcher)
    assert container is not None
    assert container.engine == ("/usr/bin/docker", "run")
    assert container.image == "lmsysorg/sglang:v0.5.23"
    assert container.command == ("python3", "-m", "sglang.launch_server")
    assert container.words == launcher


@pytest.mark.parametrize(
    "launcher",
    [
        "podman run --device nvidia.com/gpu=all img:1 python3 -m sglang.launch_server",
        "sudo docker container run --network=host img:1 python3 -m sglang.launch_server",
        "nerdctl run -d --restart always img:1 /opt/venv/bin/python -m sglang.launch_server",
    ],
)
def test_engines_and_their_spellings(launcher: str) -> None:
    container = container_of(launcher.split())
    assert container is not None and container.image == "img:1"
    assert container.command[-2:] == ("-m", "sglang.launch_server")


def test_a_plain_launcher_is_no_container() -> None:
    assert container_of(["/opt/venv/bin/python", "-m", "sglang.launch_server"]) is None
    assert split_launch(["python", "-m", "sglang.launch_server", "--model-path", "/m"]) == (
        ["python", "-m", "sglang.launch_server"],
        ["--model-path", "/m"],
    )


def test_probes_run_a_throwaway_container() -> None:
    container = container_of(split_launch(LINE)[0])
    assert container is not None
    probe = container.probe_words()
    assert probe[:3] == ["/usr/bin/docker", "run", "--rm"]
    assert "--name" not in probe and "-p" not in probe and probe.count("--rm") == 1
    at = probe.index("--shm-size")
    assert probe[at : at + 2] == ["--shm-size", "32g"]
    assert container.python == [*probe[:-3], "python3"]


def test_the_configs_env_is_passed_by_name_once() -> None:
    container = container_of(split_launch(LINE)[0])
    assert container is not None
    words = container.with_env({"HF_TOKEN": "x", "NCCL_DEBUG": "INFO"}).words
    assert words.count("HF_TOKEN") == 1  # production passes it already
    assert words[words.index("lmsysorg/sglang:v0.5.23") - 2 :][:2] == ["-e", "NCCL_DEBUG"]
    assert "INFO" not in words  # the value stays out of the command line
