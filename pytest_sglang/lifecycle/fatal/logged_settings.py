"""What the ``server_args`` dump the start logged says about its failure.

A crash nothing names can still be the config's: an EAGLE-family algorithm with no draft model,
two chosen components whose modules both appear in the frames, a GPU refusal of a backend that
was chosen, a backend chosen for other hardware on a CPU server, a quantization chosen for a
checkpoint it does not fit, more GPUs asked for than there are, a file that is not there whose
path a setting gave, a model file the server's user may not read. Those readings need the
resolved settings, so they live here, apart from the lines' rules, reading only the last dump
before the failure (the last of them, a model file unreadable, also where no dump was logged
yet: frames that read the model say it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from ...addresses import host_problem
from ...resolution import EAGLE_FAMILY
from ...server_args import parse_server_args
from .lines import words_of

#: Values that choose nothing, whatever the flag's default (``--quantization none``, an unset
#: ``''``, ``auto`` for SGLang to decide).
NOTHING_CHOSEN = frozenset({"", "none", "auto"})


def chooses_something(value: object) -> bool:
    """Whether a logged setting's value is a choice of something (not one of
    :data:`NOTHING_CHOSEN`, not a switch or a number)."""
    return isinstance(value, str) and value.lower() not in NOTHING_CHOSEN


#: A frame of SGLang's own code, by its path below the package and its function (``File
#: ".../sglang/srt/kv_canary/api.py", line 7, in check``): a path segment ``sglang``, not a
#: virtual environment merely named after it.
SGLANG_FRAME = re.compile(
    r'\s*File "[^"]*/sglang/(?P<path>[^"]+)\.py", line \d+(?:, in (?P<func>\w+))?'
)

#: A command-line flag as a message names it (``--enable-http2``, ``--dtype=half``).
FLAG_SAID = re.compile(r"(?<![\w-])--(?P<name>[a-z][\w-]*)")

#: The settings that decide how many GPUs (and which) a start asks for, named with that refusal.
_GPU_COUNT_FLAGS: tuple[str, ...] = (
    "tp_size",
    "pp_size",
    "dp_size",
    "ep_size",
    "nnodes",
    "base_gpu_id",
    "gpu_id_step",
)

#: Server arguments whose value chooses a component (a kernel backend, an algorithm, a
#: quantization or dtype): SGLang's module for a choice is named after its value
#: (``attention_backend='torch_native'`` runs ``torch_native_backend.py``, ``NGRAM``
#: ``ngram_worker.py``), so an engineer reading a traceback sees which choices it went through.
_CHOICE_FLAGS: tuple[str, ...] = (
    "attention_backend",
    "prefill_attention_backend",
    "decode_attention_backend",
    "mm_attention_backend",
    "speculative_algorithm",
    "moe_runner_backend",
    "moe_a2a_backend",
    "quantization",
    "kv_cache_dtype",
    "dtype",
    "sampling_backend",
    "grammar_backend",
    "lora_backend",
)

#: (flag, values, flag it needs): a setting that cannot work without another one. A start whose
#: logged (resolved) ``server_args`` has the first without the second, and that then crashes in
#: a way nothing else names, failed for the missing flag: SGLang resolves the draft model of an
#: EAGLE-family algorithm itself only for models that draft for themselves (MTP/NextN), and
#: otherwise goes on with none, crashing later where the draft model is first used.
_REQUIRED_FLAGS: tuple[tuple[str, frozenset[str], str], ...] = (
    ("speculative_algorithm", EAGLE_FAMILY, "speculative_draft_model_path"),
)


def _last_logged_args(texts: Sequence[str]) -> dict[str, object]:
    """The settings of the last ``server_args`` dump in ``texts``; empty without a readable one."""
    dumps = [text for text in texts if "server_args=" in text]
    try:
        return dict(parse_server_args(dumps[-1])) if dumps else {}
    except ValueError:
        return {}


def _gpus_asked(texts: Sequence[str]) -> str | None:
    """The logged settings that decide how many GPUs a start uses (:data:`_GPU_COUNT_FLAGS`),
    said in one phrase; None without a readable dump."""
    args = _last_logged_args(texts)
    said = [f"{flag}={args[flag]!r}" for flag in _GPU_COUNT_FLAGS if flag in args]
    return ", ".join(said) or None


def _missing_requirement(texts: Sequence[str]) -> str | None:
    """A flag the logged ``server_args`` lack that another one they set needs
    (:data:`_REQUIRED_FLAGS`), said in one phrase; None when the dump has it, or has no word on
    it (an older or cut dump that does not list the flag is not read as a missing flag)."""
    args = _last_logged_args(texts)
    for flag, values, needed in _REQUIRED_FLAGS:
        if args.get(flag) in values and needed in args and args[needed] is None:
            return f"{flag}={args[flag]!r} needs {needed}, which is not set"
    return None


def _zero_setting(texts: Sequence[str], statement: str) -> str | None:
    """The logged setting given 0 that ``statement`` (the one that raised a division by zero)
    reads, said as ``name=0``: a start that divides by a setting fails wherever it divides
    (a log interval at the first decode, a parallel size as ranks are laid out), and the fix is
    the setting. None when the statement reads no setting the dump gives as 0."""
    args = _last_logged_args(texts)
    for name in re.findall(r"[A-Za-z_]\w*", statement):
        value = args.get(name)
        if type(value) in (int, float) and value == 0:
            return f"{name}=0"
    return None


#: A refusal of an empty value (``Device string must not be empty``).
_SAYS_EMPTY = re.compile(r"(?i)\b(must|should|may|can) ?not be empty\b|\bcannot be empty\b")


def _empty_setting(texts: Sequence[str], exception: str) -> str | None:
    """The logged setting given the empty string that ``exception``, a refusal of an empty value,
    names by a word of its own (``device=''`` for ``Device string must not be empty``): the fix is
    the setting, wherever the empty value was refused. None otherwise."""
    if not _SAYS_EMPTY.search(exception):
        return None
    words = set(re.findall(r"[a-z]+", exception.lower()))
    for name, value in _last_logged_args(texts).items():
        if value == "" and words & set(name.split("_")):
            return f"{name}=''"
    return None


def _logged_choices(texts: Sequence[str]) -> dict[str, str]:
    """The component choices (:data:`_CHOICE_FLAGS`) of the last logged ``server_args`` that
    are set to a value; empty without a readable dump."""
    args = _last_logged_args(texts)
    return {flag: str(args[flag]) for flag in _CHOICE_FLAGS if chooses_something(args.get(flag))}


#: The version a chosen value ends in (``eagle3``, ``glm45``, ``deepseekv41``).
_VERSION_AT_END = re.compile(r"v?[0-9]+$")


def _names_choice(value: str, words: Sequence[str]) -> bool:
    """Whether ``value`` (``torch_native``, ``eagle3``, ``deepseekv41``) is among ``words`` as a
    run of whole words, or as one word of them all (``flash_rl`` said ``FlashRL``, the product's
    name), or without its version (``eagle``, ``deepseek``): SGLang names the code of a family
    after the family, not each version of it."""
    value = value.lower()
    for wanted in dict.fromkeys((value, _VERSION_AT_END.sub("", value))):
        parts = words_of(wanted)
        size = len(parts)
        if parts and any(words[i : i + size] == parts for i in range(len(words) - size + 1)):
            return True
        if size > 1 and "".join(parts) in words:
            return True
    return False


def _module_words(frame: str) -> list[str]:
    """The words of the module a frame of SGLang's own code is in (``torch_native_backend.py``
    -> torch, native, backend); none for another package's frame or a source line."""
    found = SGLANG_FRAME.match(frame)
    if found is None:
        return []
    return words_of(found["path"].rsplit("/", 1)[-1].lower())


