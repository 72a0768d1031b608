"""``<launcher's python> -c <this file> REQUEST`` on the host: each config parsed and resolved by
the host's own SGLang, as ``launch_server`` does before it logs ``server_args=``, no server
started.

Why a program of its own: the host's SGLang, not a model of it, is the authority on what a
config becomes (:mod:`pytest_sglang.lifecycle.host_resolve`). It imports nothing from the plugin
(it runs in the launcher's Python, where only SGLang is installed), except where the launcher is
the simulator: then the simulator's resolver plays SGLang's (``engine`` ``"simulator"``).

REQUEST is JSON: ``{"format": 1, "engine": "sglang" | "simulator", "configs": [{"key": ...,
"argv": [flags...], "env": {...}}, ...]}``. The answer is ONE stdout line, ``MARKER`` then JSON:
``{"format": 1, "import_s": ..., "mode": "fork" | "inline", "results": {key: {"server_args":
{...}, "log": [...], "seconds": ...} or {"error": "<SGLang's last line>", "type": "ValueError",
"log": [...], "seconds": ...}}}``.

How: SGLang is imported once, with what resolution imports lazily (5-15 s of torch on a GPU
host), then each config runs in a forked child (resolution leaves state behind: environment
variables, caches, a sealed record), so every config starts from the same imported package and
costs a fraction of a second. Where importing already initialised CUDA (a forked child could not
use it), the configs run one after the other in this process instead, the environment put back
between them. Each config's output (what resolution logs, an argparse error, a traceback) goes to
a file whose lines come back; its last line is the error line of a refused config. Values JSON
cannot hold as they are come tagged (``__tuple__``, ``__repr__``).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from typing import Any

FORMAT = 1
MARKER = "PYTEST_SGLANG_RESOLVED "
#: Seconds one config may take (a config that reads a slow model store, a stuck import).
CONFIG_TIMEOUT_S = 120
#: Lines of a config's output that come back (resolution logs a handful).
LOG_LINES = 200


def _plain(value: Any) -> Any:
    """``value`` as JSON, tuples and what JSON cannot hold tagged so they read back as such."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return {"__repr__": repr(value)}
        return value
    if isinstance(value, tuple):
        return {"__tuple__": [_plain(v) for v in value]}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return {"__repr__": repr(value)}


def _resolver(engine: str) -> Callable[[list[str]], dict[str, Any]]:
    """The function that parses and resolves one config's flags, its imports done here."""
    if engine == "simulator":
        from pytest_sglang.sim.resolver import resolve_argv

        return resolve_argv

    import argparse
    import importlib
    import pkgutil

    import sglang.srt.arg_groups  # type: ignore[import-not-found]
    from sglang.srt.server_args import (  # type: ignore[import-not-found]
        ServerArgs,
        prepare_server_args,
    )

    # What parsing and resolve_once import lazily (the hooks, the model-config readers, the
    # parser's choice lists): imported once here, or every forked child would import them again
    # (measured on 0.5.23: 4-6 s a config, against 0.4 s once they are imported).
    for module in pkgutil.walk_packages(
        sglang.srt.arg_groups.__path__, sglang.srt.arg_groups.__name__ + "."
    ):
        # a hook of a platform this host lacks: a config that needs it imports it (or fails) itself
        with contextlib.suppress(Exception):
            importlib.import_module(module.name)
    ServerArgs.add_cli_args(argparse.ArgumentParser())

    def resolve(argv: list[str]) -> dict[str, Any]:
        server_args = prepare_server_args(argv)
        server_args.resolve_once()
        return dict(server_args.resolved_dict())

    return resolve


def _cuda_initialised() -> bool:
    torch = sys.modules.get("torch")
    try:
        return bool(torch is not None and torch.cuda.is_initialized())
    except Exception:
        return False


def _on_alarm(_signum: int, _frame: Any) -> None:
    raise TimeoutError(f"resolution took more than {CONFIG_TIMEOUT_S}s")


