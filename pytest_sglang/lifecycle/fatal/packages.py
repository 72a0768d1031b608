"""A package a chosen setting needs, missing: the config's, not the install's.

SGLang installs what every start needs (``torch``, ``sgl_kernel``, ``flashinfer``, ...); a
package it does not install is an extra that only some settings reach for (``bitsandbytes`` for
that load format or quantization, ``runai_model_streamer`` for ``runai_streamer``, ``flexkv`` for
``--enable-flexkv``). When one of those is missing, the host still serves every config that does
not choose it: an engineer reads the failure as the setting's (choose another value, or install
the extra for it), not as a broken install, which a package SGLang installs itself being missing
or unloadable still is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from functools import cache
from importlib import resources

from ...versions import CATALOG_VERSION
from .lines import words_of
from .logged_settings import FLAG_SAID, _last_logged_args, chooses_something

#: The release whose requirements :func:`sglang_installs` lists, a resource of this package.
REQUIREMENTS = f"data/sglang_requirements_{CATALOG_VERSION}.json"


@cache
def sglang_installs() -> frozenset[str]:
    """The top-level modules SGLang's own requirements install (:data:`REQUIREMENTS`: each
    requirement no extra and no unmet environment marker guards, and theirs in turn, by the
    modules each distribution provides, as the release's metadata lists them)."""
    text = resources.files("pytest_sglang").joinpath(REQUIREMENTS).read_text()
    return frozenset(json.loads(text)["modules"])


#: A package named as missing, in the words SGLang and its libraries use: ``No module named
#: 'runai_model_streamer'``, ``Please install bitsandbytes>=0.44.0``, ``The fastokens package is
#: required``, ``FlexKV is not installed``, ``requires the `hpc` package``.
_MISSING_PACKAGE = re.compile(
    r"No module named '(?P<module>[\w.]+)'"
    r"|[Pp]lease install (the )?`?(?P<install>[A-Za-z][\w-]*)"
    r"|\b(?P<required>[A-Za-z][\w-]*)`? package is required"
    r"|\b(?P<absent>[A-Za-z][\w-]*) is not installed"
    r"|requires the `?(?P<requires>[A-Za-z][\w-]*)`? package"
)


def missing_package(exception: str) -> str | None:
    """The top-level name of the package ``exception`` says is missing; None when it says none."""
    found = _MISSING_PACKAGE.search(exception)
    if found is None:
        return None
    name = next(group for group in found.groupdict().values() if group)
    return name.split(".")[0].lower().replace("-", "_")


def _setting_naming(args: dict[str, object], package: str, exception: str) -> str | None:
    """The logged setting that asked for ``package``: one the exception names as a flag
    (``--enable-flexkv``, ``--tokenizer-backend=fastokens``), else a chosen value or a switch
    turned on whose first word is the package's (``runai_streamer`` for
    ``runai_model_streamer``, ``enable_flexkv`` for ``flexkv``)."""
    for found in FLAG_SAID.finditer(exception):
        name = found["name"].replace("-", "_")
        if name in args and args[name] not in (None, False, ""):
            return f"{name}={args[name]!r}"
    first = words_of(package)[0]
    for name, value in args.items():
        if chooses_something(value):
            if words_of(str(value))[:1] == [first]:
                return f"{name}={value!r}"
        elif value is True and first in words_of(name):
            return f"{name}=True"
    return None


def _flag_requiring(package: str, chained: Sequence[str]) -> str | None:
    """The flag an exception of the chain says needs ``package`` (``ValueError: --enable-http2
    requires the 'granian' package``, raised while handling the import's failure): SGLang's own
    word that the flag was given, read where no ``server_args`` dump was logged yet."""
    for line in chained:
        flag = FLAG_SAID.search(line)
        if flag is not None and package in words_of(line):
            return flag[0]
    return None


#: One of SGLang's own environment variables, as a message names it (``SGLANG_USE_MLX``).
_VARIABLE_SAID = re.compile(r"\bSGLANG_[A-Z0-9_]+\b")


def _variable_requiring(package: str, said: Sequence[str]) -> str | None:
    """The SGLang environment variable a message says needs ``package`` (``SGLANG_USE_MLX
    requires ... MLX >= 0.32.0, but MLX is not installed``): a setting given in the service's
    environment, which no ``server_args`` dump shows."""
    for line in said:
        variable = _VARIABLE_SAID.search(line)
        if variable is not None and package in words_of(line):
            return variable[0]
    return None


def package_a_setting_needs(
    texts: Sequence[str], exception: str, chained: Sequence[str] = ()
) -> str | None:
    """The logged setting whose extra package ``exception`` says is missing, said in one phrase
    (``load_format='runai_streamer' needs the package 'runai_model_streamer', which SGLang does
    not install``), or the flag another exception of its chain (``chained``) or the SGLang
    environment variable it or its chain names says needs it; None for a package SGLang installs
    itself, or one no setting, flag nor variable names."""
    package = missing_package(exception)
    installed = sglang_installs()
    if package is None or package in installed or words_of(package)[0] in installed:
        return None
    setting = _setting_naming(_last_logged_args(texts), package, exception)
    setting = (
        setting
        or _flag_requiring(package, chained)
        or _variable_requiring(package, [exception, *chained])
    )
    if setting is None:
        return None
    return f"{setting} needs the package {package!r}, which SGLang does not install"