def _clashing_choices(texts: Sequence[str], frames: Sequence[str]) -> str | None:
    """Two chosen components that cannot run together, said in one phrase: a crash nothing else
    names whose frames run through SGLang modules of two different choices of the logged
    ``server_args`` (NGRAM's worker calling the ``torch_native`` attention backend) is the pair,
    not either alone, failing: the fix is another value for one of them. None otherwise."""
    choices = _logged_choices(texts)
    through = [
        flag
        for flag, value in choices.items()
        if any(_names_choice(value, _module_words(frame)) for frame in frames)
    ]
    if len(through) < 2:
        return None
    first, second = through[:2]
    return f"{first}={choices[first]!r} with {second}={choices[second]!r}"


#: A command-line flag and the value after it, as a message names them (``--bf16-gemm-backend
#: cutedsl``, ``--dtype=half``).
_FLAG_IN_TEXT = re.compile(FLAG_SAID.pattern + r"[ =]['\"`]?(?P<value>[\w.-]+)")


def _flags_said(texts: Sequence[str], line: str) -> dict[str, str]:
    """The settings ``line`` names by their flag and the value the last logged ``server_args``
    gave them (``--bf16-gemm-backend cutedsl requires SM100``): a refusal naming the flag with
    its value refuses that setting, whatever kind it is. A flag with another value is advice
    (``Please use `--attention-backend flashinfer```), not what was refused."""
    args = _last_logged_args(texts)
    said: dict[str, str] = {}
    for found in _FLAG_IN_TEXT.finditer(line):
        name = found["name"].replace("-", "_")
        if name in args and str(args[name]).lower() == found["value"].lower():
            said[name] = str(args[name])
    return said


