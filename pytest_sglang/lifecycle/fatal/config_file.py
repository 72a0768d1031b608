"""The ``--config`` file: a start that fails while SGLang reads it failed on the file.

SGLang 0.5.23 reads ``--config FILE`` (YAML) before its parser sees the command line, and merges
the file's keys into the line ahead of the flags given there
(``sglang/srt/utils/server_args_config_parser.py``). Whatever fails inside that reading is the
file an engineer wrote, never the server: the YAML parser's own errors
(``yaml.scanner.ScannerError``, ``yaml.composer.ComposerError``: a tab, an unclosed quote, two
documents), a folder where the file was meant (``IsADirectoryError``), a root that is no
mapping. Those read *invalid config*, whatever the exception's type. Two of the merger's steps
read flags rather than the file, and what they refuse is *bad flag*, as argparse refusing the
line would be: the command line's own ``--config`` (given twice, or last with no path) and a key
naming a flag the file cannot write (``Unsupported config option ... with action
'BooleanOptionalAction'``: give that flag on the command line).
"""

from __future__ import annotations

from collections.abc import Sequence

from .logged_settings import SGLANG_FRAME

#: The merger's module, by its path below the ``sglang`` package.
MERGER = "srt/utils/server_args_config_parser"
#: The merger's steps that read flags, not the file, and what a refusal there means.
_READS_FLAGS = {
    "_extract_config_file_path": "--config given twice, or without its file",
    "_convert_config_to_args": "a key of the --config file names a flag it cannot hold",
}


def config_file_failing(frames: Sequence[str]) -> tuple[str, str] | None:
    """The cause and a phrase for an exception whose frames (innermost first) run through
    SGLang's reading of the ``--config`` file, or None where they do not."""
    steps = [
        found["func"] for found in map(SGLANG_FRAME.match, frames)
        if found is not None and found["path"] == MERGER
    ]  # fmt: skip
    if not steps:
        return None
    if steps[0] in _READS_FLAGS:
        return "bad flag", _READS_FLAGS[steps[0]]
    return "invalid config", "SGLang could not read the --config file"
