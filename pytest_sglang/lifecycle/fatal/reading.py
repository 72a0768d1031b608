"""The classifier's entry point: the cause of a failed start, read from its lines.

:func:`find_fatal` scans a record with :mod:`.patterns`' rules, skipping what is never a cause
(frames, warnings, ignored errors, the parent's own tree kill), cites the line that names the
cause, and for a crash asks :mod:`.placement` where it happened and :mod:`.logged_settings`
whether the config made it; :class:`Fatal` is what it returns. Every other module of the
package feeds this one, and none imports it (the package's ``__init__`` re-exports it).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from .config_file import config_file_failing
from .environment import environment_refused
from .features import choice_failing, feature_failing, runs_sglangs_test_harness
from .hub_cache import hub_cache_folder
from .lines import _strip_prefix, _unwrap
from .logged_settings import (
    MODEL_PATH_SETTINGS,
    NOT_JSON,
    _attribute_of_a_choice,
    _chosen_off_its_device,
    _chosen_quantization_refused,
    _clashing_choices,
    _empty_setting,
    _feature_left_off,
    _gpus_asked,
    _load_format_finds_nothing,
    _missing_file_setting,
    _missing_requirement,
    _model_file_unreadable,
    _model_path_is_a_file,
    _model_unreadable,
    _object_unpacked,
    _overridden_field,
    _reached_for_a_gpu,
    _refused_choice,
    _runs_on_cpu,
    _unusable_address,
    _value_refused,
    _zero_setting,
)
from .packages import package_a_setting_needs
from .patterns import (
    _CHILD_DIED,
    _GPU_REFUSAL,
    _HEADLESS,
    _KILLED,
    _MORE_GPUS_THAN_THERE_ARE,
    _NEVER_READY_RULE,
    _SEE_ABOVE,
    FATAL_PATTERNS,
)
from .placement import _hinted, _lacking_key, _most_specific_link, _package_hinted
from .sandbox import sandbox_denied, shared_memory_short
from .service_manager import ended_by_a_signal, service_setup_failed
from .shadowing import shadowed_module
from .tracebacks import (
    _EMPTY_MESSAGE,
    _EXCEPTION,
    _FAULTHANDLER,
    _TRACEBACK,
    _chain_of,
    _continuation,
    _exception_line,
    _frames_above,
    _is_frame,
    _raised_where,
    _raising_statement_at,
    _stray_indented,
    _texts,
    traceback_complete,
)
from .words import family_named_by_words

#: Causes that say what went wrong but not where, and the phase whose frames name them instead:
#: a CUDA error raised inside CUDA-graph capture is a capture failure (SGLang's own headline
#: says so when it prints one); a connection error in the warmup thread is the warmup failing
#: (its request went to the server itself or a proxy in front of it, not to a download).
#: A connection refused or timed out under torch.distributed's frames is its rendezvous failing.
_WHERE_IT_FAILED: dict[str, tuple[str, ...]] = {
    "CUDA error": ("CUDA graph capture",),
    "network": ("warmup failed", "NCCL"),
}

#: The phases a refusal can be placed in by its frames alone: one that names a logged
#: setting's value there is still the setting's (:func:`_value_refused`).
_PLACED_BY_FRAMES = ("tokenizer", "model loading", "warmup failed", "crashed")
#: A refusal's types, as SGLang raises one for a value it will not run.
_REFUSAL = re.compile(
    rf"^([\w.]+\.)?(AssertionError|ValueError|NotImplementedError): |{NOT_JSON.pattern}"
)

#: An exception group's own line (``ExceptionGroup: unhandled errors in a TaskGroup``): it names
#: no cause, its sub-exceptions printed below it do.
_EXCEPTION_GROUP = re.compile(r"^([\w.]+\.)?(Base)?ExceptionGroup\b")

#: Lines that end a failed start without naming its cause: the cause is on the lines before.
_SUMMARY = re.compile(
    rf"{_CHILD_DIED}|Rank \d+ scheduler (is dead|died)"
    r"|Subprocess \S+ \(pid=\d+\) crashed|\b\w+ hit an exception|Exit code: "
    r"|Scheduler PP\d+ TP\d+ crashed: |Initialization failed\. \w+_init_state: Traceback"
    rf"|{_SEE_ABOVE}"
)

#: Lines where SGLang says it goes on despite an error (a model module it could not import, a
#: fallback it takes), and its dump of the arguments it runs with (``trust_remote_code=True`` there
#: is a setting, not a request for it), or a harness's argparse dump of its own (``args:
#: Namespace(...)``): never a cause, whatever they quote.
_IGNORED = re.compile(
    r"^Ignore import error when loading |(?i:\bwill be ignored\b|\bignoring\b)|server_args="
    r"|\bNamespace\(\w+="
)
#: A line that only warns: the server goes on without a feature, and says why (``multimem
#: all-gather disabled (Found no NVIDIA driver ...)``, ``... skipped because ...``, ``falling
#: back to ...``, a line that says how ``to silence this warning``: SGLang's ``Setup Custom
#: allreduce failed with CUDART error: peer access is not supported ...``), or a kernel or
#: backend says it does not support this GPU (:data:`.patterns._GPU_REFUSAL`: SGLang logs that
#: when it picks another kernel by itself).
#: A value refused for the default in its place goes on too (``Invalid value for SGLANG_USE_MLX:
#: "x" is not a valid boolean value, using default "False"``, SGLang's environment variables).
#: Never a cause, whatever it quotes, unless it is raised: the same words on an exception line or
#: the lines continuing it are the start's refusal, and are read.
_WARNING_ONLY = re.compile(
    r"(?i:\b(?:disabled|skipped|skipping|falling back|fall back)\b\s*(?:\(|because\b|since\b)"
    r"|\bto silence this warning\b"
    r"|\busing (?:the )?default\b|\bdefaulting to\b)"
    rf"|{_GPU_REFUSAL}"
)

#: Lines after which SGLang's parent kills its own process tree (SIGKILL): a shell's ``Killed``
#: after them is that tree kill, the aftermath of the cause, never the cause.
_TREE_KILLED = re.compile(rf"{_CHILD_DIED}|Initialization failed\. warmup error")


@dataclass(frozen=True)
class Fatal:
    """Why the server will not come up: the cause and the journal line that names it.

    ``line`` is the exception line after a traceback's frames when there is one (the bare
    ``Traceback (most recent call last):`` or ``Scheduler hit an exception`` lines name nothing),
    ``message`` that line without its timestamp prefix, and ``complete`` whether every traceback
    from ``find_fatal``'s ``start`` on has ended (:func:`.tracebacks.traceback_complete`): a
    reader that sees ``complete`` has the cause and need not wait for more; one that does not may
    be looking at a ``Scheduler hit an exception`` whose exception line is still on its way.
    """

    reason: str
    line: str
    index: int
    message: str = ""
    complete: bool = True

    @property
    def summary(self) -> str:
        """One line: ``"<cause>: <exception and message>"``."""
        return f"{self.reason}: {self.message or _strip_prefix(self.line).strip()}"


def find_fatal(lines: Sequence[str], start: int = 0) -> Fatal | None:
    """The cause of a failed start at or after ``start``: a pure function of the lines.

    Read the way an engineer reads a failed start. Every line that is not part of a traceback's
    frames, and every line that continues an exception's message, is matched against
    FATAL_PATTERNS; the most specific rule wins, then the earliest line, whichever exception of a
    chain (``The above exception was the direct cause ...``) it is on. A match on a line that
    opens a traceback cites that traceback's exception line; a match on a continuation line cites
    the exception it continues and quotes the matching line. A line that only says the start died
    (``Scheduler hit an exception``, ``Received sigquit``, ``Rank 0 scheduler is dead``,
    ``Subprocess ... crashed``) names no cause: the exception or last words just before it do
    (:func:`_cause_of_crash`). systemd's own lines in a unit's journal: :mod:`.service_manager`.
    """
    given, lines = lines, [_unwrap(line) for line in lines]
    texts = _texts(lines, start)
    if (setup := service_setup_failed(texts, start)) is not None:  # the server never ran
        return Fatal("service setup failed", given[setup[0]], *setup)
    best: tuple[int, int] | None = None  # (rule, index)
    exceptions: list[int] = []
    owner: dict[int, int] = {}  # continuation line -> the exception line it continues
    ends = _exception_lines(texts, start)
    tree_killed = False
    best_raised = False  # whether the best match is on an exception or its continuation
    survived = _background_thread_ends(texts, start)  # a thread's end: the process goes on
    for index in (i for i in range(start, len(texts)) if i not in survived):
        text = texts[index]
        head = index not in owner and (
            bool(_EXCEPTION.match(text)) or index in ends or bool(_FAULTHANDLER.match(text))
        )
        raised = head or index in owner
        bare = lines[index] == text and bool(text.partition(":")[2].strip())
        if not raised and (
            (_is_frame(text) and not _stray_indented(texts, index))
            or _IGNORED.search(text)
            or _WARNING_ONLY.search(text)
            or (tree_killed and re.search(_KILLED, text))  # the parent's own tree kill
        ):
            continue
        if head:
            exceptions.append(index)
            for more in _continuation(lines, texts, index):
                owner[more] = index
        tree_killed = tree_killed or bool(_TREE_KILLED.search(text))
        rule = _better_rule(text, None if best is None else best[0], raised and not best_raised)
        if rule == _NEVER_READY_RULE and any(i < owner.get(index, index) for i in exceptions):
            rule = None  # a wait given up after a failure shown before it: that failure's aftermath
        if rule is None and best is None and head and (_frames_above(texts, index) or bare):
            rule = _HEADLESS  # a traceback whose header (or all but its last line) is not shown
        if rule is not None:
            best, best_raised = (rule, index), raised
    if best is None:  # nothing the server wrote names a cause: a signal systemd saw end it?
        ended = ended_by_a_signal(texts, start)
        return None if ended is None else Fatal(ended[0], given[ended[1]], *ended[1:])
    rule, index = best
    reason = FATAL_PATTERNS[rule][1]
    index, message = _cited(texts, owner, rule, index)
    if reason == "crashed":
        index, reason, message = _crash_read(lines, texts, exceptions, index, start, message)
    reason, message = _refined(texts, start, index, rule, reason, message)
    at = _raising_statement_at(texts, index)
    if at is not None and _BARE_ASSERTION.match(texts[index].strip()):
        # a bare AssertionError says nothing: the failed assert statement says what was checked
        statement = texts[at].strip()
        if statement.startswith("assert ") or statement.startswith("assert("):
            index, message = at, f"{texts[index].strip().rstrip(':')}: {statement}"
    index, message = _message_carried_on(texts, owner, rule, index, message)
    if _NO_MESSAGE.match(message):
        # nothing said but the type: where it was raised is all an engineer has to go on
        message = f"{message.rstrip(':')} {_raised_where(texts, index)}".rstrip()
    return Fatal(
        reason=reason,
        line=given[index],
        index=index,
        message=message,
        complete=traceback_complete(lines, start),
    )


def _exception_lines(texts: Sequence[str], start: int) -> set[int]:
    """The exception line of every traceback at or after ``start``."""
    return {
        end
        for index in range(start, len(texts))
        if _TRACEBACK.search(texts[index]) and (end := _exception_line(texts, index)) is not None
    }


def _outside_the_server(
    texts: Sequence[str], start: int, index: int, frames: Sequence[str]
) -> tuple[str, str] | None:
    """The cause and a phrase where what the exception on ``index`` failed on is outside the
    server's code and inside its configuration: the model's files its user may not read, the
    ``--config`` file (:mod:`.config_file`), the environment (:mod:`.environment`), the unit's
    sandbox and limits (:mod:`.sandbox`), a stray file shadowing a module (:mod:`.shadowing`)."""
    links = [texts[at] for at in _chain_of(texts, index)]
    unreadable = _model_unreadable(texts[start:index], links)
    if unreadable is not None:
        return "model access denied", unreadable
    outside = (
        config_file_failing(frames)
        or environment_refused(texts, index, frames)
        or sandbox_denied(texts, start, index)
        or shadowed_module(links)
    )
    unreadable = None if outside is not None else _model_file_unreadable(links, frames)
    return outside if unreadable is None else ("model access denied", unreadable)


#: SGLang's line for a thread of its own that only watches or tidies, ended by an exception it
#: caught (``Scheduler watchdog thread crashed: ...``, ``PPConsensusStore background thread
#: crashed: ...``), printed with its traceback: the process goes on without that thread.
_THREAD_ENDED = re.compile(r"\b(watchdog|background) thread crashed: ")


def _background_thread_ends(texts: Sequence[str], start: int) -> set[int]:
    """The lines of each background thread's end (:data:`_THREAD_ENDED` and the traceback it
    printed, chained links included): never the start's cause, whatever the exception says
    (``--watchdog-timeout nan`` ends the watchdog with ``ValueError: Invalid value NaN``, and
    the server serves)."""
    ended: set[int] = set()
    for index in range(start, len(texts)):
        if not _THREAD_ENDED.search(texts[index]):
            continue
        header = index + 1 < len(texts) and _TRACEBACK.search(texts[index + 1])
        first = _exception_line(texts, index + 1) if header else None
        last = index if first is None else max(_chain_of(texts, first))
        ended.update(range(index, last + 1))
    return ended


#: An exception whose message is only a header for its continuation lines, ending with a colon
#: (huggingface_hub's ``StrictDataclassFieldValidationError: Validation error for field 'x':``,
#: then ``TypeError: Field 'x' expected int, got str``): the detail is the cause.
_HEADER_MESSAGE = re.compile(r"^([\w.]+\.)?[A-Z]\w*(Error|Exception): .*:$")

#: An exception with nothing said but its type (``NotImplementedError``, ``RuntimeError:``).
_NO_MESSAGE = re.compile(r"^([\w.]+\.)?[A-Z]\w*(Error|Exception):?$")


def _pointed_wrong(
    texts: Sequence[str], start: int, index: int, reason: str, message: str
) -> tuple[str, str] | None:
    """The cause and message where a setting points somewhere wrong: a file that is not there
    whose path a logged setting gave (a model's path: model not found; any other: the config),
    an address no socket takes, a model path that names a file or a folder of the hub's cache
    (:mod:`.hub_cache`); None otherwise."""
    missing_file = _missing_file_setting(texts[start:index], texts[index])
    if missing_file is not None:
        setting, path = missing_file
        cause = "model not found" if setting in MODEL_PATH_SETTINGS else "invalid config"
        return cause, f"{message} ({setting}={path!r}, which does not exist)"
    address = _unusable_address(texts[start:index])
    if address is not None and reason in _REACHES_AN_ADDRESS:
        return "invalid config", f"{message} ({address})"
    file_as_model = _model_path_is_a_file(texts[start:index])
    if file_as_model is not None and reason in _READS_THE_MODEL:
        return "model not found", f"{message} ({file_as_model})"
    cache_folder = hub_cache_folder(texts[index])
    if cache_folder is not None and reason in _READS_THE_MODEL:
        return "model not found", f"{message} ({cache_folder})"
    return None


def _refined(
    texts: Sequence[str], start: int, index: int, rule: int, reason: str, message: str
) -> tuple[str, str]:
    """The cause and message of the exception on ``index`` once the rest of the record is read:
    a failure while SGLang reads the ``--config`` file is the file's (:mod:`.config_file`), one
    where the interpreter or a library refuses an environment variable is the environment's
    (:mod:`.environment`), one the process's sandbox or limits deny is the unit's
    (:mod:`.sandbox`);
    a setting that points somewhere wrong (:func:`_pointed_wrong`) is that setting's; a GPU
    found missing (or the driver's library a process cannot start without) where the logged
    device is the CPU is the config (a setting reached for one), and so is a backend chosen for
    other hardware that finds what it needs absent as it is built there (its package, the
    driver library: the frames of the whole chain show which), and a quantization the config
    chose failing in its own code on the checkpoint; a refusal naming a logged setting's value,
    or about an object setting, is that setting's, wherever its frames place it; a value of the
    model's config refused where the logged override set it is the config, and so is a feature
    a setting turned on asking the model's config for what it lacks, and a chosen load format
    finding none of its files; a package missing that SGLang does not install but a logged
    setting asked for, or a chained refusal says a flag needs (:mod:`.packages`), is that
    setting's; a crash (or a kernel the install lacks) through a flag without the flag it
    needs, a crash through two choices that cannot run together, through a choice an attribute
    is named after, through a feature whose switch is off, through an object setting's keys a
    component does not take, or in the code of a feature a setting turned on
    (:mod:`.features`), is the config; a cause that says what but not where takes the phase its
    frames name (:data:`_WHERE_IT_FAILED`); a GPU refusal names the choice it refuses; a crash
    nothing else names is named by its words' family, if they have one."""
    frames = _frames_above(texts, index)
    outside = _outside_the_server(texts, start, index, frames)
    if outside is not None:
        return outside[0], f"{message} ({outside[1]})"
    pointed = _pointed_wrong(texts, start, index, reason, message)
    if pointed is not None:
        return pointed
    chose = _model_read_as_chosen(texts[start:index], texts[index], reason, message, frames)
    if chose is not None:
        return "invalid config", f"{message} ({chose})"
    lacking = _lacking_key(texts, index)
    if lacking is not None and reason in ("unsupported model", "model loading"):
        message = f"{message} (the model's config.json gives no {lacking})"
    if _reached_for_a_gpu(reason, texts[index]) and _runs_on_cpu(texts[start:index]):
        return "invalid config", f"{message} (device='cpu': another setting reached for a GPU)"
    chain = _chain_frames(texts, index) if reason in _REFINED_BY_CHAIN else []
    off_device = _chosen_off_its_device(texts[start:index], texts[index], chain)
    if off_device is not None and reason in ("crashed", "broken install"):
        return "invalid config", f"{message} ({off_device})"
    quantization = _chosen_quantization_refused(texts[start:index], chain)
    if (
        quantization is not None
        and reason in ("crashed", "model loading")
        and _clashing_choices(texts[start:index], frames) is None  # a pair is more specific
    ):
        return "invalid config", f"{message} ({quantization})"
    refused = _value_refused(texts[start:index], texts[index])
    if refused is not None and reason in _PLACED_BY_FRAMES and _REFUSAL.match(texts[index]):
        return "invalid config", f"{message} ({refused} is refused)"
    needs = _missing_requirement(texts[start:index]) or package_a_setting_needs(
        texts[start:index], texts[index], [texts[at] for at in _chain_of(texts, index)]
    )
    if needs is not None and reason == "broken install" and _EXCEPTION.match(texts[index]):
        return "invalid config", f"{message} ({needs})"  # never asked for, or an extra's
    if reason == "crashed" and _EXCEPTION.match(texts[index]):
        missing = needs or _config_crashed_through(texts, start, index, frames)
        if missing is not None:
            return "invalid config", f"{message} ({missing})"
    elif reason in _WHERE_IT_FAILED and (
        (place := _hinted(frames) or _package_hinted(frames)) in _WHERE_IT_FAILED[reason]
    ):
        return place, message  # as SGLang's own headline would name it
    elif FATAL_PATTERNS[rule][0].pattern == _GPU_REFUSAL:
        chosen = _refused_choice(texts[start:index], [texts[index], *frames])
        if chosen is not None:
            return reason, f"{message} ({chosen})"
    elif FATAL_PATTERNS[rule][0].pattern == _MORE_GPUS_THAN_THERE_ARE:
        asked = _gpus_asked(texts[start:index])
        if asked is not None:
            return reason, f"{message} (more GPUs asked for than the machine shows: {asked})"
    if reason == "crashed" and not _SUMMARY.search(texts[index]):
        # the last reading: what the message's own words say of its family (:mod:`.words`)
        reason = family_named_by_words(texts[index]) or reason
    return reason, message


#: The model's config lacking something asked of it (``'LlamaConfig' object has no attribute
#: 'num_experts_per_tok'``).
_CONFIG_LACKS = re.compile(
    r"^([\w.]+\.)?AttributeError: '\w*Config' object has no attribute '(\w+)'"
)


def _model_read_as_chosen(
    texts: Sequence[str], exception: str, reason: str, message: str, frames: Sequence[str]
) -> str | None:
    """The setting a model's failure to load came from, if the config chose it: a value of the
    model's config the logged override set, a feature a setting turned on asking the model's
    config for what it lacks, in the feature's own code (:mod:`.features`), or a load format
    that finds none of its files."""
    overridden = _overridden_field(texts, message)
    if overridden is not None and reason in ("unsupported model", "model loading"):
        return overridden
    lacks = _CONFIG_LACKS.match(exception)
    feature = feature_failing(texts, frames) if lacks and reason == "unsupported model" else None
    if lacks is not None and feature is not None:
        return f"{feature} asks the model's config for {lacks[2]!r}, which this model lacks"
    load_format = _load_format_finds_nothing(texts, exception)
    return load_format if reason == "model loading" else None


#: The causes a chosen component's frames anywhere in the exception chain can refine.
_REFINED_BY_CHAIN = ("crashed", "broken install", "model loading")


def _failing_in_a_features_code(texts: Sequence[str], frames: Sequence[str]) -> str | None:
    """A crash raised in the code of a feature a setting turned on, or of a value a setting
    chose (:mod:`.features`), or in SGLang's own test harness, said in one phrase: it does not
    run on this server or with this model; the fix is to leave it off, or choose another value."""
    if runs_sglangs_test_harness(frames):
        return "SGLang's test harness (sglang/test/) ran: a setting meant for its tests is on"
    feature = feature_failing(texts, frames)
    if feature is not None:
        return f"{feature} turned on code that fails on this server"
    choice = choice_failing(texts, frames)
    return None if choice is None else f"{choice} chose code that fails on this server"


def _config_crashed_through(
    texts: Sequence[str], start: int, index: int, frames: Sequence[str]
) -> str | None:
    """What of the logged config the crash on ``index`` went through, said in a phrase: two
    choices that cannot run together, a choice an attribute is named after, a feature whose
    switch is off, a setting divided by or given empty, an object setting's keys a component does
    not take, the code of a feature a setting turned on; None when it went through none."""
    logged, exception = texts[start:index], texts[index]
    return (
        _clashing_choices(logged, frames)
        or _attribute_of_a_choice(logged, exception)
        or _feature_left_off(logged, exception, frames)
        or _divided_by_a_setting(texts, start, index)
        or _given_empty(texts, start, index)
        or _object_unpacked(logged, exception, _statement(texts, index), frames)
        or _failing_in_a_features_code(logged, frames)
    )


def _statement(texts: Sequence[str], index: int) -> str:
    """The statement that raised the exception on ``index``, or '' where the record lacks it."""
    at = _raising_statement_at(texts, index)
    return "" if at is None else texts[at]


def _chain_frames(texts: Sequence[str], index: int) -> list[str]:
    """The frames of every traceback of the chain the exception on ``index`` belongs to: the
    cause cited is often the first exception, the component's frames in the one chained to it."""
    return [frame for at in _chain_of(texts, index) for frame in _frames_above(texts, at)]


#: The causes a start that cannot use its own address fails with, wherever it first uses it:
#: its warmup request to itself, torch.distributed's rendezvous, a bind, or a crash.
_REACHES_AN_ADDRESS = ("warmup failed", "NCCL", "network", "port in use", "crashed")
#: The causes a model path that holds no model fails with, by whichever file is read first.
_READS_THE_MODEL = ("tokenizer", "model loading", "unsupported model", "model not found")

#: A division by zero (``integer modulo by zero``, ``float division by zero``).
_ZERO_DIVISION = re.compile(r"^([\w.]+\.)?ZeroDivisionError\b")


def _divided_by_a_setting(texts: Sequence[str], start: int, index: int) -> str | None:
    """``name=0, a setting the start divides by`` when the exception on ``index`` is a division
    by zero whose raising statement reads a setting the logged dump gives as 0."""
    at = _raising_statement_at(texts, index) if _ZERO_DIVISION.match(texts[index]) else None
    zero = None if at is None else _zero_setting(texts[start:index], texts[at])
    return None if zero is None else f"{zero}, a setting the start divides by"


def _given_empty(texts: Sequence[str], start: int, index: int) -> str | None:
    """``name='', a setting given no value`` when the exception on ``index`` refuses an empty
    value that a setting the logged dump gives as ``''`` is named by."""
    empty = _empty_setting(texts[start:index], texts[index])
    return None if empty is None else f"{empty}, a setting given no value"


def _better_rule(text: str, best: int | None, outranks_on_a_tie: bool) -> int | None:
    """The rule of FATAL_PATTERNS that ``text`` matches if it is more specific than ``best``
    (the rule matched so far), else None. On a tie, ``outranks_on_a_tie`` (the line is an
    exception, the best so far is not) wins: the exception that ended the start outranks a
    warning before it that names the same cause (not so for crashes, placed by their frames)."""
    for rule, (pattern, reason) in enumerate(FATAL_PATTERNS):
        if best is not None and (rule > best or (rule == best and not outranks_on_a_tie)):
            return None
        if (best is None or rule < best or reason != "crashed") and pattern.search(text):
            return rule
    return None


def _cited(texts: Sequence[str], owner: dict[int, int], rule: int, index: int) -> tuple[int, str]:
    """The line to cite for a match of ``rule`` on line ``index``, and the message quoted: a
    continuation line cites the exception it continues, a traceback's opening its exception line,
    an exception whose message is all on its continuation lines quotes the one that matched."""
    message = texts[index].strip()
    if index in owner:
        head = owner[index]
        return head, f"{texts[head].strip()} ({message})"
    if _TRACEBACK.search(texts[index]):
        cause = _exception_line(texts, index)
        if cause is not None:
            return cause, texts[cause].strip()
    elif message.endswith(":"):
        # quote the continuation line that names the cause (the rule's own match), else the first
        rest = [i for i, head in owner.items() if head == index]
        named = [i for i in rest if FATAL_PATTERNS[rule][0].search(texts[i])] or rest
        if named:
            message = f"{message} ({texts[min(named)].strip()})"
    return index, message


def _message_carried_on(
    texts: Sequence[str], owner: dict[int, int], rule: int, index: int, message: str
) -> tuple[int, str]:
    """The line to cite, and the message, for an exception whose message is all on the lines
    after it (``ImportError: `` then ``[lib] Could not load ...``): the continuation line that
    names the cause (the rule's own match, else the first) is cited, so the line and the
    one-line reason both carry it; a message that is only a header for the exception it wraps,
    quoted on the next line (``Validation error for field 'x':`` then ``TypeError: ...``), cites
    that exception; any other exception is cited as it is."""
    head = texts[index].strip()
    rest = sorted(i for i, at in owner.items() if at == index and texts[i].strip())
    if not rest:
        return index, message
    if _HEADER_MESSAGE.match(head) and _EXCEPTION.match(texts[rest[0]].strip()):
        cause = rest[0]  # a header for the exception it wraps, quoted on the next line
    elif _EMPTY_MESSAGE.match(head):
        cause = next((i for i in rest if FATAL_PATTERNS[rule][0].search(texts[i])), rest[0])
    else:
        return index, message
    said = texts[cause].strip()
    quoted = f"{head} ({said})"
    if quoted in message:
        return cause, message.replace(quoted, f"{head} {said}", 1)
    return cause, message.replace(head, f"{head} {said}", 1)


def _crash_read(
    lines: Sequence[str],
    texts: Sequence[str],
    exceptions: Sequence[int],
    index: int,
    start: int,
    message: str,
) -> tuple[int, str, str]:
    """(line, cause, message) of a crash: its cause placed (:func:`_cause_of_crash`); one still
    a bare crash where a process died of a Bus error is shared memory short (:mod:`.sandbox`)."""
    reason = "crashed"
    found = _cause_of_crash(lines, texts, exceptions, index, start)
    if found is not None:
        index, reason = found
        message = texts[index].strip()
    short = shared_memory_short(texts, start) if reason == "crashed" else None
    if short is not None:
        return index, "no space left", f"{message} ({short})"
    return index, reason, message


def _cause_of_crash(
    lines: Sequence[str],
    texts: Sequence[str],
    exceptions: Sequence[int],
    marker: int,
    start: int,
) -> tuple[int, str] | None:
    """For a crash no rule names: the exception that caused it, placed by its traceback's frames.

    The exception is the one on the marker line, else the nearest one before a summary marker
    (the lines just before ``Received sigquit`` are its cause), else the first one after it (a
    parent may print its summary before the child's traceback arrives). Without any exception,
    a summary marker's own exit code -9 says the process was killed, and otherwise the last
    untimestamped line just before it (``Killed``, ``Segmentation fault``, a C++ ``what():``, a
    native runtime's indented error line), or the last line logged at error level, is its last
    word.
    """
    if _EXCEPTION_GROUP.match(texts[marker]) and any(i > marker for i in exceptions):
        # a group only gathers its sub-exceptions, printed after it: the first is the cause
        chosen: int | None = min(i for i in exceptions if i > marker)
    elif marker in exceptions and not _SUMMARY.search(texts[marker]):
        chosen = marker
    else:
        before = [i for i in exceptions if i < marker]
        after = [i for i in exceptions if i > marker]
        chosen = before[-1] if before else (after[0] if after else None)
    if (
        chosen is not None
        and _SIGNAL_EXIT.search(texts[marker])
        and chosen in _chain_of(texts, marker)
    ):
        # the parent's own read of the pipe its child closed by dying (``EOFError``), which its
        # summary, raised while handling it, reads as an exit code by a signal: the summary says it
        return marker, "killed" if re.search(_KILLED, texts[marker]) else "crashed"
    if chosen is not None:
        return _most_specific_link(texts, chosen)
    if re.search(_KILLED, texts[marker]):
        return marker, "killed"
    if _SUMMARY.search(texts[marker]):
        # a summary the parent raises itself (``RuntimeError: Rank 0 scheduler is dead``) ends a
        # traceback of its own: the last words are the ones just before that traceback begins
        head = marker - len(_frames_above(texts, marker)) - 1
        if head < marker - 1 and head >= start and _TRACEBACK.search(texts[head]):
            marker = head
        words = _last_words(lines, texts, marker, start)
        if words is not None:
            return words, "killed" if re.search(_KILLED, texts[words]) else "crashed"
    return None


def _last_words(lines: Sequence[str], texts: Sequence[str], marker: int, start: int) -> int | None:
    """The process's last word before the summary on ``marker``: the nearest untimestamped (or
    error-level) line just before it; or, when that line says no error (a native library's dump
    of the object it failed on: ``oobFill 0``), the nearest line of the same run before it that
    does (``Error: Failed to initialize the TMA descriptor 801``)."""
    said: list[int] = []
    for back in range(marker - 1, max(start, marker - 40) - 1, -1):
        text = texts[back]
        spoken = not _is_frame(text) or _stray_indented(texts, back)
        last = lines[back] == text or bool(_ERROR_LEVEL.search(text))
        if last and text.strip() and spoken:
            said.append(back)
        elif said or back < marker - 6:
            break  # the run of last words ended (or none began near the summary)
    if not said:
        return None
    return next((i for i in said if _SAYS_ERROR.search(texts[i])), said[0])


#: A child's exit code that is a signal's (``exit code: -11``: it died of SIGSEGV).
_SIGNAL_EXIT = re.compile(r"(?i:\bexit ?code[:=]? ?-\d+\b)")

#: A line that says something failed, among a process's last words.
_SAYS_ERROR = re.compile(r"(?i:^(error|fatal)\b|\berror:|\bfailed\b|\bfailure\b)")


#: A line logged at error level (``ERROR: ...``, ``... - ERROR - ...``, glog's ``E1205 ...``):
#: timestamped or not, it is a process's last word before a summary, as an untimestamped line is.
_ERROR_LEVEL = re.compile(r"^(ERROR|CRITICAL|FATAL)\b|\s-\s(ERROR|CRITICAL|FATAL)\s-\s|^E\d{4} ")

#: An ``AssertionError`` with no message (``assert x`` failed, or ``raise AssertionError``):
#: Python prints the type alone, or with a colon and nothing after it.
_BARE_ASSERTION = re.compile(r"^([\w.]+\.)?AssertionError:?\s*$")