def _refused_choice(texts: Sequence[str], where: Sequence[str]) -> str | None:
    """The logged choice a GPU refusal is about, said in one phrase: the settings the refusal
    names by their flag, else the choices whose value the refusal or its frames name, else the
    backends chosen; None without a dump."""
    choices = _flags_said(texts, where[0]) if where else {}
    if not choices:
        choices = _logged_choices(texts)
        words = [words_of(line) for line in where]
        named = [
            flag for flag, value in choices.items() if any(_names_choice(value, w) for w in words)
        ]
        named = named or [flag for flag in choices if flag.endswith("_backend")]
    else:
        named = list(choices)
    if not named:
        return None
    said = ", ".join(f"{flag}={choices[flag]!r}" for flag in named)
    machine = "CPU server" if _runs_on_cpu(texts) else "GPU"
    return f"a choice this {machine} cannot run: {said}"


#: A file that is not there, in the words of Python's ``OSError`` (``FileNotFoundError: [Errno 2]
#: No such file or directory: '/srv/x'``) or a loader's own (``file '/srv/x' does not exist``).
_NO_SUCH_FILE = re.compile(
    r"No such file or directory: '(?P<a>[^']+)'|\b(file|path|directory) '(?P<b>[^']+)'"
    r" (does not exist|not found)"
)
#: The settings whose value is where a model's files are: a path there that is not there is a
#: model not found; any other setting's is a value of the config.
MODEL_PATH_SETTINGS = (
    "model_path",
    "tokenizer_path",
    "speculative_draft_model_path",
    "lora_paths",
)


def _missing_file_setting(texts: Sequence[str], exception: str) -> tuple[str, str] | None:
    """The logged setting whose value is the path ``exception`` says is not there, and the
    path: a start that reads a file the config named (``debug_tensor_dump_input_file``, a
    template, a model) fails wherever the read happens (a warmup request, a worker), and the
    fix is the setting. None when the exception names no missing file or no setting gave it."""
    found = _NO_SUCH_FILE.search(exception)
    if found is None:
        return None
    path = found.group("a") or found.group("b")
    for name, value in _last_logged_args(texts).items():
        values = value.values() if isinstance(value, dict) else value
        given = values if isinstance(values, (list, tuple)) else [values]
        if any(isinstance(v, str) and v.rstrip("/") == path.rstrip("/") for v in given):
            return name, path
    return None


#: A file the process may not read: Python's ``PermissionError`` (with its path), or a Rust
#: library's I/O error (``Permission denied (os error 13)``, tokenizers and safetensors: none).
_NOT_READABLE = re.compile(
    r"\[Errno 13\] Permission denied: '(?P<path>[^']+)'|Permission denied \(os error 13\)"
)
#: Frames that read a model's files (its config, tokenizer, weights).
_READS_A_MODEL = re.compile(
    r"from_pretrained|tokeniz|safetensors|model_loader|hf_transformers|configuration_utils"
    r"|get_config"
)


def _model_unreadable(texts: Sequence[str], links: Sequence[str]) -> str | None:
    """What of the model the server's user may not read, where an exception of ``links`` says
    permission was denied on a path inside a logged model path setting: the fix is the files'
    modes or the unit's ``User=``, not the model. None otherwise."""
    paths = {
        name: value.rstrip("/")
        for name, value in _last_logged_args(texts).items()
        if name in MODEL_PATH_SETTINGS and isinstance(value, str) and value
    }
    for link in links:
        denied = _NOT_READABLE.search(link)
        path = None if denied is None else denied["path"]
        for name, value in paths.items():
            if path is not None and (path == value or path.startswith(value + "/")):
                return f"the server's user may not read {path} ({name})"
    return None


