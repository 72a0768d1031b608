"""SGLang run inside a container: ``docker run``/``podman run ... IMAGE python3 -m
sglang.launch_server --flags``.

Why it needs reading: a production unit whose ``ExecStart=`` starts the container has the
engine's own options (``--gpus``, ``-v``, ``-e``, ``--ipc``, ``--shm-size``, the image) before
SGLang's flags. Everything up to the SGLang entry point is the *launcher* and is kept word for
word (image, mounts, GPU and environment options); only SGLang's flags after it change
(:func:`pytest_sglang.argv_parse.split_launch` splits there). What the plugin adds:

- a config's own ``env`` reaches the server through ``-e NAME`` options (the value stays in the
  unit's ``Environment=`` or the process's environment, never on the command line);
- asking the launcher (``--help``, the version) runs a throwaway container of the same image
  and options, without the production container's ``--name``, published ports, detach or
  restart policy, so it cannot collide with a production container that still runs.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["ENGINES", "LAUNCH_MODULES", "ContainerCommand", "container_of", "launcher_end"]

#: Container engines whose ``run`` is understood.
ENGINES = ("docker", "podman", "nerdctl")
#: Python modules that are SGLang's entry point (the simulator's too): the launcher ends there.
LAUNCH_MODULES = ("sglang.launch_server", "pytest_sglang.sim")
#: ``run`` options that take a value as the next word (when not written ``--opt=value``).
_VALUED = frozenset(
    [
        "-a",
        "--attach",
        "-c",
        "--cpu-shares",
        "--cpus",
        "--cpuset-cpus",
        "--device",
        "--dns",
        "-e",
        "--env",
        "--env-file",
        "--entrypoint",
        "--gpus",
        "-h",
        "--hostname",
        "--ipc",
        "-l",
        "--label",
        "--log-driver",
        "--log-opt",
        "-m",
        "--memory",
        "--mount",
        "--name",
        "--network",
        "--net",
        "-p",
        "--publish",
        "--pid",
        "--platform",
        "--pull",
        "--restart",
        "--runtime",
        "--security-opt",
        "--shm-size",
        "--stop-signal",
        "--stop-timeout",
        "--ulimit",
        "-u",
        "--user",
        "-v",
        "--volume",
        "-w",
        "--workdir",
        "--add-host",
        "--cap-add",
        "--cap-drop",
        "--cgroupns",
        "--group-add",
        "--health-cmd",
        "--init-path",
        "--ip",
        "--memory-swap",
        "--userns",
        "--uts",
        "--volumes-from",
        "--tmpfs",
    ]
)
#: Options of the production container that a throwaway one must not repeat.
_NOT_FOR_PROBES = frozenset(["--name", "-p", "--publish", "-d", "--detach", "--restart"])


def launcher_end(words: Sequence[str]) -> int | None:
    """How many words the launcher has when SGLang's entry point (``-m sglang.launch_server``,
    or a ``launch_server`` script) is named: the words before the first ``--flag`` after it (a
    container engine's ``--options`` come before it). None when the words name no entry point:
    the launcher then ends at the first ``--flag``."""
    for i, word in enumerate(words):
        named = word in LAUNCH_MODULES and i > 0 and words[i - 1] == "-m"
        if named or os.path.basename(word) in ("launch_server", "sglang.launch_server"):
            rest = (j for j in range(i + 1, len(words)) if words[j].startswith("--"))
            return next(rest, len(words))
    return None


@dataclass(frozen=True)
class ContainerCommand:
    """A launcher that runs SGLang in a container: ``engine`` (``docker run``), the engine's
    ``options``, the ``image`` and the ``command`` inside (``python3 -m
    sglang.launch_server``)."""

    engine: tuple[str, ...]
    options: tuple[str, ...]
    image: str
    command: tuple[str, ...]

    @property
    def words(self) -> list[str]:
        return [*self.engine, *self.options, self.image, *self.command]

    def with_env(self, names: Iterable[str]) -> ContainerCommand:
        """The same launcher passing these environment variables into the container by name
        (``-e NAME``: the value comes from the engine's own environment)."""
        passed = {v for flag, v in _pairs(self.options) if flag in ("-e", "--env") and v}
        passed |= {
            flag.split("=", 1)[1] for flag, _ in _pairs(self.options) if flag.startswith("--env=")
        }
        added: list[str] = []
        for name in names:
            if name not in passed and not any(p.startswith(f"{name}=") for p in passed):
                added += ["-e", name]
        return ContainerCommand(self.engine, (*self.options, *added), self.image, self.command)

    def probe_words(self) -> list[str]:
        """A throwaway container of the same image and options (``--rm``, no name, no
        published port, not detached, no restart policy)."""
        kept: list[str] = []
        for flag, value in _pairs(self.options):
            if flag.split("=", 1)[0] in _NOT_FOR_PROBES or flag == "--rm":
                continue
            kept += [flag] if value is None else [flag, value]
        return [*self.engine, "--rm", *kept, self.image, *self.command]

    @property
    def python(self) -> list[str]:
        """The words that run the container's Python (the command's first word)."""
        return [*self.probe_words()[: -len(self.command)], self.command[0]]


def _pairs(options: Sequence[str]) -> list[tuple[str, str | None]]:
    """The options as ``(flag, value)``; value None for a switch or ``--opt=value``."""
    out: list[tuple[str, str | None]] = []
    i = 0
    while i < len(options):
        word = options[i]
        if word in _VALUED and i + 1 < len(options):
            out.append((word, options[i + 1]))
            i += 2
        else:
            out.append((word, None))
            i += 1
    return out


def container_of(launcher: Sequence[str]) -> ContainerCommand | None:
    """The container reading of a launcher (``[sudo] docker run OPTIONS IMAGE COMMAND``),
    None when it does not run one of :data:`ENGINES`."""
    words = list(launcher)
    start = next((i for i, w in enumerate(words) if os.path.basename(w) in ENGINES), None)
    if start is None or start + 1 >= len(words) or words[start + 1] not in ("run", "container"):
        return None
    at = start + 2 if words[start + 1] == "run" else start + 3  # `docker container run`
    engine = tuple(words[:at])
    i = at
    while i < len(words) and words[i].startswith("-"):
        i += 2 if words[i] in _VALUED else 1
    if i >= len(words) - 1:
        return None
    return ContainerCommand(engine, tuple(words[at:i]), words[i], tuple(words[i + 1 :]))