def _resolve_one(
    resolve: Callable[[list[str]], dict[str, Any]],
    argv: list[str],
    out_path: str,
) -> dict[str, Any]:
    """Resolve ``argv`` with stdout and stderr in ``out_path``; the answer without its log."""
    saved = (os.dup(1), os.dup(2))
    fd = os.open(out_path, os.O_WRONLY | os.O_TRUNC)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    signal.signal(signal.SIGALRM, _on_alarm)
    signal.alarm(CONFIG_TIMEOUT_S)
    answer: dict[str, Any] = {}
    try:
        answer["server_args"] = _plain(resolve(list(argv)))
    except SystemExit as exc:  # argparse refused the command line (its message is printed)
        answer["type"] = "SystemExit"
        answer["code"] = exc.code if isinstance(exc.code, int) else 1
    except BaseException as exc:  # resolution raised: the traceback as the server prints it
        traceback.print_exc()
        answer["type"] = type(exc).__name__
    finally:
        signal.alarm(0)
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])
    return answer


def _with_log(answer: dict[str, Any], out_path: str) -> dict[str, Any]:
    """The answer with its config's output lines, and the last one as a refusal's error."""
    try:
        with open(out_path, errors="replace") as handle:
            lines = [line.rstrip("\n") for line in handle if line.strip()]
    except OSError:
        lines = []
    answer["log"] = lines[-LOG_LINES:]
    if "server_args" not in answer:
        answer["error"] = lines[-1].strip() if lines else answer.get("type", "no output")
    return answer


def _in_child(
    resolve: Callable[[list[str]], dict[str, Any]],
    config: dict[str, Any],
    out_path: str,
) -> dict[str, Any]:
    """Resolve one config in a forked child; the child's answer, or why it gave none."""
    result_path = _temp("result-")
    sys.stdout.flush()  # what importing printed goes out once, not once more per child
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 0
        try:
            os.environ.update(config.get("env") or {})
            answer = _resolve_one(resolve, config["argv"], out_path)
            with open(result_path, "w") as handle:
                json.dump(answer, handle)
        except BaseException:
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    try:
        with open(result_path) as handle:
            text = handle.read()
    finally:
        os.unlink(result_path)
    if text:
        result: dict[str, Any] = json.loads(text)
        return result
    code = os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else status
    return {"type": "ChildDied", "code": code}


def _inline(
    resolve: Callable[[list[str]], dict[str, Any]],
    config: dict[str, Any],
    out_path: str,
) -> dict[str, Any]:
    """Resolve one config in this process, its environment put back afterwards."""
    before = dict(os.environ)
    os.environ.update(config.get("env") or {})
    try:
        return _resolve_one(resolve, config["argv"], out_path)
    finally:
        os.environ.clear()
        os.environ.update(before)


def _temp(prefix: str) -> str:
    handle, path = tempfile.mkstemp(prefix="pytest-sglang-" + prefix)
    os.close(handle)
    return path


def main(request_text: str) -> dict[str, Any]:
    """Every config of the request resolved; the answer that goes back."""
    request = json.loads(request_text)
    started = time.monotonic()
    resolve = _resolver(str(request.get("engine") or "sglang"))
    import_s = time.monotonic() - started
    run = _inline if _cuda_initialised() or not hasattr(os, "fork") else _in_child
    results: dict[str, Any] = {}
    out_path = _temp("out-")
    try:
        for config in request["configs"]:
            began = time.monotonic()
            answer = _with_log(run(resolve, config, out_path), out_path)
            answer["seconds"] = round(time.monotonic() - began, 3)
            results[str(config["key"])] = answer
    finally:
        os.unlink(out_path)
    return {
        "format": FORMAT,
        "import_s": round(import_s, 3),
        "mode": "inline" if run is _inline else "fork",
        "results": results,
    }


if __name__ == "__main__":
    sys.stdout.write(MARKER + json.dumps(main(sys.argv[1])) + "\n")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # skips tearing down what SGLang imported (~15 s of a 1 GB interpreter)