def _model_file_unreadable(links: Sequence[str], frames: Sequence[str]) -> str | None:
    """The same where no setting is logged yet (SGLang reads the model's config as it resolves
    its arguments) or the library names no path (tokenizers' ``Permission denied (os error
    13)``): permission denied in ``frames`` that read a model's files. Read after the
    environment's and the sandbox's readings, which know a cache or a home directory the server
    writes under those frames. None otherwise."""
    if not any(_READS_A_MODEL.search(frame) for frame in frames):
        return None
    for link in links:
        denied = _NOT_READABLE.search(link)
        if denied is not None:
            return f"the server's user may not read {denied['path'] or 'a file of the model'}"
    return None


def _unusable_address(texts: Sequence[str]) -> str | None:
    """The logged address setting no socket can take, said as ``name=value, not ...``: a port
    (``port``, ``nccl_port``, any ``*_port``) outside 0-65535, or a ``host`` that is no address
    (:func:`~pytest_sglang.addresses.host_problem`: a URL, a port carried along). SGLang does
    not check them: it fails later, wherever the address is first used (its own warmup request,
    torch.distributed's rendezvous), and the fix is the setting. None when every address
    setting could be one."""
    args = _last_logged_args(texts)
    for name, value in args.items():
        port = name == "port" or name.endswith("_port")
        if port and type(value) is int and not 0 <= value <= 65535:
            return f"{name}={value}, not a TCP port"
    host = args.get("host")
    if isinstance(host, str) and host_problem(host) is not None:
        return f"host={host!r}, not a host name or address"
    return None


def _runs_on_cpu(texts: Sequence[str]) -> bool:
    """The logged ``device`` is ``cpu``: a GPU then found missing (no driver, no CUDA device)
    was reached for by another setting (a feature that needs one), not by the machine's lack."""
    return _last_logged_args(texts).get("device") == "cpu"


#: The dynamic loader refusing to start a process for want of the NVIDIA driver's own library
#: (``libcuda.so.1``, NVML's ``libnvidia-ml.so.1``), which only a machine with the driver has:
#: the GPU is not there, as ``no GPU`` says. An import failing for it is read by the component
#: that imported it (:func:`_chosen_off_its_device`), which says more.
_GPU_DRIVER_LIBRARY = re.compile(r"error while loading shared libraries: lib(cuda|nvidia-ml)\.so\b")


def _reached_for_a_gpu(reason: str, line: str) -> bool:
    """Whether the cause read on ``line`` is a GPU found missing: no GPU, or a process that
    could not start without the GPU driver's library (a setting preloads it, as the memory
    saver does, on a machine without one), which reads as a broken install by its words."""
    return reason == "no GPU" or (
        reason == "broken install" and bool(_GPU_DRIVER_LIBRARY.search(line))
    )


#: What a component's code fails with where the hardware it was written for is not there:
#: something it expects is absent (a name its guarded GPU import never defined, a package, a
#: driver library, a kernel the installed build lacks), not a wrong value or shape.
_ABSENT = re.compile(
    r"^([\w.]+\.)?(NameError: name '\w+' is not defined"
    r"|(ModuleNotFoundError|ImportError|OSError): .*(No module named|cannot import name"
    r"|cannot open shared object file|requires the)"
    r"|AttributeError: ('_OpNamespace' '\w+' object|module '[\w.]+') has no attribute)"
)


def _frame_words(frame: str) -> list[str]:
    """The words of an SGLang frame's module and function (``attention_registry.py``, ``in
    create_flashinfer_backend`` -> attention, registry, create, flashinfer, backend): SGLang's
    registries build a chosen component in a function named after it. None for another
    package's frame (a path segment ``sglang``, not a venv merely named after it)."""
    found = SGLANG_FRAME.match(frame)
    if found is None or found["func"] is None:
        return []
    return [*_module_words(frame), *(part for part in found["func"].lower().split("_") if part)]


