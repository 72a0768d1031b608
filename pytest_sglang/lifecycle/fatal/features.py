"""The features a start's logged settings turned on, and a failure raised in one's own code.

An engineer who turned a feature on and sees the start die inside that feature's code (in
``sglang/srt/kv_canary/`` with ``--kv-canary log``, in ``state_capturer/routed_experts.py``
with ``--enable-return-routed-experts``) reads the failure as the feature not fitting this
machine or model: the config's, fixed by leaving the feature off, whatever the exception's own
words. A setting turns a feature on where the logged ``server_args`` differ from SGLang's
default in its flag catalog: a switch on, a choice other than its default (``none``, ``auto``
and the empty value turn nothing on). Its code is an SGLang package or module whose name, of
two words or more, is a run of the setting's name (``kv_canary`` in ``kv_canary``,
``routed_experts`` in ``enable_return_routed_experts``); a one-word name (``lora``,
``speculative``, ``managers``) says too little to tell whose code it is. A value chosen names
its code as well: SGLang's module for a choice is named after the value, or its family without
the version (``deepseek_recipe_renderer.py`` for ``--tool-call-parser deepseekv41``).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

from ...versions import cli_catalog
from .lines import words_of
from .logged_settings import (
    SGLANG_FRAME,
    _last_logged_args,
    _module_words,
    _names_choice,
    chooses_something,
)


@cache
def _switches_and_choices() -> dict[str, tuple[bool, object]]:
    """Each switch's and each choice flag's destination in SGLang's flag catalog: whether it is
    a switch, and its default."""
    kinds: dict[str, tuple[bool, object]] = {}
    for arg in cli_catalog():
        if arg["action"] == "_StoreTrueAction":
            kinds[arg["dest"]] = (True, arg["default"])
        elif arg["choices"]:
            kinds[arg["dest"]] = (False, arg["default"])
    return kinds


def settings_turned_on(texts: Sequence[str]) -> dict[str, object]:
    """The logged settings that turn something on: a switch on that is off by default, a
    choice other than its default and other than one that chooses nothing; empty without a
    readable ``server_args`` dump."""
    args = _last_logged_args(texts)
    kinds = _switches_and_choices()
    on: dict[str, object] = {}
    for name, value in args.items():
        if name not in kinds:
            continue
        switch, default = kinds[name]
        if switch:
            turned_on = value is True and default is not True
        else:
            turned_on = value != default and chooses_something(value)
        if turned_on:
            on[name] = value
    return on


def _code_names(frame: str) -> list[list[str]]:
    """The words of each package and module name of an SGLang frame's path that has two words
    or more (``srt/kv_canary/runner/canary_manager.py`` -> [kv, canary], [canary, manager])."""
    found = SGLANG_FRAME.match(frame)
    if found is None:
        return []
    return [words for part in found["path"].split("/") if len(words := words_of(part)) >= 2]


def feature_failing(texts: Sequence[str], frames: Sequence[str]) -> str | None:
    """The setting, said as ``name=value``, that turned on the feature in whose own code the
    failure was raised (``frames``, innermost first: the innermost feature's wins); None when
    the frames run through no code a setting turned on names."""
    on = settings_turned_on(texts)
    for frame in frames:
        for name in _code_names(frame):
            size = len(name)
            for setting, value in on.items():
                words = words_of(setting)
                if any(words[i : i + size] == name for i in range(len(words) - size + 1)):
                    return f"{setting}={value!r}"
    return None


#: The first word of a function that builds a component rather than runs it (``__init__``,
#: ``build_chat_encoding_adapter``, ``create_backend``, ``init_tokenizer``, ``load_model``).
_BUILDING = frozenset({"init", "build", "create", "make", "load", "setup"})


def _building_a_choice(frame: str, value: str) -> bool:
    """Whether ``frame`` is SGLang's code for ``value`` (its module named after the value or
    its family) being built: a component that fails as it is built, before any request, does
    not fit this model or server, where one failing as it runs (``forward_extend``,
    ``send_kv_chunk``) meets a fault of its own or of what it was given."""
    found = SGLANG_FRAME.match(frame)
    if found is None or found["func"] is None:
        return False
    function = words_of(found["func"])
    return (
        bool(function) and function[0] in _BUILDING and _names_choice(value, _module_words(frame))
    )


def choice_failing(texts: Sequence[str], frames: Sequence[str]) -> str | None:
    """The setting, said as ``name=value``, whose chosen value's component failed as it was
    built (:func:`_building_a_choice`; ``frames``, innermost first): ``--tool-call-parser
    deepseekv41`` builds the chat server's DeepSeek encoder (``serving_deepseek_recipe.py``,
    in ``__init__``), which fails when the model's tokenizer lacks DeepSeek's special tokens.
    The choice does not fit this model or server; the fix is another value. None otherwise."""
    chosen = {
        name: value for name, value in settings_turned_on(texts).items() if isinstance(value, str)
    }
    for frame in frames:
        for setting, value in chosen.items():
            if _building_a_choice(frame, value):
                return f"{setting}={value!r}"
    return None


def runs_sglangs_test_harness(frames: Sequence[str]) -> bool:
    """Whether a start's traceback runs through SGLang's own test harness (``sglang/test/``,
    shipped in the wheel: ``SGLANG_TEST_SCRIPTED_RUNTIME=1`` builds its tree-core inspector): a
    server never runs that code unless a setting meant for SGLang's own tests is on."""
    for frame in frames:
        found = SGLANG_FRAME.match(frame)
        if found is not None and found["path"].startswith("test/"):
            return True
    return False
