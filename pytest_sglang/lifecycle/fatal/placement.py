"""Where an exception that no rule names lands: by its frames, its type and the phase.

An engineer reading an unknown exception looks at where it was raised (the model loader, the
CUDA-graph runner, the argument checks), what its type says (an import failing, a refusal of
the config), and what the start was doing (loading weights, capturing graphs). This module
does that for one exception, and for a chain picks the link whose placement is most specific.
It reads tracebacks through :mod:`.tracebacks` and never scans a whole record for a rule: that
is :mod:`.reading`'s.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from .patterns import _CODE_FAULT, _KERNEL_LIBRARIES, FATAL_PATTERNS, READY_LINE
from .tracebacks import (
    _FAULTHANDLER,
    _FRAME_CALL,
    FRAME_FUNCTION,
    _chain_of,
    _fault_frames,
    _frames_above,
    _is_frame,
    _raising_statement,
)

#: A lost peer connection (not a refused one, which is a network fault): raised in
#: ``torch.distributed`` or SGLang's parallel state, it is the collective communication failing.
_PEER_LOST = re.compile(
    r"(?i:connection reset by peer|connection closed by peer|broken pipe|socket timeout"
    r"|recvValue|peer closed|remote process exited)"
)
_DISTRIBUTED_FRAME = re.compile(r"torch/distributed/|parallel_state\.py|/c10d|ProcessGroup")

#: A frame of the tokenizer being loaded, not of the tokenizer manager's own work.
_TOKENIZER_FRAME = re.compile(r"tokeniz(er|ation)(?!_manager)|in get_tokenizer")

#: The model's own config being read and checked: transformers' config classes (typed since
#: 5.x; its ``GenerationConfig``, from ``generation_config.json``, validates its values too; each
#: model's own class, ``models/llama/configuration_llama.py``, checks that they agree) and
#: ``AutoConfig.from_pretrained`` (not SGLang's own ``get_config`` around them, whose
#: refusals are of its settings). A value refused there (:data:`_VALUE_REFUSED`) is the model's
#: description at fault, not the server's settings; any other failure there (a cache directory
#: it may not write, a lock, a download) is not a value of the model's, and is not placed by it.
_CONFIG_CLASS_FRAME = re.compile(
    r"transformers/(generation/)?configuration_utils\.py"
    r"|transformers/models/(?!auto/)\w+/configuration_\w+\.py"
    r"|configuration_auto\.py\", line \d+, in from_pretrained"
)
#: SGLang loading the chat or completion template a flag names (``--chat-template``,
#: ``--completion-template``), not the model's own: whatever fails there (a name it does not
#: know, a file that does not decode, a JSON template without its keys) is the file the flag
#: gives, so the config, whatever was raised and however deep.
_FLAG_TEMPLATE_FRAME = re.compile(
    r"template_manager\.py\", line \d+, in (_load_explicit_chat_template|load_completion_template"
    r"|_load_(jinja|python_chat|json_chat|json_completion)_template)\b"
)
#: The exceptions a check of values raises, a typed dataclass's validation error among them
#: (``huggingface_hub``'s ``StrictDataclassFieldValidationError``).
_VALUE_REFUSED = re.compile(
    r"^([\w.]+\.)?(AssertionError|ValueError|TypeError|KeyError|\w*ValidationError)\b"
)

#: Where in a traceback an exception the patterns do not know was raised, by its frames: the
#: module that raised it says what an engineer would call the failure. Checked innermost frame
#: first, so the frame that raised wins over the frames that called it.
_FRAME_HINTS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"configuration_auto\.py\", line \d+, in __getitem__"), "unsupported model"),
    # capturing the graphs, not replaying them while serving (a fault there is the forward's)
    (
        re.compile(
            r"graph_runner\w*\.py\", line \d+, in (?!replay|can_run)|graph_buffers|in capture"
        ),
        "CUDA graph capture",
    ),
    # the server's own warmup request and its wait for the HTTP server (any runtime's), not a
    # kernel's warmup inside the model runner
    (
        re.compile(
            r"\bin \w*(server_warmup|wait_and_warmup)\w*"
            r"|http_server\.py\", line \d+, in \w*(warm_?up|_ready)\w*"
        ),
        "warmup failed",
    ),
    # the tokenizer being loaded, not the tokenizer manager's own work (starting it, handling a
    # request, applying a chat template: a fault there is a crash like any other process's)
    (_TOKENIZER_FRAME, "tokenizer"),
    # the weights being loaded: the loaders, a model's load_weights, the model runner's own
    # load_model; not a caller's ``load_model`` that builds the whole engine or model runner (a
    # benchmark's, another stack's wrapper), under which any start failure would be "loading"
    (
        re.compile(
            r"model_loader|weight_utils|in load_weights|safetensors"
            r"|(model_runner|loader|worker)\w*\.py\",? line \d+,? in load_model\b"
        ),
        "model loading",
    ),
    # the model's own config being read and checked (:data:`_CONFIG_CLASS_FRAME`)
    (_CONFIG_CLASS_FRAME, "model loading"),
    # the template a flag names being loaded (:data:`_FLAG_TEMPLATE_FRAME`)
    (_FLAG_TEMPLATE_FRAME, "invalid config"),
    (re.compile(r"server_args\.py|arg_groups|model_config\.py"), "invalid config"),
)

#: Which library's code raised an exception no rule or hint above names, by the package of its
#: frames: the second reading, after :data:`_FRAME_HINTS` and the types. A phase the frames or
#: the milestones name (CUDA-graph capture, weight loading) outranks it, as it outranks a CUDA
#: error: the library's failure is how that phase failed.
_PACKAGE_HINTS: tuple[tuple[re.Pattern[str], str], ...] = (
    # a kernel being compiled at first use: Triton's compiler and its backends' compile steps
    # (not its runtime, through which every launch passes), the launcher stub Triton builds with
    # a C compiler, torch's extension builder and Inductor's compile steps (not the compiled
    # code it runs), and the JIT builders of FlashInfer, tvm-ffi, DeepGEMM and SGLang's own
    # ``jit_kernel``
    (
        re.compile(
            r"/triton/(compiler/|backends/\w+/compiler\.py|runtime/build\.py)"
            r"|torch/utils/cpp_extension\.py|torch/_inductor/(codecache|compile_fx|async_compile"
            r"|cpp_builder|lowering|graph|scheduler)\.py|torch/_inductor/codegen/"
            r"|/(flashinfer/jit|tvm_ffi/cpp|deep_gemm/jit|sglang/jit_kernel)/"
        ),
        "JIT compile failed",
    ),
    # a process group or its rendezvous being set up, or a collective or barrier run by torch's
    # c10d or SGLang's NCCL binding (not the rest of torch.distributed, nor SGLang's own
    # parallel-state bookkeeping: a fault there is the code's)
    (
        re.compile(
            r"torch/distributed/(rendezvous\.py|elastic/rendezvous/|distributed_c10d\.py\", line"
            r" \d+, in (init_process_group|_new_process_group_helper|new_group|_store_based_barrier"
            r"|barrier|monitored_barrier|all_reduce|all_gather\w*|broadcast\w*|reduce_scatter\w*"
            r"|send|recv)\b)|device_communicators/pynccl(_wrapper)?\.py"
        ),
        "NCCL",
    ),
)

#: A frame of a module's top level: two of them of different files in one traceback (the entry
#: point's own, and one it imports) mean the exception was raised while importing, so the
#: installed packages, not the config, are at fault (one script's own ``raise e`` at its top
#: level prints its ``<module>`` frame twice, and is no import).
_MODULE_FRAME = re.compile(r'^\s*File "(?P<path>.*)", line \d+, in <module>$')

#: Exceptions an SGLang start raises for a value combination it refuses, when no frame says more.
#: Not ``TypeError``: Python raises it for a call that does not fit its function (a missing or
#: unexpected argument), a fault of the code, unless a frame places it in argument handling.
#: Only a refusal of what the config gave counts (:func:`_refusal`): the same type raised by the
#: standard library, or by a state check once the server serves, is a crash.
_CONFIG_EXCEPTION = re.compile(r"^(AssertionError|ValueError|NotImplementedError)(:|$)")
#: The types a check of values raises (a ``TypeError`` too, for a value of the wrong type):
#: below the argument-checking modules, they are the config refused (:func:`_hinted`).
_REFUSAL_TYPE = re.compile(r"^(AssertionError|ValueError|NotImplementedError|TypeError|KeyError)\b")

#: What an exception's type says, where its frames agree (type, frames that must be above it or
#: None, cause): a package missing or unreadable is a broken install wherever it is found out.
_TYPE_CAUSES: tuple[tuple[re.Pattern[str], re.Pattern[str] | None, str], ...] = (
    (
        re.compile(
            r"^([\w.]+\.)?(PackageNotFoundError|DistributionNotFound|ModuleNotFoundError"
            r"|ImportError)\b"
        ),
        None,
        "broken install",
    ),
)

#: A file or value that could not be decoded (JSON, UTF-8, a pickle).
_DECODE_ERROR = re.compile(r"^([\w.]+\.)?(\w*DecodeError|UnpicklingError)\b")
#: Whose reading it was, by the innermost frame outside Python's own decoders (frames innermost
#: first): the tokenizer's files; a value of the config (``--json-model-override-args``, read in
#: the argument checks or the model config's own code); the model's config, which SGLang reads
#: first, so a path that holds no model (a checkpoint file, a directory of something else).
_DECODED_BY: tuple[tuple[re.Pattern[str], str], ...] = (
    (_FLAG_TEMPLATE_FRAME, "invalid config"),
    (_TOKENIZER_FRAME, "tokenizer"),
    (
        re.compile(r"server_args\.py|arg_groups/|sglang/srt/configs/model_config\.py"),
        "invalid config",
    ),
    (
        re.compile(r"configuration_utils\.py|in (get_config|_dict_from_json_file|from_pretrained)"),
        "model not found",
    ),
)


def _decoded_by(frames: Sequence[str]) -> str | None:
    """The cause of a decode error, by whose reading failed (:data:`_DECODED_BY`): the innermost
    frame outside the standard library that one of them knows."""
    for frame in frames:
        if not frame.lstrip().startswith('File "') or _STDLIB_FRAME.search(frame):
            continue
        for pattern, cause in _DECODED_BY:
            if pattern.search(frame):
                return cause
    return None


#: A value SGLang reads from the model's config (``hf_config.architectures[0]``) that is None: the
#: model's ``config.json`` lacks the key, and transformers left it unset.
_NONE_USED = re.compile(r"^([\w.]+\.)?(TypeError|AttributeError): .*'NoneType'")
_MODEL_CONFIG_READ = re.compile(r"\bhf_(text_)?config\.(?P<key>\w+)")
#: The keys that say what the model is: without them SGLang cannot tell which model to build.
_IDENTITY_KEYS = ("architectures", "model_type")


def _lacking_key(texts: Sequence[str], index: int) -> str | None:
    """The key of the model's own config that the statement raising a None's misuse reads
    (``architectures`` in ``self.hf_config.architectures[0]``); None for any other None."""
    if not _NONE_USED.match(texts[index]):
        return None
    read = _MODEL_CONFIG_READ.search(_raising_statement(texts, index) or "")
    return None if read is None else read.group("key")


def _model_config_lacks(texts: Sequence[str], index: int) -> str | None:
    """The cause when a None's misuse reads a key the model's config lacks (:func:`_lacking_key`):
    without its identity (``architectures``, ``model_type``) the model is one SGLang cannot
    serve; without another key the model's description is incomplete, a model-loading failure.
    None for any other None (a fault of the code)."""
    key = _lacking_key(texts, index)
    if key is None:
        return None
    return "unsupported model" if key in _IDENTITY_KEYS else "model loading"


#: A call that does not fit the function it calls: Python's ``TypeError`` for a missing, an
#: unexpected or a repeated argument, or too many; pybind11's for a native function. The group
#: is the function's name as the message gives it (its qualified name, since Python 3.10).
_CALL_MISFIT = re.compile(
    r"^([\w.]+\.)?TypeError: (?P<func>[\w.<>]+)\(\):? (missing \d+ required "
    r"(positional|keyword-only) arguments?|got an unexpected keyword argument"
    r"|got multiple values for (keyword )?argument"
    r"|takes (from )?\d+ (to \d+ )?positional arguments? but \d+ (were|was) given"
    r"|incompatible function arguments)"
)
#: An attribute the library's object lacks, on SGLang's call into it (``wrapper.begin_forward``
#: gone in a newer release).
_ATTRIBUTE_MISSING = re.compile(
    r"^([\w.]+\.)?AttributeError: '[\w.]+' object has no attribute '(?P<func>\w+)'"
)
#: Frames that only pass a call on (Triton's launcher binding a kernel's arguments, torch's
#: operator and module dispatch, its decorators): the call that did not fit was made by the
#: frame out from them. A kernel SGLang defines and launches through Triton is SGLang's.
_PASS_THROUGH_FRAME = re.compile(
    r'File "[^"]*/(triton/runtime/|torch/_ops\.py|torch/nn/modules/module\.py'
    r"|torch/utils/_contextlib\.py|torch/autograd/grad_mode\.py|torch/_dynamo/eval_frame\.py"
    r"|torch/_compile\.py)"
)
#: A frame in one of the kernel libraries' own code (installed, or a source checkout).
_LIBRARY_FRAME = re.compile(
    r'File "(?:(?!/sglang/)[^"])*/(' + "|".join(_KERNEL_LIBRARIES) + r')/(?![^"]*/sglang/)[^"]*"'
)
#: The libraries whose name in an object's name says the object is theirs (Triton is left out:
#: SGLang names its own Triton kernels after it).
_RECEIVERS = tuple(lib for lib in _KERNEL_LIBRARIES if lib != "triton")


def _library_api_misfit(texts: Sequence[str], index: int) -> bool:
    """Whether the exception on ``index`` is a call into a kernel library that no longer fits
    it (:data:`_CALL_MISFIT`, :data:`_ATTRIBUTE_MISSING`): raised in the library's own code, or
    by SGLang's call on one of the library's objects (the raising statement calls ``func`` on an
    object whose name names the library: ``model_runner.flashinfer_prefill_wrapper.plan(``,
    ``torch.ops.sgl_kernel.rmsnorm(``), or builds one of the library's classes:
    ``LMCacheLayerwiseConnector(``). A call into SGLang's own function that does not fit is a
    fault of its code, and stays a crash."""
    text = texts[index]
    found = _CALL_MISFIT.match(text) or _ATTRIBUTE_MISSING.match(text)
    if found is None:
        return False
    if _CALL_MISFIT.match(text) and _embedding_call(texts, index, found.group("func")):
        return True
    inner = None  # the innermost frame's call line that is not a pass-through
    for back in range(index - 1, -1, -1):
        if not _is_frame(texts[back]):
            break
        if _FRAME_CALL.match(texts[back]) and not _PASS_THROUGH_FRAME.search(texts[back]):
            inner = back
            break
    if inner is None:
        return False
    if _CALL_MISFIT.match(text) and _LIBRARY_FRAME.search(texts[inner]):
        return True
    below = texts[inner + 1] if inner + 1 < index else ""
    owner, _, name = found.group("func").rpartition(".")
    if name == "__init__" and owner and below.startswith("    "):
        # a library's class built with arguments it no longer takes (``LMCacheConnector(``)
        cls = owner.rsplit(".", 1)[-1]
        named = cls.lower().startswith(tuple(lib.replace("_", "") for lib in _RECEIVERS))
        if named and re.search(rf"\b{re.escape(cls)}\(", below):
            return True
    func = re.escape(name)
    call = re.search(rf"(?P<receiver>[\w.\[\]]+)\.{func}\b", below)
    if not below.startswith("    ") or call is None:
        return False
    receiver = call.group("receiver").lower()
    return any(re.search(rf"(^|[._\[]){lib}([._\]]|$)", receiver) for lib in _RECEIVERS)


#: SGLang's API that other programs embed it through (its argument class, engine and runtime).
_EMBEDDED_API = re.compile(r"(^|\.)(ServerArgs|Engine|Runtime|RuntimeEndpoint)(\.__init__)?$")
#: A frame of a program's own code: not SGLang's, not an installed package, not Python's.
_PROGRAM_FRAME = re.compile(
    r'^\s*File "(?![^"]*/(sglang|site-packages|dist-packages|lib/python3\.\d+)/)(?!<frozen)[^"]*"'
)


def _embedding_call(texts: Sequence[str], index: int, func: str) -> bool:
    """Whether a call that does not fit is a program embedding SGLang (a harness's worker, an RL
    framework) handing SGLang's own API (``ServerArgs``, ``Engine``, ``Runtime``) arguments this
    release does not take: the program was written for another SGLang release, a version
    mismatch like a kernel library's."""
    frames = _frames_above(texts, index)
    return bool(_EMBEDDED_API.search(func)) and any(_PROGRAM_FRAME.match(f) for f in frames)


#: A frame of Python's standard library (``multiprocessing``, ``json``, ``asyncio``), not of an
#: installed package: a refusal it raises is about what the code handed it, never the config.
_STDLIB_FRAME = re.compile(r'^\s*File "[^"]*/lib/python3\.\d+/(?!(site|dist)-packages/)')

#: A refusal whose own words say it is about the quantization or model config given: it is an
#: invalid config wherever it is raised. SGLang builds the quantization config inside weight
#: loading, so the frames alone would call it a loading failure; the message outranks them.
_QUANT_WORD = (
    r"(quant(ization)?([ _](config|method|type|scheme|format|algo\w*))?|quant_\w+"
    r"|[\w-]*quantized)"
)
_CONFIG_MEANING = re.compile(
    r"^(AssertionError|ValueError|NotImplementedError): .*(?i:"
    rf"\b({_QUANT_WORD}|\w+Config)\b.*\b(only supports?|(is |are )?not supported"
    r"|unsupported|invalid|incompatible|not compatible|does not match|mismatch|unknown"
    r"|not recognized|unrecognized)"
    r"|\b(only supports?|(is |are )?not supported|unsupported|invalid|incompatible"
    rf"|not compatible|unknown|unrecognized)\b.*\b{_QUANT_WORD}\b)"
)

#: How specific a placement is, most first: the patterns' causes in their order, then a refused
#: value combination, then a bare crash (which says nothing of where).
_SPECIFICITY: tuple[str, ...] = (
    *dict.fromkeys(reason for _, reason in FATAL_PATTERNS if reason != "crashed"),
    "invalid config",
    "crashed",
)


def _most_specific_link(texts: Sequence[str], index: int) -> tuple[int, str]:
    """The link of ``index``'s exception chain whose placement is most specific, and that
    placement: an engineer reads every link of a chain, and the one raised where the start
    failed (a warmup request, weight loading) names the failure better than a library's inner
    error it wraps. Among equally specific links, the one chosen first."""
    placed = [(_placed(texts, link), link) for link in _chain_of(texts, index)]
    placed.sort(key=lambda pair: (_SPECIFICITY.index(pair[0]), pair[1] != index))
    reason, link = placed[0]
    return link, reason


def _placed(texts: Sequence[str], index: int) -> str:
    """What an exception no rule names is, read as an engineer reads it: a signal faulthandler
    reports, by the frames of the thread it killed; raised while importing a module, a broken
    install; then by what its type says where its frames agree (:data:`_TYPE_CAUSES`), a decode
    error by whose reading failed (:func:`_decoded_by`); a refusal
    that says it is about the quantization or model config is an invalid config wherever it was
    raised; a lost peer in collective code is NCCL; else by the innermost frame a hint knows;
    else, outside a named phase, by the library whose code raised it (:data:`_PACKAGE_HINTS`);
    else SGLang's own refusal by its type (:func:`_refusal`); else by the phase the start was
    in (weight loading, CUDA-graph capture); else a crash."""
    if _FAULTHANDLER.match(texts[index]):
        fault = _fault_frames(texts, index)
        return _hinted(fault) or _package_hinted(fault) or "crashed"
    text, frames = texts[index], _frames_above(texts, index)
    modules = {m.group("path") for frame in frames if (m := _MODULE_FRAME.search(frame))}
    if len(modules) >= 2:
        return "broken install"
    for kind, where, cause in _TYPE_CAUSES:
        if kind.match(text) and (where is None or any(where.search(f) for f in frames)):
            return cause
    decoded = _decoded_by(frames) if _DECODE_ERROR.match(text) else None
    if decoded is not None:
        return decoded
    lacking = _model_config_lacks(texts, index)
    if lacking is not None:
        return lacking
    if _CONFIG_MEANING.match(text):
        return "invalid config"
    if _PEER_LOST.search(text) and any(_DISTRIBUTED_FRAME.search(f) for f in frames):
        return "NCCL"
    if _library_api_misfit(texts, index):
        return "broken install"
    if _NOT_IMPLEMENTED.match(text):
        return _not_implemented(texts, index, frames)
    hinted = _hinted(frames, bool(_REFUSAL_TYPE.match(text)), bool(_VALUE_REFUSED.match(text)))
    if _CALL_MISFIT.match(text) and hinted != "invalid config":
        # SGLang's own function called with arguments it does not take: a fault of its code,
        # whatever phase the start was in (unless raised in its argument checks)
        return "crashed"
    if hinted is not None:
        return hinted
    phase = _phase_cause(texts, index)
    if phase == "model loading" and (_CODE_FAULT.search(text) or _runs_the_model(frames)):
        # a library's own internal check, or the model's forward run: not the weights read
        phase = None
    package = _package_hinted(frames)
    if package is not None and phase is None:
        return package
    return _refusal(texts, index, frames) or phase or "crashed"


#: A ``NotImplementedError``: the code path the start took is not written.
_NOT_IMPLEMENTED = re.compile(r"^([\w.]+\.)?NotImplementedError\b")
#: The same with no message (``raise NotImplementedError``): only where it was raised says more.
_BARE_NOT_IMPLEMENTED = re.compile(r"^([\w.]+\.)?NotImplementedError:?\s*$")
#: A frame in a model's own module (SGLang's, transformers', vLLM's model files).
_MODEL_MODULE = re.compile(
    r'File "[^"]*/(sglang/srt/models|transformers/models|vllm/model_executor/models'
    r"|sglang/multimodal_gen/runtime/models)/"
)


def _not_implemented(texts: Sequence[str], index: int, frames: Sequence[str]) -> str:
    """Where a ``NotImplementedError`` lands, by the frame that raised it, never by the frames
    that called it (a benchmark's ``load_model`` that builds the whole model runner says nothing
    of the step that had no implementation): one raised bare in the model's own module is the
    model lacking what the start asked of it, an unsupported model; a path the settings chose (a
    recorder mode, a backend, a device) that SGLang does not implement is the config's, an
    invalid config, as SGLang's refusals are (:func:`_refusal`: before the server serves, not
    the standard library's); else what the raising frame's module says, or the phase, or a
    crash."""
    raiser = [f for f in frames if _FRAME_CALL.match(f)][:1]
    if (
        raiser
        and _MODEL_MODULE.search(raiser[0])
        and _BARE_NOT_IMPLEMENTED.match(texts[index].strip())
    ):
        return "unsupported model"
    return (
        _refusal(texts, index, frames) or _hinted(raiser) or _phase_cause(texts, index) or "crashed"
    )


def _phase_cause(texts: Sequence[str], index: int) -> str | None:
    """The cause an unplaced exception gets from the phase its process was in when it was
    raised: between ``Load weight begin`` and its end, weight loading; between a CUDA-graph
    capture's begin and its end, the capture (what SGLang's own headline calls it)."""
    for back in range(index - 1, -1, -1):
        text = texts[back]
        if _PHASE_END.search(text):
            return None
        for pattern, cause in _PHASE_OPEN:
            if pattern.search(text):
                return cause
    return None


#: The call a frame makes: ``File "...", line N, in <function>``.


def _runs_the_model(frames: Sequence[str]) -> bool:
    """Whether the raising frame is a model's forward pass (``forward``, ``forward_extend``):
    the model being run (by a warmup, a capture, a first request), which a ``Load weight
    begin`` with no end logged before it does not make a weight-loading failure."""
    calls = [m for frame in frames if (m := FRAME_FUNCTION.match(frame))]
    return bool(calls) and calls[0].group("func").split(".")[-1].startswith("forward")


#: Milestones that open a phase whose failures have a name of their own (0.5.23
#: ``model_runner`` and ``cuda_graph_setup`` write them), and the ones that close a phase.
_PHASE_OPEN: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^Load weight begin\b"), "model loading"),
    (re.compile(r"(?i)^Capture\b.*\bcuda graph begin\b"), "CUDA graph capture"),
)
_PHASE_END = re.compile(
    r"(?i)^(Load weight end\b|Capture\b.*\bcuda graph end\b|.*\bKV Cache is allocated"
    r"|.*fired up and ready to roll|.*Uvicorn running on)"
)


def _refusal(texts: Sequence[str], index: int, frames: Sequence[str]) -> str | None:
    """``invalid config`` for a value combination refused, by the exception's type alone: an
    ``AssertionError``/``ValueError``/``NotImplementedError`` raised before the server serves by
    SGLang or a package it hands the config to (torch, transformers), or with no frames shown.
    The same type raised by Python's standard library (``multiprocessing``), or once the server
    is ready (a state check while serving), says nothing of the config: None."""
    if not _CONFIG_EXCEPTION.match(texts[index]):
        return None
    if _INVARIANT.match(_raising_statement(texts, index) or ""):
        return None
    raiser = next((f for f in frames if f.lstrip().startswith('File "')), None)
    if raiser is not None and _STDLIB_FRAME.search(raiser):
        return None
    if any(READY_LINE in text for text in texts[:index]) or any(_SERVING.search(f) for f in frames):
        return None
    return "invalid config"


#: A frame of the scheduler's serving loop: an exception raised under it came from running a
#: batch (the warmup request's, or the first user's), not from checking the config, even before
#: the ready line is logged.
_SERVING = re.compile(r"\bin (event_loop\w*|process_batch_result\w*|run_batch)\b")

#: An ``assert`` of the code's own objects (their type, their attributes), not of a value the
#: config gave: a check of SGLang's internal state, whose failure is a fault of the code.
_INVARIANT = re.compile(r"^assert (not )?(isinstance|issubclass|hasattr|callable|type)\(")


def _hinted(frames: Sequence[str], refusal: bool = True, value_refused: bool = False) -> str | None:
    """What the innermost frame a hint knows says the failure is (frames innermost first). The
    argument-checking modules place a value refused (``refusal``: the exception's type is one a
    check raises) wherever it is raised below them, anything else only when they raise it
    themselves: a library they call (a device query, a download) fails for its own reason. The
    model's config being read places only a value refused (``value_refused``); the template a
    flag names being loaded places anything raised under it."""

    def holds(depth: int, pattern: re.Pattern[str], reason: str) -> bool:
        if pattern is _CONFIG_CLASS_FRAME:
            return value_refused
        if pattern is _FLAG_TEMPLATE_FRAME:
            return True
        return refusal or depth == 0 or reason != "invalid config"

    return _innermost(frames, _FRAME_HINTS, holds)


def _package_hinted(frames: Sequence[str]) -> str | None:
    """What the innermost frame of a library :data:`_PACKAGE_HINTS` knows says the failure is
    (frames innermost first): the library whose code failed, when no frame names a phase."""
    return _innermost(frames, _PACKAGE_HINTS, lambda depth, pattern, reason: True)


def _innermost(
    frames: Sequence[str],
    hints: Sequence[tuple[re.Pattern[str], str]],
    holds: Callable[[int, re.Pattern[str], str], bool],
) -> str | None:
    """The reason of the innermost call frame (frames innermost first) a hint matches, where
    ``holds(depth, pattern, reason)``: depth 0 is the frame that raised."""
    calls = [frame for frame in frames if frame.lstrip().startswith('File "')]
    for depth, frame in enumerate(calls):
        for pattern, reason in hints:
            if pattern.search(frame) and holds(depth, pattern, reason):
                return reason
    return None