def _chosen_off_its_device(
    texts: Sequence[str], exception: str, frames: Sequence[str]
) -> str | None:
    """The chosen component a start on the CPU failed in, said in one phrase: where the logged
    ``device`` is ``cpu`` and something a component's code expects is absent (:data:`_ABSENT`)
    inside frames of that component (its module, or its registry's ``create_<value>_...``), the
    choice reached for hardware the server was not given; the fix is another value, not an
    install. None otherwise."""
    if not _ABSENT.match(exception) or not _runs_on_cpu(texts):
        return None
    choices = _logged_choices(texts)
    for flag, value in choices.items():
        if any(_names_choice(value, _frame_words(frame)) for frame in frames):
            return (
                f"{flag}={value!r} chosen on a device='cpu' server: its code needs hardware "
                "that is not there"
            )
    return None


#: An attribute an object lacks, in Python's words (``'MHATokenToKVPool' object has no
#: attribute 'qsa_compress_ratio'``).
_NO_ATTRIBUTE = re.compile(r"^([\w.]+\.)?AttributeError: .* has no attribute '(?P<name>\w+)'")


def _attribute_of_a_choice(texts: Sequence[str], exception: str) -> str | None:
    """The chosen component an object lacks an attribute for, said in one phrase: where the
    missing attribute is named after a logged choice's value (``qsa_compress_ratio`` with
    ``decode_attention_backend='qsa'``), the choice expects what the model or its memory pool
    does not provide; the fix is another value. None otherwise."""
    found = _NO_ATTRIBUTE.match(exception)
    if found is None:
        return None
    words = [part for part in found["name"].lower().split("_") if part]
    for flag, value in _logged_choices(texts).items():
        if _names_choice(value, words):
            return f"{flag}={value!r} expects a {found['name']!r} this model does not provide"
    return None


#: Something used that was never built, in Python's words: an attribute or a call on ``None``.
_USED_NONE = re.compile(r"^([\w.]+\.)?(AttributeError|TypeError): 'NoneType' object ")


def _feature_left_off(texts: Sequence[str], exception: str, frames: Sequence[str]) -> str | None:
    """A switch turned on without the feature it extends, said in one phrase: where something
    never built is used (:data:`_USED_NONE`) in SGLang frames of a feature whose switch is off
    (``enable_lora=None``) while a switch that extends it is on (``enable_lora_overlap_loading``),
    the extension ran without what the feature would have built; the fix is the feature's own
    switch. None otherwise."""
    if not _USED_NONE.match(exception):
        return None
    args = _last_logged_args(texts)
    words = [word for frame in frames for word in _frame_words(frame)]
    for name, value in args.items():
        parts = name.split("_")
        if value is not True or parts[0] != "enable" or len(parts) < 3:
            continue
        for size in range(1, len(parts) - 1):
            base = "_".join(parts[: size + 1])
            if (
                base in args
                and not args[base]
                and _names_choice(" ".join(parts[1 : size + 1]), words)
            ):
                return f"{name}=True without {base}, the feature it extends"
    return None


#: A call refusing the keyword arguments it was given (``LRUStrategy() takes no arguments``,
#: ``__init__() got an unexpected keyword argument 'k'``).
_KEYWORDS_REFUSED = re.compile(
    r"^([\w.]+\.)?TypeError: .*(takes no arguments|got an unexpected keyword argument)"
)
#: Words of a setting's name that say it holds an object of settings, not what they set.
_OBJECT_WORDS = frozenset({"config", "configs", "args", "kwargs", "extra", "params", "options"})


def _object_of(value: object) -> dict[str, object]:
    """A logged setting's value as an object (a dict, or JSON text of one); {} for any other."""
    if isinstance(value, str) and value.startswith("{"):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}


def _object_unpacked(
    texts: Sequence[str], exception: str, statement: str, frames: Sequence[str]
) -> str | None:
    """A setting given as an object whose keys a component is built with, refused by it: the
    raising statement unpacks keyword arguments (``factory(**config)``) that the call does not
    take, in SGLang frames whose modules and functions name a logged setting holding a non-empty
    object (``radix_eviction_policy_config={'k': 1}``: ``get_eviction_strategy`` of
    ``unified_radix_cache``; two of its words, or all of a shorter name). None otherwise."""
    if not _KEYWORDS_REFUSED.match(exception) or "**" not in statement:
        return None
    words = {word for frame in frames for word in _frame_words(frame)}
    best, score = None, 0
    for name, value in _last_logged_args(texts).items():
        named = [word for word in name.split("_") if word not in _OBJECT_WORDS]
        found = sum(word in words for word in named)
        keys = sorted(_object_of(value))
        if keys and found >= min(2, len(named)) and found > score:
            # its keys only: an object of settings can hold a credential as a value
            best, score = f"{name}'s keys {', '.join(keys)}", found
    return None if best is None else f"{best}: keywords the component it builds does not take"


