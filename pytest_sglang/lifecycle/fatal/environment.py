"""The process's environment: a variable the interpreter or a library reads, refused.

A unit's ``Environment=`` lines (a config's ``env``) reach every library the server imports, and
some refuse a value they cannot read as they are imported, before SGLang logs a line: Python
itself (``Fatal Python error: config_init_hash_seed: PYTHONHASHSEED must be ...``), Hugging
Face's hub (``int(os.environ.get("HF_HUB_DOWNLOAD_TIMEOUT"))``), torch (``TORCH_LOGS``, the
inductor's threads and its cache directory, ``PYTORCH_CUDA_ALLOC_CONF`` read by its C++ side as
its CUDA library loads). An engineer reads those as the environment set wrong, the config's,
not the install broken, though they fail inside a library's import: the variable is named where
the record shows it, its value never (an environment can hold a credential).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .tracebacks import innermost_calls

#: Python's interpreter refusing its own configuration as it starts, before any code runs
#: (``config_init_hash_seed``, ``preconfig_init_allocator``), or the stdio encoding
#: ``PYTHONIOENCODING`` names.
_INTERPRETER_REFUSED = re.compile(
    r"^Fatal Python error: (?P<step>(pre)?config_\w+|init_stdio_encoding): "
)
_PYTHON_VARIABLE = re.compile(r"\bPYTHON[A-Z]+\b")
#: A value refused as a type reads it.
_VALUE_REFUSED = re.compile(r"^([\w.]+\.)?(ValueError|TypeError|LookupError): ")
#: Code reading the environment: a statement (``os.environ.get("X")``, ``os.getenv('X')``,
#: ``os.environ["X"]``) or a function named for it (``_update_log_state_from_env``).
_READS_ENVIRONMENT = re.compile(r"\b(os\.)?(environ\b|getenv\()")
_NAMED = re.compile(r"""(?:environ(?:\.get)?[\[(]|getenv\()\s*["'](?P<name>[A-Z][A-Z0-9_]*)["']""")
_ENV_WORD = re.compile(r"(^|_)env(_|$)")
#: A directory made where the environment points (``os.makedirs`` under a ``cache_dir``
#: function) refused for a path no process can create or write (not a full disk: its own cause).
_NOT_CREATED = re.compile(r"^(FileNotFoundError|PermissionError|OSError): \[Errno (2|13|30)\] ")
_DIRECTORY_WORDS = re.compile(r"(?i)cache|home|\btmp|\btemp")
#: torch's allocator settings (``PYTORCH_CUDA_ALLOC_CONF``) refused by its C++ side.
_ALLOCATOR_CONFIG = re.compile(
    r"AllocatorConfig\.h|ConfigTokenizer|Unrecognized CachingAllocator option"
)


def environment_refused(
    texts: Sequence[str], index: int, frames: Sequence[str]
) -> tuple[str, str] | None:
    """*invalid config* and what of the environment the exception on ``index`` (its
    traceback's ``frames``, innermost first) refused, said in a phrase; None where it refused
    nothing of it. The config's, since a config's ``env`` (a unit's ``Environment=`` lines) is
    what sets it, however deep in a library's import it is refused."""
    refused = _what_was_refused(texts, index, frames)
    return None if refused is None else ("invalid config", refused)


def _what_was_refused(texts: Sequence[str], index: int, frames: Sequence[str]) -> str | None:
    line = texts[index]
    interpreter = _INTERPRETER_REFUSED.match(line)
    if interpreter is not None:
        if interpreter["step"] == "init_stdio_encoding":
            return "Python refused the environment's PYTHONIOENCODING"
        variable = _PYTHON_VARIABLE.search(line)
        return f"Python refused the environment's {variable.group(0) if variable else 'settings'}"
    if line.startswith("terminate called after throwing") and any(
        _ALLOCATOR_CONFIG.search(text) for text in texts[index + 1 : index + 3]
    ):
        return "torch refused the environment's PYTORCH_CUDA_ALLOC_CONF"
    innermost = innermost_calls(frames, 2)
    if _VALUE_REFUSED.match(line) and any(_reads_environment(*call) for call in innermost):
        named = (found["name"] for _, code in innermost if (found := _NAMED.search(code)))
        return f"a library refused the environment's {next(named, 'variable')}"
    if _NOT_CREATED.match(line) and any(
        func == "makedirs" or "mkdir" in code for func, code in innermost[:1]
    ):
        outer = innermost_calls([f for f in frames if "<frozen os>" not in f], 2)
        if any(_DIRECTORY_WORDS.search(func + code) for func, code in outer):
            return "a directory the environment names cannot be created"
    return None


def _reads_environment(function: str, code: str) -> bool:
    return bool(_READS_ENVIRONMENT.search(code) or _ENV_WORD.search(function.lower()))
