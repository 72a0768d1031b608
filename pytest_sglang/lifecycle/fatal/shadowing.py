"""A module the server imports, shadowed by a stray file of the same name on the path.

``python -m sglang.launch_server`` puts its working directory first on ``sys.path``: a stray
``json.py`` or ``torch.py`` there (a script's, a clone of a repository's) is imported instead of
the installed module, and the import that follows fails (``cannot import name 'JSONDecodeError'
from 'json' (/srv/wd/json.py)``, ``No module named 'torch.distributed'; 'torch' is not a
package``). The install is sound and the record says where the stray file is: an engineer
removes it or changes the unit's ``WorkingDirectory=`` (or its ``PYTHONPATH``), and the reason
says so.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

#: An import from a module whose file is named, outside any installed or standard location.
_FROM_A_STRAY_FILE = re.compile(
    r"cannot import name '\w+' from '(?P<module>[\w.]+)' \((?P<path>(?![^)]*/(site|dist)-packages/)"
    r"(?![^)]*/lib/python3[.\d]*/)[^)]+\.py)\)"
)
#: A submodule asked of a name that resolved to a single file, not the installed package.
_NOT_A_PACKAGE = re.compile(r"No module named '[\w.]+'; '(?P<module>[\w.]+)' is not a package")
_WHY = (
    "a stray copy earlier on sys.path (the working directory, first under python -m, or"
    " PYTHONPATH): remove it or start elsewhere"
)


def shadowed_module(links: Sequence[str]) -> tuple[str, str] | None:
    """*broken install* and a phrase naming the stray file where an exception of the chain
    (``links``) shows a module shadowed by one; None otherwise."""
    for link in links:
        found = _FROM_A_STRAY_FILE.search(link)
        if found is not None:
            return "broken install", (
                f"{found['path']} shadows the installed {found['module']}: {_WHY}"
            )
        found = _NOT_A_PACKAGE.search(link)
        if found is not None:
            name = found["module"]
            return "broken install", (
                f"{name!r} is a single file, not the installed package: a stray"
                f" {name.replace('.', '/')}.py shadows it ({_WHY})"
            )
    return None