#: No weight file of the kind looked for (SGLang's ``Cannot find any model weights with <path>``).
_NO_WEIGHTS_FOUND = re.compile(
    r"Cannot find any model weights|No model weights found|Could not find (any )?checkpoint files"
)


def _load_format_finds_nothing(texts: Sequence[str], exception: str) -> str | None:
    """The load format the config chose, said in one phrase, when no weights of it were found:
    a ``load_format`` other than ``auto`` looks only for its own files (``pt``: ``*.pt``), so a
    model directory that holds others (safetensors) has none of them; the fix is the format.
    None without a chosen format or that failure."""
    value = _last_logged_args(texts).get("load_format")
    if (
        not isinstance(value, str)
        or value.lower() in ("", "auto")
        or not _NO_WEIGHTS_FOUND.search(exception)
    ):
        return None
    return f"load_format={value!r} looks for weight files this model does not have"


#: Where a quantization method's own code runs: the checkpoint's quantization config being got
#: for it, or the method's module.
_QUANTIZATION_FRAME = re.compile(
    r'File "[^"]*/sglang/srt/(layers/quantization/'
    r'|model_loader/weight_utils\.py", line \d+, in get_quant_config\b)'
)


def _chosen_quantization_refused(texts: Sequence[str], frames: Sequence[str]) -> str | None:
    """The quantization the config chose, said in one phrase, when a failure happened in that
    method's own code (:data:`_QUANTIZATION_FRAME`): SGLang takes a checkpoint's own method from
    its config without the flag, so a logged ``quantization`` is the config's choice, and its
    code failing on the checkpoint (no config file for it, block sizes that do not divide the
    weights) is that choice not fitting it. None without a chosen method or such a frame."""
    value = _last_logged_args(texts).get("quantization")
    if not isinstance(value, str) or value.lower() in ("", "none", "auto"):
        return None
    if not any(_QUANTIZATION_FRAME.search(frame) for frame in frames):
        return None
    return f"quantization={value!r} chosen for a checkpoint it does not fit"


#: A model path that names one of a model's files rather than its directory.
_MODEL_FILE = re.compile(r"\.(json|safetensors|bin|pt|pth|msgpack|h5|txt|model)$")


def _model_path_is_a_file(texts: Sequence[str]) -> str | None:
    """The logged ``model_path`` when it names one of a model's files (``.../config.json``,
    ``.../model.safetensors``) instead of the model's directory, said as ``model_path='...' is a
    file, not the model's directory``: whichever file is read first (the config, the
    tokenizer's) fails for it. None otherwise (a GGUF file is a model SGLang loads as one)."""
    path = _last_logged_args(texts).get("model_path")
    if isinstance(path, str) and _MODEL_FILE.search(path):
        return f"model_path={path!r} is a file, not the model's directory"
    return None


def _overridden_field(texts: Sequence[str], message: str) -> str | None:
    """The key of the logged ``json_model_override_args`` that ``message`` (a refusal of a value
    of the model's config) quotes, said as ``json_model_override_args sets 'key'``: SGLang sets
    the overrides on the model's config as it reads it, so a value of the wrong type there is
    refused as the model's own would be, and the fix is the setting. None otherwise."""
    raw = _last_logged_args(texts).get("json_model_override_args")
    try:
        overrides = json.loads(raw) if isinstance(raw, str) and raw.strip() else raw
    except ValueError:
        return None
    if not isinstance(overrides, dict):
        return None
    for key in overrides:
        if f"'{key}'" in message:
            return f"json_model_override_args sets {key!r}"
    return None


#: A value distinctive enough to stand for its setting where a refusal names it: words joined by
#: ``_`` or ``-``, or letters with digits (``response_template``, ``deepseek-v3``, ``fp8``), not a
#: path, a number, or a bare common word.
_DISTINCT_VALUE = re.compile(r"^[A-Za-z][A-Za-z0-9]*([_-][A-Za-z0-9]+)+$|^[A-Za-z]+\d[A-Za-z0-9]*$")


#: A class name in CamelCase (``LayeredModelLoader``, ``TritonAttnBackend``), by its humps.
_CAMEL_CASE = re.compile(r"\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+\b")
_HUMP = re.compile(r"[A-Z][a-z0-9]*")
#: The last word of a component's class, where SGLang names the class after the choice that
#: builds it (``LayeredModelLoader`` for ``load_format='layered'``): not a model's architecture
#: (``LlamaForCausalLM``), which a choice does not build.
_COMPONENT_CLASS = frozenset(
    {"loader", "backend", "parser", "detector", "runner", "worker", "dispatcher", "processor"}
)


def _class_of_choice(value: str, exception: str) -> bool:
    """Whether ``exception`` names a component class after ``value``: its first humps are the
    value's words and its last a component's (:data:`_COMPONENT_CLASS`)."""
    parts = words_of(value.lower())
    for name in _CAMEL_CASE.findall(exception):
        humps = [hump.lower() for hump in _HUMP.findall(name)]
        named_after = len(humps) > len(parts) and humps[: len(parts)] == parts
        if named_after and humps[-1] in _COMPONENT_CLASS:
            return True
    return False


def _value_refused(texts: Sequence[str], exception: str) -> str | None:
    """The logged setting a refusal names by its value, said as ``name='value'``
    (``ValueError: response_template is required`` with ``reasoning_parser='response_template'``),
    or by its flag where the dump shows it turned on or choosing something (``ValueError:
    --ple-offload-embedding only supports Qwen4ExpForConditionalGeneration``, raised as the
    weights load), or by the component class named after its value (``LayeredModelLoader
    requires ...`` with ``load_format='layered'``): what that setting chose is refused, wherever
    the refusal is raised (a parser's in the tokenizer manager's frames, a loader's); or an
    object setting the refusal is about (:func:`_object_refused`). Paths and names are not
    choices; None when no distinctive value (:data:`_DISTINCT_VALUE`), set flag, class of a
    choice nor object setting is named."""
    words = words_of(exception)
    args = _last_logged_args(texts)
    for name, value in args.items():
        if not isinstance(value, str) or name.endswith(("_path", "_dir", "_file", "_name")):
            continue
        if _DISTINCT_VALUE.match(value) and _names_choice(value, words):
            return f"{name}={value!r}"
        if chooses_something(value) and _class_of_choice(value, exception):
            return f"{name}={value!r}"
    for found in FLAG_SAID.finditer(exception):
        name = found["name"].replace("-", "_")
        if name in args and (args[name] is True or chooses_something(args[name])):
            return f"{name}={args[name]!r}"
    return _object_refused(texts, exception)


#: A JSON decoder's refusal (``json.decoder.JSONDecodeError``, ``orjson.JSONDecodeError``).
NOT_JSON = re.compile(r"^([\w.]+\.)?JSONDecodeError: ")
_QUOTED = re.compile(r"'([^']+)'|\"([^\"]+)\"")
_SAYS_KEY = re.compile(r"(?i)\bkeys?\b")


def _object_refused(texts: Sequence[str], exception: str) -> str | None:
    """The logged setting of JSON a refusal is about: where a JSON decoder refuses, the one
    setting whose text looks like JSON (``{`` or ``[`` first) and is not; where a refusal speaks of
    keys, the setting holding an object with a key it quotes (``Unexpected extra config keys for
    load format LoadFormat.AUTO: {'k'}`` with ``model_loader_extra_config='{"k": 1}'``). Named
    without its value: an object of settings can hold a credential. None otherwise."""
    args = _last_logged_args(texts)
    if NOT_JSON.match(exception):
        unread = [
            name for name, value in args.items()
            if isinstance(value, str) and value.startswith(("{", "[")) and not _is_json(value)
        ]  # fmt: skip
        return f"{unread[0]}, not JSON," if len(unread) == 1 else None
    if not _SAYS_KEY.search(exception):
        return None
    quoted = {one or other for one, other in _QUOTED.findall(exception)}
    for name, value in args.items():
        keys = sorted(set(_object_of(value)) & quoted)
        if keys:
            return f"{name}'s key {keys[0]}"
    return None


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True
