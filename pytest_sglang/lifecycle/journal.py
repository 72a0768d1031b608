"""The startup journal: what the server logged after this restart, and what it proves.

Only entries after the cursor taken just before the restart are ever read, never a time window,
so lines from an earlier start cannot satisfy (or fail) a check. The ``server_args`` line is
parsed, not grepped, and compared value by value with what SGLang's resolution rules say the
requested config must become.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import JournalError
from ..resolution import EAGLE_FAMILY, ExpectedJournal
from ..server_args import parse_server_args

__all__ = [
    "FATAL_PATTERNS",
    "FOLLOWER_READY_LINE",
    "READY_LINE",
    "Fatal",
    "StartupJournal",
    "find_fatal",
    "phase_of",
    "same_value",
    "traceback_complete",
]

READY_LINE = "The server is fired up and ready to roll!"
#: What a multi-node server's other nodes log once they serve: only a health server
#: (0.5.23 ``launch_dummy_health_check_server``); the first node serves the API.
FOLLOWER_READY_LINE = "Dummy health check server started"

#: A process killed by signal 9 (the kernel's OOM killer, most often, when no other line says).
_KILLED = (
    r"(?i:\bexit ?code[:=]? ?-9\b)|(?i:\breturn ?code[:=]? ?-9\b)|status=9/KILL"
    r"|(?<!-9 )\(SIGKILL\)|^Killed$|\d Killed\s|signal 9\b|signal: killed"
    r"|(?i:\bexited with (exit )?code:? ?137\b)"
)

#: A kernel, backend or dtype refusing the GPU it runs on (``Unsupported arch``, ``not supported
#: on sm_120``, ``requires compute capability 9.0``, ``only supports Hopper GPUs``): the config
#: chose something this GPU cannot run, so it is an invalid config, named only on an exception
#: line or its continuation (a warning with the same words is :data:`_WARNING_ONLY`) since SGLang
#: logs them when it falls back to another kernel by itself.
_GPU_REFUSAL = (
    r"(?i:\bunsupported (gpu |cuda |sm |device |compute )?arch(?!itectures?:)"
    r"|\bunsupported (gpu|device|sm( version)?|compute capability)\b"
    r"|\bnot supported (on|for) (this |the current |your |the )?(gpus?|device|sm_?\d+\w*"
    r"|arch\w*|compute capability|[\w-]+ gpus?)\b"
    r"|\brequires? .*\b(compute capability|sm_?\d{2,3}\w?\b|sm ?\d{2,3}\+?(?!\w)"
    r"|(hopper|blackwell|ampere|ada)\b)"
    r"|\bonly (supports?|supported on|works on|available on|runs on) .*\b(gpus?|sm_?\d{2,3}\w?"
    r"|sm ?\d{2,3}\+?|hopper|blackwell|ampere|compute capability)(?!\w)"
    r"|\bsm_?\d{2,3}\w? (is |are )?not supported\b)"
)

#: A refusal of the model's kind (an embedding, reward, encoder or classification model served
#: by a runtime that does not serve that kind, or the reverse): the model, not a setting, is what
#: the installed SGLang cannot serve. Not a refusal of a combination (``... not supported with
#: speculative decoding``), which is the config's.
_MODEL_KIND_REFUSED = (
    r"(?i:\b(embedding|reward|encoder(-only)?|cross-encoder|classification|classifier"
    r"|rerank(er|ing)?|generation|generative)( models?| mode| tasks?| architectures?)?"
    r" (is |are )?not (yet )?supported\b(?! (with|when|together|in combination|alongside|if|by))"
    r"|\b(model|architecture|checkpoint)s?\b.* (does not|doesn't|cannot|can't) (support|serve"
    r"|be served as|be used as) (an? )?(embedding|reward|encoder|classification|rerank\w*"
    r"|generation)\b)"
)

#: The model's own config object (transformers' ``PretrainedConfig`` or a model's config class
#: SGLang ships) lacking a field SGLang's model code reads: the model is not one this SGLang
#: knows how to build (a multimodal wrapper config, a newer revision). SGLang's own runtime
#: configs (``ModelConfig``, ``ServerArgs``, the quantization configs) are excluded: a field
#: missing there is a fault of the code, or of the quantization, not of the model.
_MODEL_CONFIG_LACKS = (
    r"^AttributeError: '(?!(Model|Load|Device|LoRA|Lora|Speculative|Scheduler|Server|Port|Cache"
    r"|Quantization|Quant\w*|Fp\d\w*|FP\d\w*|Awq\w*|AWQ\w*|Gptq\w*|GPTQ\w*|W\d+A\d+\w*"
    r"|ModelOpt\w*|CompressedTensors\w*|BitsAndBytes\w*|Marlin\w*|Mx[Ff]p\d\w*|MXFP\w*"
    r"|Gguf\w*|GGUF\w*)Config')[\w.]*Config' object has no attribute '"
)

#: What a launcher, router or harness waits on to become ready (a server, its workers, an
#: engine's replicas or ranks).
_WAITED_ON = (
    r"((http |api |inference |model )?servers?|workers?|engines?|replicas?|instances?|backends?"
    r"|ranks?|endpoints?|pods?|nodes?|services?)"
)
#: A runtime saying its server never became ready (or healthy) for the warmup request, or a
#: router, launcher or harness giving up waiting for its workers to become ready or healthy: the
#: start did not become ready in the time allowed, the warmup failing (the README's convention),
#: in the words of the check before it (SGLang's diffusion runtime, its router's ``Timeout 300s
#: waiting for workers to become healthy``, a harness's ``Server failed to start within ...``).
#: Only a wait given up: the pending health checks logged while it waits are not matched. The
#: aftermath of a failure shown before it (:func:`find_fatal`), never outranking it.
_NEVER_READY = (
    rf"(?i:\b{_WAITED_ON} (did not|didn't|never|failed to) ((bec[oa]me?|get|turn) (ready|healthy"
    r"|available)|come up)\b(?![^.;]*\b(yet|retry|retrying|will retry)\b)"
    r"|\b(timed? ?out|timeout|gave up|giving up)\b[^.;,]{0,40}?\bwaiting (for|on) (the |all |some "
    rf"|\d+ )?([\w-]+ )?{_WAITED_ON}\b.{{0,200}}?\bto (be|become|get|come|turn) (up|ready|healthy"
    r"|available|alive|live)\b"
    rf"|\b{_WAITED_ON} (was |were |is |are )?(still )?not (yet )?(ready|healthy|up) (after|within"
    r"|in) \d"
    rf"|\b{_WAITED_ON} failed to start (within|in|after) (the (timeout|time|allotted)\b|\d)"
    r"|\b(timed? ?out|timeout) waiting for (the )?(health ?check|readiness)\b)"
)

#: An accelerator out of memory in its own runtime's words (torch's ``NPU out of memory``,
#: ``XPU out of memory``, ``MPS backend out of memory``, ROCm's ``HIP out of memory``, Level
#: Zero's ``OUT_OF_DEVICE_MEMORY``): the same failure as CUDA's, whatever device ran out.
_DEVICE_OOM = (
    r"\b(CUDA|HIP|NPU|XPU|MUSA|MLU|GPU|device) out of memory\b|\bMPS backend out of memory"
    r"|\bOUT_OF_DEVICE_MEMORY\b|ACL_ERROR_RT_MEMORY_ALLOCATION"
)

#: The memory left after the weights too small for the KV cache (or a runtime's cache blocks):
#: out of memory, even when the message names the flag that sets the fraction (the README's
#: rule, like SGLang's own ``Not enough memory. Please try to increase --mem-fraction-static``):
#: the fix is more memory for the cache, not a value SGLang refuses.
_NO_ROOM_FOR_CACHE = (
    r"(?i:\bno (\w+ ){0,3}memory (\w+ ){0,2}for (the )?(kv[ _-]?cache|cache blocks"
    r"|(kv |token |memory )pool)\b"
    r"|\b(insufficient|too little) (\w+ ){0,3}memory (\w+ ){0,2}for (the )?(kv[ _-]?cache"
    r"|cache blocks|(kv |token |memory )pool)\b"
    r"|\b(larger than|exceeds|more than) the available (kv[ _-]?cache |gpu |device )?memory\b"
    r"|\bkv[ _-]?cache (memory |pool |size )?(is |would be )?(negative|too small|zero)\b)"
)

#: A model path the Hub's repo-id check refuses: a remote path (``s3://``, ``gs://``) or a local
#: path that does not exist, taken for a Hub repo id because nothing else could read it; or a
#: remote path opened as a local file. Either way no model is found where the path points.
_NOT_A_REPO_ID = (
    r"Repo id must (be in the form|use alphanumeric)|Invalid repository ID or local directory"
    r"|(?i:\bis not a valid (hugging ?face )?(repo(sitory)?[ _-]?id|model (id|identifier))\b)"
    r"|No such file or directory: '(s3|gs|gcs|az|abfss?|hdfs|oss|hf)://"
    r"|it looks like (/|\./|\.\./|~/)\S* is not the path to a directory"
)

#: No processor (multimodal, image, audio) or model implementation registered for the model's
#: type: the model is not one this SGLang or transformers can serve, as when its architecture is
#: not registered.
_NO_PROCESSOR = (
    r"(?i:\b(cannot|can't|could not|couldn't|unable to|failed to) find (a |an |any |the )?"
    r"(corresponding |matching |suitable |registered )?(multimodal |multi-modal |mm |image "
    r"|vision |audio |video )?(processor|model class|model implementation|implementation)s? "
    r"for (the )?(model|architecture|arch)\b"
    r"|\bno (corresponding |matching |registered )?(multimodal |multi-modal |mm |image |vision "
    r"|audio |video )?processor (is |was )?(registered |found |available )?for (the )?"
    r"(model|architecture)\b"
    r"|\b(multimodal |mm |image )?processor (class )?(for|of) (the )?(model|architecture)\b.*"
    r"\bnot (found|registered|supported)\b"
    r"|\bUnrecognized (image processor|processing class|feature extractor|video processor) in\b)"
)

#: A GPU index past the ones the machine (or ``CUDA_VISIBLE_DEVICES``) shows: CUDA's ``invalid
#: device ordinal`` when a rank sets its device, in any runtime's spelling, a checkpoint mapped
#: to a device that is not there, two ranks put on one GPU, a parallel size larger than the GPUs
#: there are. The GPUs exist; the config asks for more of them (``--tp 16`` on an eight-GPU node,
#: a ``--base-gpu-id`` past the last one) than there are, so it is an invalid config, not a
#: missing GPU nor a device fault (the README's convention; the fix is the parallel sizes, the
#: node count or the visible devices).
_MORE_GPUS_THAN_THERE_ARE = (
    r"invalid device ordinal|\b(cuda|hip)ErrorInvalidDevice\b|\bCUDA_ERROR_INVALID_DEVICE\b"
    r"|on (CUDA|HIP|XPU|NPU) device \d+ but \w+\.\w+\.device_count\(\) is \d+"
    r"|Duplicate GPU detected"
    r"|(?i:\bnot enough (gpus|devices|accelerators)\b(?! memory)"
    r"|\b(tp|tensor[ _-]parallel|pp|pipeline[ _-]parallel|dp|world)[ _-]?size\b.{0,80}\b(larger"
    r"|greater|more) than\b.{0,40}\b(gpus|devices)\b"
    r"|\b(requires?|requested|needs?|asks? for) \d+ (gpus|devices)\b.{0,80}\bonly \d+\b"
    r"|\b(gpus|devices)\b.{0,40}\b(smaller|less|fewer) than (the )?(tp|tensor[ _-]parallel|pp"
    r"|pipeline[ _-]parallel|dp|world)[ _-]?size\b)"
)
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

#: The kernel and serving libraries SGLang calls into (as import names), whose APIs move from
#: release to release: a call into one that no longer fits is the installed release not
#: matching the SGLang that calls it (a version mismatch), not a fault of either's code.
_KERNEL_LIBRARIES: tuple[str, ...] = (
    "flashinfer",
    "vllm",
    "sgl_kernel",
    "flash_attn",
    "flash_mla",
    "deep_gemm",
    "deep_ep",
    "xformers",
    "aiter",
    "torchao",
    "xgrammar",
    "outlines",
    "outlines_core",
    "llguidance",
    "mooncake",
    "triton",
    "transformer_engine",
    "fbgemm_gpu",
)
#: The torch operator namespaces those libraries register their kernels under (vLLM's ``_C``).
_KERNEL_OP_NAMESPACE = (
    r"(sgl_kernel\w*|vllm|_C|_moe_C|_rocm_C|_vllm_fa\d_C|flashinfer\w*|deep_gemm|aiter|fbgemm"
    r"|torchao|xformers)"
)
#: A library's registered torch operator called with arguments its schema does not have, or
#: not built for the device it is called on: the library's compiled kernels and the SGLang
#: calling them are of different releases (``sgl_kernel::rmsnorm() is missing value for argument
#: 'enable_pdl'``). SGLang's own operators (``sglang::``) and torch's (``aten::``) are not here.
_KERNEL_OP_MISMATCH = (
    rf"\b{_KERNEL_OP_NAMESPACE}::\w+\(\) is missing value for argument"
    rf"|Unknown keyword argument '\w+' for operator '{_KERNEL_OP_NAMESPACE}::"
    rf"|Expected at most \d+ argument\(s\) for operator '\w+'.*\b{_KERNEL_OP_NAMESPACE}::"
    rf"|Could not run '{_KERNEL_OP_NAMESPACE}::\w+' with arguments from the '\w+' backend"
)

#: A model architecture's class name as transformers and the runtimes spell it
#: (``Qwen3NextForCausalLM``, ``GraniteVisionModel``, ``GPT2LMHeadModel``).
_ARCH_NAME = r"\b[A-Z][A-Za-z0-9]*(For[A-Z]\w*|Model|LM)\b"
#: A serving runtime named in its own refusal (not a kernel backend: a backend that does not
#: support a model's feature is a backend choice refused).
_RUNTIME = r"(?i:sg-?lang|vllm|this (runtime|engine|server)|the (runtime|engine))"
#: A runtime saying it has no implementation of the model's architecture: SGLang's
#: ``Qwen3NextForCausalLM has no SGlang implementation`` (vLLM's is the same sentence),
#: ``... is not implemented in SGLang``, ``... is not supported by SGLang``, ``SGLang does not
#: support this model``. Only when a model or an architecture is what is refused: a flag or a
#: feature ``not supported by SGLang`` is a setting refused.
_MODEL_SUBJECT = (
    rf"({_ARCH_NAME}[`'\"]?|(?i:\b(model|architecture|arch)( type| class| name)?:? "
    r"[`'\"]?[\w./-]+[`'\"]?))"
)
#: Not a refusal of the model with a setting (``... with LoRA``): that is the combination's.
_NOT_WITH = r"(?! (?i:with|when|together|alongside|if|in combination)\b)"
_NO_IMPLEMENTATION = (
    rf"{_MODEL_SUBJECT} (?i:(has|have) no) ({_RUNTIME} |(?i:native |model ))?(?i:implementation)"
    rf"|{_MODEL_SUBJECT} (?i:(is|are) not (yet )?(implemented|supported|available) (in|by)) "
    rf"{_RUNTIME}{_NOT_WITH}"
    rf"|\b{_RUNTIME} (?i:(does not|doesn't|cannot|can't|do not) (yet )?(support|serve|run"
    rf"|implement) (the |this |that |your )?(model|architecture)s?\b){_NOT_WITH}"
    rf"|(?i:\bno) {_RUNTIME} (?i:(implementation|model class|model) (was |is )?(found |available "
    r"|registered )?(for|of)\b)"
    rf"|(?i:\bimplementation of) {_ARCH_NAME} (?i:(is|are) not (yet )?(compatible|supported)"
    r" (with|by|in)) " + _RUNTIME
)

#: An accelerator's operator or kernel compiler failing to start or to build (Ascend CANN's
#: ``Init compiler failed`` / ``OpCompileProcessor init failed``, NVRTC's and hipRTC's errors):
#: the JIT compile failing, as a C compiler's error is.
_KERNEL_COMPILER_FAILED = (
    r"(?i:\binit(iali[sz]e)? (the )?(\w+ )?compiler failed"
    r"|\b(op|operator|kernel)[ _]?compil\w* (init(iali[sz]ation)? |start )?failed"
    r"|\b(op|operator|kernel|tbe) compil(e|ation) (failed|error)"
    r"|\bcompile (op|operator|kernel)s? failed)"
    r"|\b(NVRTC|HIPRTC)_ERROR_\w+|\b(nvrtc|hiprtc): error"
)

#: A C/C++ check macro's report of a CUDA/HIP runtime error (``Failed: Cuda error
#: <file>:<line> '<message>'``, ``CUDA error at <file>:<line> code=...``, ``Cuda failure
#: '...'``, a ``Check failed`` against ``cudaSuccess``): the device's error, printed by native
#: code that may abort with no Python exception after it.
_CHECK_MACRO_FAILED = (
    r"(?i:\bFailed: (cuda|hip) error\b|\b(cuda|cudart|hip) failure\b"
    r"|\b(cuda|cudart|hip|musa) error:? (at |in )?['\"]?[\w./-]+\.(cu|cuh|cc|cpp|cxx|c|h|hpp|hip)"
    r":\d+"
    r"|\b(cuda|hip)_?check\w* failed)|\b(cuda|hip)Success\b"
)

#: Another accelerator's own device error (Ascend's ``NPU function error`` and ACL errors,
#: ROCm's memory access fault and HSA status, Intel's Level Zero / Unified Runtime results,
#: Moore Threads' MUSA): the CUDA error family on that device.
_OTHER_ACCELERATOR_ERROR = (
    r"NPU function error|\bNPU error\b|call acl\w* api failed|\bACL_ERROR_\w+"
    r"|\bacl(rt|nn|op)\w* (api )?failed|\bEZ9999\b|Memory access fault by GPU"
    r"|\bHSA_STATUS_ERROR_\w+|\b(UR_RESULT|ZE_RESULT|PI)_ERROR_\w+|\b(XPU|MUSA|MLU) error: "
)

#: A native runtime's last words with no Python exception after them: glog's fatal line
#: (``F1203 10:00:00.123 42 file.cc:12] Check failed: ...``), a C ``assert``, a shell's report
#: of the signal that ended the process.
_NATIVE_LAST_WORDS = (
    r"^F\d{4} [\d:.]+ +\d+ \S+:\d+\] |: Assertion [`'].*' failed\.$"
    r"|^(Aborted|Bus error|Illegal instruction|Floating point exception)$"
    r"|^terminate called without an active exception"
)

#: (pattern, cause) for lines that mean the server will not come up, most specific first: when
#: several lines match, the earliest rule wins (a CUDA-graph capture that ran out of memory is a
#: capture failure; an NCCL watchdog that reports a CUDA error is a CUDA error). The patterns are
#: matched against every line that is not a traceback frame, and against the lines that continue
#: an exception's message (see :func:`find_fatal`), so a cause SGLang prints on its own
#: continuation line still names the failure.
FATAL_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p), reason)
    for p, reason in (
        (r"Not enough memory\. Please try to increase --mem-fraction-static", "out of memory"),
        (r"(?i:capture cuda graph failed|cuda graph capture failed)", "CUDA graph capture"),
        (
            r"OutOfMemoryError|CUDA out of memory|CUDA error: out of memory|runs out of memory"
            r"|\[Errno 12\] Cannot allocate memory|std::bad_alloc|Unable to allocate \d"
            r"|^MemoryError\b|CUBLAS_STATUS_ALLOC_FAILED|cudaErrorMemoryAllocation"
            r"|Cuda failure '?out of memory|(?i:not enough (gpu |cuda |device )?memory)"
            r"|killed by the OOM killer|Failed with result 'oom-kill'|Out of memory: Killed process"
            r"|invoked oom-killer|\boom-kill\b|\bOOMKilled\b|hipErrorOutOfMemory"
            r"|CUDA_ERROR_OUT_OF_MEMORY|DefaultCPUAllocator: can't allocate memory"
            rf"|{_DEVICE_OOM}|{_NO_ROOM_FOR_CACHE}",
            "out of memory",
        ),
        (
            r"error: (unrecognized arguments|ambiguous option|argument --|the following arguments)"
            r"|^\S*(\.py|launch_server|sglang\S*): error: ",
            "bad flag",
        ),
        (
            r"ddress already in use|error while attempting to bind on address|\[Errno 98\]",
            "port in use",
        ),
        (
            r"GatedRepoError|access a gated repo|Cannot access gated repo|401 Client Error"
            r"|Invalid (credentials|username or password)",
            "model access denied",
        ),
        (
            r"RepositoryNotFoundError|HFValidationError|Repository Not Found"
            r"|is not a local folder and is not a valid model identifier"
            r"|does not appear to have a file named config\.json|LocalEntryNotFoundError"
            r"|Can't load the configuration of|Incorrect path_or_model_id"
            r"|No such file or directory: '\S*config\.json'"
            r"|EntryNotFoundError|RevisionNotFoundError"
            r"|does not appear to have a file named (?!\S*(tokenizer|\.bin\b|\.safetensors\b))"
            r"|config file at .* is not a valid JSON file"
            rf"|{_NOT_A_REPO_ID}",
            "model not found",
        ),
        (
            r"trust_remote_code=True|requires you to execute the configuration file"
            r"|contains custom code which must be executed",
            "trust remote code needed",
        ),
        (
            r"are not supported for now|Unsupported architectures?:"
            r"|does not recognize this architecture|model type `\w+` but Transformers does not"
            r"|is not a registered model in the Transformers library|Unrecognized model in"
            r"|(?i:\barchitectures? \[?'?(?!sm_?\d|compute_|gfx)[\w.-]+'?\]?"
            r" (is|are) not (yet )?supported)"
            r"|(?i:\bmodel type [`'\"]?\w+[`'\"]? is not (yet )?supported)"
            r"|(?i:\bno model (info|config|class|entry) (was )?found for\b)"
            r"|(?i:\bunsupported model (type|architecture|arch)\b)"
            r"|(?i:\b(safetensors|gguf)\b (path|format|files?|weights|checkpoints?|models?)"
            r" (is |are )?(required|not supported|unsupported))"
            rf"|{_MODEL_KIND_REFUSED}|{_MODEL_CONFIG_LACKS}|{_NO_PROCESSOR}|{_NO_IMPLEMENTATION}",
            "unsupported model",
        ),
        (
            r"driver on your system is too old|CUDA driver version is insufficient"
            r"|cudaErrorInsufficientDriver|hipErrorInsufficientDriver"
            r"|(?i:\b(hip|rocm|npu|cann|xpu) driver (version )?is (insufficient|too old)\b)",
            "driver too old",
        ),
        (
            r"No CUDA GPUs are available|Found no NVIDIA driver"
            r"|No accelerator\b.* is available|Unexpected error from cudaGetDeviceCount"
            r"|system not yet initialized|cudaErrorSystemNotReady|(cuda|hip)ErrorNoDevice"
            r"|No \w+ GPUs are available|CUDA unknown error|available devices to be zero"
            r"|could not select device driver|nvidia-container-cli: .*error"
            r"|unknown or invalid runtime name: nvidia|Driver/library version mismatch"
            r"|busy or unavailable|cudaErrorDevicesUnavailable"
            r"|(?i:\bno (cuda|hip|rocm|npu|xpu|musa|mlu|gpu|accelerator) devices? "
            r"(are |is |were |was )?(available|found|detected)\b)"
            r"|CUDA_HOME environment variable is not set|(?i:\bno CUDA (installation|toolkit)"
            r" (was |is )?found\b|\bcould not find (an? |the )?CUDA (installation|toolkit)\b)",
            "no GPU",
        ),
        (
            r"No space left on device|\[Errno 28\]|Disk quota exceeded|\[Errno 122\]",
            "no space left",
        ),
        (
            r"Error building extension|Ninja build failed|Command '\['ninja'"
            r"|No such file or directory: 'ninja'|nvcc fatal|Failed to find C compiler"
            r"|Failed to find CUDA\b|ld returned \d+ exit status|error: command '\S+' failed"
            r"|: fatal error: |^compilation terminated\.$|CompilationError"
            r"|^LLVM ERROR: |PassManager::run failed|(mlir|llvm|triton)::.*\bAssertion [`']"
            r"|CalledProcessError: Command '\[?'?\S*\b(gcc|g\+\+|cc|c\+\+|clang|nvcc|hipcc|ninja)'"
            r"|BackendCompilerFailed|InductorError"
            rf"|{_KERNEL_COMPILER_FAILED}",
            "JIT compile failed",
        ),
        (_MORE_GPUS_THAN_THERE_ARE, "invalid config"),
        (_GPU_REFUSAL, "invalid config"),
        (
            r"CUDA error: |illegal memory access|device-side assert|cudaError\w+"
            r"|no kernel image is available|CUBLAS_STATUS_\w+|CUDNN_STATUS_\w+|CUDA driver error"
            r"|unspecified launch failure|misaligned address|an illegal instruction was encountered"
            r"|is not compatible with the current PyTorch installation|Error \[CUDA\]: "
            r"|\bCUDA_ERROR_\w+|HIP error: |\bhipError\w+"
            r"|(?i:\bout of resources?\b|OutOfResources|too many resources requested)"
            rf"|{_CHECK_MACRO_FAILED}|{_OTHER_ACCELERATOR_ERROR}",
            "CUDA error",
        ),
        (
            r"(?i:\b[NRH]CCL error\b)|DistBackendError|Watchdog caught collective operation timeout"
            r"|nccl(UnhandledCuda|System|Internal|InvalidUsage|RemoteError)"
            r"|DistStoreError|DistNetworkError|ProcessGroupNCCL\S* .*(timed out|Timeout)"
            r"|\bHccl\w+ failed|\bHCCL_E_\w+|failure detected by watchdog"
            r"|\[E\d{4} [\d:.]+ (\d+ )?ProcessGroup(NCCL|Gloo)\b",
            "NCCL",
        ),
        (r"(?i)\bwatchdog timeout\b", "watchdog timeout"),
        (
            r"could finish the model loading, but there are other ranks"
            r"|Cannot find any model weights|No model weights found|SafetensorError"
            r"|Error while deserializing header"
            r"|does not appear to have a file named \S+\.(bin|safetensors)"
            r"|(?i:checkpoint) .*(is )?(corrupt|truncated)|MetadataIncompleteBuffer"
            r"|Error\(s\) in loading state_dict|size mismatch for \w",
            "model loading",
        ),
        (
            r"Error loading tokenizer|Can't load tokenizer|(?i:tokenizer).* (is )?(invalid|corrupt)"
            r"|data did not match any variant of untagged enum|PyPreTokenizerTypeWrapper"
            r"|EOF while parsing|Failed to load tokenizer",
            "tokenizer",
        ),
        (
            r"Initialization failed\. warmup error"
            r"|(?i:\b(server|model|engine|http)'?s? warm-?up (request )?(failed|error)\b)",
            "warmup failed",
        ),
        # less specific than a warmup headline: the headline, when printed, names the phase
        (_NEVER_READY, "warmup failed"),
        (
            r"^(ModuleNotFoundError|ImportError): |undefined symbol: |GLIBC\w* not found"
            r"|requires \w[\w-]*(>=|==)|cannot open shared object file|No module named '"
            r"|^AttributeError: module '[\w.]+' has no attribute|Torch not compiled with CUDA"
            r"|PackageNotFoundError|DistributionNotFound|distribution was not found"
            r"|: command not found$|executable file not found in \$PATH"
            r"|^\S*sh: (\d+: )?\S+: not found$"
            r"|Unable to initialize backend '|not in the list of known backends"
            r"|VersionConflict|but you have \S+ \S+ which is incompatible"
            r"|compiled with different CUDA (major )?versions|operator \S+::\S+ does not exist"
            r"|No matching distribution found for|Could not find a version that satisfies"
            r"|ResolutionImpossible|Failed building wheel for|exec format error"
            rf"|{_KERNEL_OP_MISMATCH}",
            "broken install",
        ),
        (
            r"Max retries exceeded with url|Temporary failure in name resolution"
            r"|We couldn't connect to|Network is unreachable|ConnectTimeout|ConnectionRefusedError"
            r"|ReadTimeoutError|SSLError|ProxyError|Cannot assign requested address"
            r"|429 Client Error|Too Many Requests|\b50[0234] Server Error"
            r"|Connection error, and we cannot find the requested files",
            "network",
        ),
        (_KILLED, "killed"),
        (r"\b\w+ hit an exception", "crashed"),
        (r"Initialization failed\. Please see the error messages above", "crashed"),
        (r"Received sigquit from a child proces|SIGQUIT received", "crashed"),
        (r"Rank \d+ scheduler (is dead|died during initialization)", "crashed"),
        (r"Subprocess \S+ \(pid=\d+\) crashed|Scheduler PP\d+ TP\d+ crashed: ", "crashed"),
        (
            r"Traceback \(most recent call last\):|^terminate called after throwing"
            rf"|Segmentation fault|Fatal Python error|core dumped|{_NATIVE_LAST_WORDS}",
            "crashed",
        ),
    )
)

#: The rule of a wait for readiness given up (:data:`_NEVER_READY`).
_NEVER_READY_RULE = next(i for i, (p, _) in enumerate(FATAL_PATTERNS) if p.pattern == _NEVER_READY)

#: Causes that say what went wrong but not where, and the phase whose frames name them instead:
#: a CUDA error raised inside CUDA-graph capture is a capture failure (SGLang's own headline
#: says so when it prints one); a connection error in the warmup thread is the warmup failing
#: (its request went to the server itself or a proxy in front of it, not to a download).
_WHERE_IT_FAILED = {"CUDA error": "CUDA graph capture", "network": "warmup failed"}

#: The rule a traceback whose ``Traceback (most recent call last):`` header is not shown (an
#: excerpt that starts at its frames, Ray's relayed task error) counts as: a crash, to be placed.
#: So does an exception line Python printed on its own (untimestamped, with a message): what an
#: uncaught exception leaves when only its last line is kept.
_HEADLESS = len(FATAL_PATTERNS) - 1

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

#: A lost peer connection (not a refused one, which is a network fault): raised in
#: ``torch.distributed`` or SGLang's parallel state, it is the collective communication failing.
_PEER_LOST = re.compile(
    r"(?i:connection reset by peer|connection closed by peer|broken pipe|socket timeout"
    r"|recvValue|peer closed|remote process exited)"
)
_DISTRIBUTED_FRAME = re.compile(r"torch/distributed/|parallel_state\.py|/c10d|ProcessGroup")

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
    (re.compile(r"tokeniz(er|ation)(?!_manager)|in get_tokenizer"), "tokenizer"),
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
    (re.compile(r"server_args\.py|arg_groups|model_config\.py"), "invalid config"),
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
#: None, cause): a package missing or unreadable is a broken install wherever it is found out;
#: a model config that cannot be decoded is a path that holds no model (a checkpoint file, a
#: directory of something else), since SGLang reads the config first.
_TYPE_CAUSES: tuple[tuple[re.Pattern[str], re.Pattern[str] | None, str], ...] = (
    (
        re.compile(
            r"^([\w.]+\.)?(PackageNotFoundError|DistributionNotFound|ModuleNotFoundError"
            r"|ImportError)\b"
        ),
        None,
        "broken install",
    ),
    (
        re.compile(r"^([\w.]+\.)?(\w*DecodeError|UnpicklingError)\b"),
        re.compile(r"configuration_utils\.py|in (get_config|_dict_from_json_file|from_pretrained)"),
        "model not found",
    ),
)

#: A call that does not fit the function it calls: Python's ``TypeError`` for a missing, an
#: unexpected or a repeated argument, or too many; pybind11's for a native function. The group
#: is the function's name as the message gives it (its qualified name, since Python 3.10).
_CALL_MISFIT = re.compile(
    r"^([\w.]+\.)?TypeError: (?P<func>[\w.<>]+)\(\):? (missing \d+ required "
    r"(positional|keyword-only) arguments?|got an unexpected keyword argument"
    r"|got multiple values for argument|takes (from )?\d+ (to \d+ )?positional arguments? but "
    r"\d+ (were|was) given|incompatible function arguments)"
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
    ``torch.ops.sgl_kernel.rmsnorm(``). A call into SGLang's own function that does not fit is
    a fault of its code, and stays a crash."""
    text = texts[index]
    found = _CALL_MISFIT.match(text) or _ATTRIBUTE_MISSING.match(text)
    if found is None:
        return False
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
    func = re.escape(found.group("func").rsplit(".", 1)[-1])
    call = re.search(rf"(?P<receiver>[\w.\[\]]+)\.{func}\b", below)
    if not below.startswith("    ") or call is None:
        return False
    receiver = call.group("receiver").lower()
    return any(re.search(rf"(^|[._\[]){lib}([._\]]|$)", receiver) for lib in _RECEIVERS)


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

#: The header Python's faulthandler prints when a signal (SIGSEGV, SIGBUS, SIGABRT, SIGFPE) kills
#: the process: the crash's own report, printed before anything the parent says about it. Its
#: frames follow it (innermost first), under ``Current thread ...`` or ``Stack``.
_FAULTHANDLER = re.compile(r"^Fatal Python error: \w")
_FAULT_STACK = re.compile(r"^(Current thread \w+|Stack) \(most recent call first\):")

#: An exception group's own line (``ExceptionGroup: unhandled errors in a TaskGroup``): it names
#: no cause, its sub-exceptions printed below it do.
_EXCEPTION_GROUP = re.compile(r"^([\w.]+\.)?(Base)?ExceptionGroup\b")

#: Lines that end a failed start without naming its cause: the cause is on the lines before.
_SUMMARY = re.compile(
    r"Received sigquit from a child proces|SIGQUIT received|Rank \d+ scheduler (is dead|died)"
    r"|Subprocess \S+ \(pid=\d+\) crashed|\b\w+ hit an exception|Exit code: "
    r"|Scheduler PP\d+ TP\d+ crashed: "
    r"|Initialization failed\. Please see the error messages above"
)

#: Lines where SGLang says it goes on despite an error (a model module it could not import, a
#: fallback it takes), and its dump of the arguments it runs with (``trust_remote_code=True`` there
#: is a setting, not a request for it): never a cause, whatever they quote.
_IGNORED = re.compile(
    r"^Ignore import error when loading |(?i:\bwill be ignored\b|\bignoring\b)|server_args="
)
#: A line that only warns: the server goes on without a feature, and says why (``multimem
#: all-gather disabled (Found no NVIDIA driver ...)``, ``... skipped because ...``, ``falling
#: back to ...``), or a kernel or backend says it does not support this GPU (:data:`_GPU_REFUSAL`:
#: SGLang logs that when it picks another kernel by itself). Never a cause, whatever it quotes,
#: unless it is raised: the same words on an exception line or the lines continuing it are the
#: start's refusal, and are read.
_WARNING_ONLY = re.compile(
    r"(?i:\b(?:disabled|skipped|skipping|falling back|fall back)\b\s*(?:\(|because\b|since\b))"
    rf"|{_GPU_REFUSAL}"
)

#: Lines after which SGLang's parent kills its own process tree (SIGKILL): a shell's ``Killed``
#: after them is that tree kill, the aftermath of the cause, never the cause.
_TREE_KILLED = re.compile(
    r"Received sigquit from a child proces|SIGQUIT received|Initialization failed\. warmup error"
)

#: (flag, values, flag it needs): a setting that cannot work without another one. A start whose
#: logged (resolved) ``server_args`` has the first without the second, and that then crashes in
#: a way nothing else names, failed for the missing flag: SGLang resolves the draft model of an
#: EAGLE-family algorithm itself only for models that draft for themselves (MTP/NextN), and
#: otherwise goes on with none, crashing later where the draft model is first used.
_REQUIRED_FLAGS: tuple[tuple[str, frozenset[str], str], ...] = (
    ("speculative_algorithm", EAGLE_FAMILY, "speculative_draft_model_path"),
)

_TRACEBACK = re.compile(r"Traceback \(most recent call last\):")
_CHAIN = re.compile(
    r"^(The above exception was the direct cause of the following exception:"
    r"|During handling of the above exception, another exception occurred:)"
)
_EXCEPTION = re.compile(
    r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Fault)(\([\w.]+\))?(: |:$|$)"
)

_PHASES: tuple[tuple[str, str], ...] = (
    ("fired up and ready to roll", "ready"),
    ("Uvicorn running on", "warmup"),
    ("max_total_num_tokens=", "starting HTTP server"),
    ("uda graph begin", "CUDA graphs"),
    ("CUDA graph begin", "CUDA graphs"),
    ("KV Cache is allocated", "KV cache"),
    ("Load weight begin", "loading weights"),
    ("Init parallel begin", "initialising"),
    ("Init torch distributed", "initialising"),
    ("server_args=", "initialising"),
)

_SCHEDULER_LINE = re.compile(r"max_total_num_tokens=(\d+).*?max_running_requests=(\d+)")


@dataclass(frozen=True)
class Fatal:
    """Why the server will not come up: the cause and the journal line that names it.

    ``line`` is the exception line after a traceback's frames when there is one (the bare
    ``Traceback (most recent call last):`` or ``Scheduler hit an exception`` lines name nothing),
    ``message`` that line without its timestamp prefix, and ``complete`` whether every traceback
    from ``find_fatal``'s ``start`` on has ended (:func:`traceback_complete`): a reader that sees
    ``complete`` has the cause and need not wait for more; one that does not may be looking at a
    ``Scheduler hit an exception`` whose exception line is still on its way.
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


def _is_frame(text: str) -> bool:
    """A traceback frame, its source line or caret marks, or a C++ stack frame: never a cause."""
    return (
        text.startswith("    ")
        or text.lstrip().startswith('File "')
        or text.startswith("frame #")
        or not text.strip(" ^~")
        or text.lstrip().startswith("[Previous line repeated")
    )


#: A traceback frame's call line (``File "x.py", line 9, in f``), however it is indented.
_FRAME_CALL = re.compile(r'^\s*File "[^"]*", line \d+')
#: Lines that, right after a frame's call line, are not its source line: an exception (any
#: ``dotted.Name: message``, or a bare one :data:`_EXCEPTION` knows), faulthandler's header, a
#: traceback's opening or chain marker, or a process's last words.
_NOT_SOURCE = re.compile(
    r"^([A-Za-z_][\w.]*(\([\w.]+\))?: |Fatal Python error|Traceback \(most recent"
    r"|The above exception|During handling of|Killed$|Segmentation fault|Aborted)"
)


def _texts(lines: Sequence[str], start: int) -> list[str]:
    """The lines as SGLang (or Python) wrote them, from ``start`` on (earlier ones blank), with
    each traceback frame's source line indented as Python prints it.

    Python prints one source line under a frame's ``File "...", line N, in f``; a report that
    quotes a traceback often loses the indentation (``self._init(args)`` at the margin, or with
    one space), which would make the source line read as the traceback's exception. The line
    right after a frame's call line is its source line unless it is an exception or a marker
    (:data:`_NOT_SOURCE`; a frame whose source is not available is followed by the next frame
    or by the exception itself), so it is given the indentation it lost.
    """
    texts = [""] * start + [_strip_prefix(line) for line in lines[start:]]
    for index in range(start + 1, len(texts)):
        text, above = texts[index], texts[index - 1]
        if (
            _FRAME_CALL.match(above)
            and _unwrap(lines[index]) == text  # a timestamped line is a new record
            and text.strip()
            and not text.startswith("    ")
            and not _FRAME_CALL.match(text)
            and not _NOT_SOURCE.match(text.strip())
            and not _EXCEPTION.match(text.strip())
        ):
            texts[index] = "    " + text.strip()
    return texts


def _stray_indented(texts: Sequence[str], index: int) -> bool:
    """Whether the indented line ``index`` is outside any traceback: no frame's call line is
    above it in its run of frame-like lines. A native runtime indents its own error lines (Ascend
    CANN's ``        [Init][Compiler]Init compiler failed...``, a C++ library's report under
    its headline); those are the record's words, read like any other line, not a frame's
    source."""
    text = texts[index]
    if not text[:1].isspace() or not text.strip(" ^~") or _FRAME_CALL.match(text):
        return False
    for back in range(index - 1, -1, -1):
        above = texts[back]
        if _FRAME_CALL.match(above) or _TRACEBACK.search(above):
            return False
        if not above.strip() or not _is_frame(above):
            return True
    return True


def _exception_line(texts: Sequence[str], start: int) -> int | None:
    """The index of the exception line of the traceback that begins at ``start``, or None while
    its frames are still coming."""
    for index in range(start + 1, len(texts)):
        text = texts[index]
        if _is_frame(text):
            continue
        return index
    return None


def traceback_complete(lines: Sequence[str], start: int = 0) -> bool:
    """Whether every traceback begun at or after ``start`` has printed its exception line.

    A traceback is written frame by frame and ends with the exception (``RuntimeError: ...``);
    a chained one (``The above exception was the direct cause...``) continues after it. Until
    this is True the line that names the cause may still be on its way, so a reader waiting for
    the cause can stop waiting exactly when it is True instead of after a fixed settle time.
    """
    texts = _texts(lines, start)
    index = start
    pending = False
    while index < len(texts):
        if _TRACEBACK.search(texts[index]):
            end = _exception_line(texts, index)
            if end is None:
                return False
            index = end
            pending = False
        elif _CHAIN.match(texts[index]):
            pending = True
        index += 1
    return not pending


def _continuation(lines: Sequence[str], texts: Sequence[str], head: int) -> list[int]:
    """The lines that continue the exception message on line ``head``: SGLang and torch print
    multi-line messages (a reason, a hint, the real cause) as untimestamped lines right after it.

    They end at a timestamped line, a blank line, a new traceback or chain marker, a frame, or an
    exception line of their own; at most eight are read, or 24 for an exception with no message
    on its own line (:data:`_EMPTY_MESSAGE`), whose whole message is on them.
    """
    more: list[int] = []
    limit = 24 if _EMPTY_MESSAGE.match(texts[head].strip()) else 8
    for index in range(head + 1, min(len(texts), head + 1 + limit)):
        text = texts[index]
        if (
            lines[index] != text
            or not text.strip()
            or _TRACEBACK.search(text)
            or _CHAIN.match(text)
            or text.lstrip().startswith('File "')
            or _EXCEPTION.match(text)
        ):
            break
        more.append(index)
    return more


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
    (:func:`_cause_of_crash`).
    """
    given, lines = lines, [_unwrap(line) for line in lines]
    texts = _texts(lines, start)
    best: tuple[int, int] | None = None  # (rule, index)
    exceptions: list[int] = []
    owner: dict[int, int] = {}  # continuation line -> the exception line it continues
    ends = {
        end
        for index in range(start, len(texts))
        if _TRACEBACK.search(texts[index]) and (end := _exception_line(texts, index)) is not None
    }
    tree_killed = False
    best_raised = False  # whether the best match is on an exception or its continuation
    for index in range(start, len(texts)):
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
    if best is None:
        return None
    rule, index = best
    reason = FATAL_PATTERNS[rule][1]
    index, message = _cited(texts, owner, rule, index)
    if reason == "crashed":
        found = _cause_of_crash(lines, texts, exceptions, index, start)
        if found is not None:
            index, reason = found
            message = texts[index].strip()
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


#: An exception with nothing said but its type (``NotImplementedError``, ``RuntimeError:``).
_NO_MESSAGE = re.compile(r"^([\w.]+\.)?[A-Z]\w*(Error|Exception):?$")


def _raised_where(texts: Sequence[str], index: int) -> str:
    """``(raised in <function>, <module>)`` for the innermost frame above the exception on
    ``index``, or nothing when no frame is shown."""
    for back in range(index - 1, -1, -1):
        if not _is_frame(texts[back]):
            return ""
        found = re.match(r'\s*File "(?P<path>[^"]*)", line \d+, in (?P<func>\S+)', texts[back])
        if found is not None:
            module = "/".join(found.group("path").split("/")[-2:])
            return f"(raised in {found.group('func')}, {module})"
    return ""


def _refined(
    texts: Sequence[str], start: int, index: int, rule: int, reason: str, message: str
) -> tuple[str, str]:
    """The cause and message of the exception on ``index`` once the rest of the record is read:
    a crash through a flag without the flag it needs, or through two choices that cannot run
    together, is the config; a cause that says what but not where takes the phase its frames
    name (:data:`_WHERE_IT_FAILED`); a GPU refusal names the choice it refuses."""
    frames = _frames_above(texts, index)
    if reason == "crashed" and _EXCEPTION.match(texts[index]):
        missing = _missing_requirement(texts[start:index]) or _clashing_choices(
            texts[start:index], frames
        )
        if missing is not None:
            return "invalid config", f"{message} ({missing})"
    elif reason in _WHERE_IT_FAILED and _hinted(frames) == _WHERE_IT_FAILED[reason]:
        return _WHERE_IT_FAILED[reason], message  # as SGLang's own headline would name it
    elif FATAL_PATTERNS[rule][0].pattern == _GPU_REFUSAL:
        chosen = _refused_choice(texts[start:index], [texts[index], *frames])
        if chosen is not None:
            return reason, f"{message} ({chosen})"
    elif FATAL_PATTERNS[rule][0].pattern == _MORE_GPUS_THAN_THERE_ARE:
        asked = _gpus_asked(texts[start:index])
        if asked is not None:
            return reason, f"{message} (more GPUs asked for than the machine shows: {asked})"
    return reason, message


def _gpus_asked(texts: Sequence[str]) -> str | None:
    """The logged settings that decide how many GPUs a start uses (:data:`_GPU_COUNT_FLAGS`),
    said in one phrase; None without a readable dump."""
    dumps = [text for text in texts if "server_args=" in text]
    try:
        args = parse_server_args(dumps[-1]) if dumps else {}
    except ValueError:
        return None
    said = [f"{flag}={args[flag]!r}" for flag in _GPU_COUNT_FLAGS if flag in args]
    return ", ".join(said) or None


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


#: An exception line with no message on it (``ImportError: ``): what it says is on the lines
#: that continue it.
_EMPTY_MESSAGE = re.compile(r"^[A-Za-z_][\w.]*(\([\w.]+\))?:\s*$")


def _message_carried_on(
    texts: Sequence[str], owner: dict[int, int], rule: int, index: int, message: str
) -> tuple[int, str]:
    """The line to cite, and the message, for an exception whose message is all on the lines
    after it (``ImportError: `` then ``[lib] Could not load ...``): the continuation line that
    names the cause (the rule's own match, else the first) is cited, so the line and the
    one-line reason both carry it; any other exception is cited as it is."""
    head = texts[index].strip()
    rest = sorted(i for i, at in owner.items() if at == index and texts[i].strip())
    if not _EMPTY_MESSAGE.match(head) or not rest:
        return index, message
    cause = next((i for i in rest if FATAL_PATTERNS[rule][0].search(texts[i])), rest[0])
    said = texts[cause].strip()
    quoted = f"{head} ({said})"
    if quoted in message:
        return cause, message.replace(quoted, f"{head} {said}", 1)
    return cause, message.replace(head, f"{head} {said}", 1)


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
    native runtime's indented error line) is its last word.
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
    if chosen is not None:
        return _most_specific_link(texts, chosen)
    if re.search(_KILLED, texts[marker]):
        return marker, "killed"
    if _SUMMARY.search(texts[marker]):
        for back in range(marker - 1, max(start, marker - 6) - 1, -1):
            said = not _is_frame(texts[back]) or _stray_indented(texts, back)
            if lines[back] == texts[back] and texts[back].strip() and said:
                return back, "killed" if re.search(_KILLED, texts[back]) else "crashed"
    return None


#: How specific a placement is, most first: the patterns' causes in their order, then a refused
#: value combination, then a bare crash (which says nothing of where).
_SPECIFICITY: tuple[str, ...] = (
    *dict.fromkeys(reason for _, reason in FATAL_PATTERNS if reason != "crashed"),
    "invalid config",
    "crashed",
)


def _chain_of(texts: Sequence[str], index: int) -> list[int]:
    """The exception lines of the chain (``The above exception was the direct cause ...``,
    ``During handling of the above exception ...``) that the exception on ``index`` belongs to,
    in the order printed; just ``[index]`` when it is not chained."""
    chains: list[list[int]] = []
    chained = False
    at = 0
    while at < len(texts):
        if _TRACEBACK.search(texts[at]):
            end = _exception_line(texts, at)
            if end is None:
                break
            if chained and chains:
                chains[-1].append(end)
            else:
                chains.append([end])
            chained, at = False, end
        elif _CHAIN.match(texts[at]):
            chained = True
        at += 1
    return next((chain for chain in chains if index in chain), [index])


def _most_specific_link(texts: Sequence[str], index: int) -> tuple[int, str]:
    """The link of ``index``'s exception chain whose placement is most specific, and that
    placement: an engineer reads every link of a chain, and the one raised where the start
    failed (a warmup request, weight loading) names the failure better than a library's inner
    error it wraps. Among equally specific links, the one chosen first."""
    placed = [(_placed(texts, link), link) for link in _chain_of(texts, index)]
    placed.sort(key=lambda pair: (_SPECIFICITY.index(pair[0]), pair[1] != index))
    reason, link = placed[0]
    return link, reason


def _missing_requirement(texts: Sequence[str]) -> str | None:
    """A flag the logged ``server_args`` lack that another one they set needs
    (:data:`_REQUIRED_FLAGS`), said in one phrase; None when the dump has it, or has no word on
    it (an older or cut dump that does not list the flag is not read as a missing flag)."""
    dumps = [text for text in texts if "server_args=" in text]
    if not dumps:
        return None
    try:
        args = parse_server_args(dumps[-1])
    except ValueError:
        return None
    for flag, values, needed in _REQUIRED_FLAGS:
        if args.get(flag) in values and needed in args and args[needed] is None:
            return f"{flag}={args[flag]!r} needs {needed}, which is not set"
    return None


def _logged_choices(texts: Sequence[str]) -> dict[str, str]:
    """The component choices (:data:`_CHOICE_FLAGS`) of the last logged ``server_args`` that
    are set to a value; empty without a readable dump."""
    dumps = [text for text in texts if "server_args=" in text]
    try:
        args = parse_server_args(dumps[-1]) if dumps else {}
    except ValueError:
        return {}
    return {
        flag: str(args[flag])
        for flag in _CHOICE_FLAGS
        if isinstance(args.get(flag), str) and str(args[flag]).lower() not in ("", "auto", "none")
    }


def _names_choice(value: str, words: Sequence[str]) -> bool:
    """Whether ``value`` (``torch_native``, ``eagle3``) is among ``words`` as a run of whole
    words, or without its version digits (``eagle``)."""
    value = value.lower()
    for wanted in dict.fromkeys((value, value.rstrip("0123456789"))):
        parts = [part for part in re.split(r"[^a-z0-9]+", wanted) if part]
        size = len(parts)
        if parts and any(words[i : i + size] == parts for i in range(len(words) - size + 1)):
            return True
    return False


def _frames_above(texts: Sequence[str], index: int) -> list[str]:
    """The traceback frames just above the exception line ``index``, innermost first."""
    frames = []
    for back in range(index - 1, -1, -1):
        if not _is_frame(texts[back]):
            break
        frames.append(texts[back])
    return frames


def _module_words(frame: str) -> list[str]:
    """The words of the module a frame of SGLang's own code is in (``torch_native_backend.py``
    -> torch, native, backend); none for another package's frame or a source line."""
    found = re.match(r'\s*File "(?P<path>[^"]*sglang[^"]*)"', frame)
    if found is None:
        return []
    name = found.group("path").rsplit("/", 1)[-1].removesuffix(".py").lower()
    return [part for part in re.split(r"[^a-z0-9]+", name) if part]


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


def _refused_choice(texts: Sequence[str], where: Sequence[str]) -> str | None:
    """The logged choice a GPU refusal is about, said in one phrase: the choices whose value
    the refusal or its frames name, else the backends chosen; None without a dump."""
    choices = _logged_choices(texts)
    words = [[part for part in re.split(r"[^a-z0-9]+", line.lower()) if part] for line in where]
    named = [flag for flag, value in choices.items() if any(_names_choice(value, w) for w in words)]
    named = named or [flag for flag in choices if flag.endswith("_backend")]
    if not named:
        return None
    said = ", ".join(f"{flag}={choices[flag]!r}" for flag in named)
    return f"a choice this GPU cannot run: {said}"


def _placed(texts: Sequence[str], index: int) -> str:
    """What an exception no rule names is, read as an engineer reads it: a signal faulthandler
    reports, by the frames of the thread it killed; raised while importing a module, a broken
    install; then by what its type says where its frames agree (:data:`_TYPE_CAUSES`); a refusal
    that says it is about the quantization or model config is an invalid config wherever it was
    raised; a lost peer in collective code is NCCL; else by the innermost frame a hint knows;
    else SGLang's own refusal by its type (:func:`_refusal`); else by the phase the start was
    in (weight loading, CUDA-graph capture); else a crash."""
    if _FAULTHANDLER.match(texts[index]):
        return _hinted(_fault_frames(texts, index)) or "crashed"
    text, frames = texts[index], _frames_above(texts, index)
    modules = {m.group("path") for frame in frames if (m := _MODULE_FRAME.search(frame))}
    if len(modules) >= 2:
        return "broken install"
    for kind, where, cause in _TYPE_CAUSES:
        if kind.match(text) and (where is None or any(where.search(f) for f in frames)):
            return cause
    if _CONFIG_MEANING.match(text):
        return "invalid config"
    if _PEER_LOST.search(text) and any(_DISTRIBUTED_FRAME.search(f) for f in frames):
        return "NCCL"
    if _library_api_misfit(texts, index):
        return "broken install"
    if _NOT_IMPLEMENTED.match(text):
        return _not_implemented(texts, index, frames)
    return (
        _hinted(frames, bool(_REFUSAL_TYPE.match(text)))
        or _refusal(texts, index, frames)
        or _phase_cause(texts, index)
        or "crashed"
    )


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
    if any(READY_LINE in text for text in texts[:index]):
        return None
    return "invalid config"


#: An ``assert`` of the code's own objects (their type, their attributes), not of a value the
#: config gave: a check of SGLang's internal state, whose failure is a fault of the code.
_INVARIANT = re.compile(r"^assert (not )?(isinstance|issubclass|hasattr|callable|type)\(")


#: An ``AssertionError`` with no message (``assert x`` failed, or ``raise AssertionError``):
#: Python prints the type alone, or with a colon and nothing after it.
_BARE_ASSERTION = re.compile(r"^([\w.]+\.)?AssertionError:?\s*$")


def _raising_statement_at(texts: Sequence[str], index: int) -> int | None:
    """The index of the source line of the frame that raised the exception on ``index`` (the
    statement Python shows under the innermost frame), or None when the traceback does not
    show it. Python 3.11's caret marks under it, and the further lines of a statement that
    Python 3.13 prints whole, lie between it and the exception; a report's own indentation of
    it (none, one space, eight) was already made a frame's by :func:`_texts`."""
    for back in range(index - 1, max(-1, index - 10), -1):
        text = texts[back]
        if _FRAME_CALL.match(text):
            if back == index - 1:
                return None  # the frame's source is not shown
            first = texts[back + 1]
            return back + 1 if first.startswith("    ") and first.strip(" ^~") else None
        if not _is_frame(text) or not text.strip():
            return None
    return None


def _raising_statement(texts: Sequence[str], index: int) -> str | None:
    """The statement that raised the exception on ``index`` (:func:`_raising_statement_at`),
    stripped, or None."""
    at = _raising_statement_at(texts, index)
    return None if at is None else texts[at].strip()


def _hinted(frames: Sequence[str], refusal: bool = True) -> str | None:
    """What the innermost frame a hint knows says the failure is (frames innermost first). The
    argument-checking modules place a value refused (``refusal``: the exception's type is one a
    check raises) wherever it is raised below them, anything else only when they raise it
    themselves: a library they call (a device query, a download) fails for its own reason."""
    calls = [frame for frame in frames if frame.lstrip().startswith('File "')]
    for depth, frame in enumerate(calls):
        for pattern, reason in _FRAME_HINTS:
            if pattern.search(frame) and (refusal or depth == 0 or reason != "invalid config"):
                return reason
    return None


def _fault_frames(texts: Sequence[str], index: int) -> list[str]:
    """The frames faulthandler printed after its header at ``index`` for the thread the signal
    hit (``Current thread ...`` or ``Stack``), innermost first; the other threads' frames (a
    progress bar's monitor thread, say) say nothing about the crash."""
    frames: list[str] = []
    inside = False
    for text in texts[index + 1 : index + 400]:
        if _FAULT_STACK.match(text):
            inside = True
        elif inside and text.lstrip().startswith('File "'):
            frames.append(text)
        elif inside and text.strip():
            break
    return frames


def phase_of(lines: Iterable[str]) -> str:
    """The furthest startup phase the lines reach (loading weights, KV cache, CUDA graphs...)."""
    best = "starting"
    rank = {name: i for i, (_, name) in enumerate(reversed(_PHASES))}
    for line in lines:
        for needle, name in _PHASES:
            if needle in line and rank[name] > rank.get(best, -1):
                best = name
                break
    return best


#: SGLang's line prefix: ``[YYYY-MM-DD HH:MM:SS{ DPn TPn}]``, or ``[MM-DD HH:MM:SS]`` as its
#: diffusion runtime writes it.
_TS_PREFIX = re.compile(r"^\[(?:\d{4}-)?\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?(?: [A-Z0-9 ]+)?\] ")


#: Prefixes that the stack carrying SGLang's output puts before every line it relays, whatever
#: the line says: Ray's actor tag (``(WorkerDict pid=7, ip=10.0.0.1) ``), torch distributed's rank
#: (``[rank0]: ``), docker compose's service (``sglang-1  | ``), syslog's as journald prints it
#: (``Dec 03 10:00:00 gpu1 sglang[123]: ``). A traceback relayed this way is still a traceback:
#: the tag is taken off before the line is read, and so are a terminal's colour codes.
_CARRIER = re.compile(
    r"^(\(\w+ pid=\d+(, ip=[\d.]+)?\) |\[rank\d+\]: ?|[\w.-]+-\d+ +\| "
    r"|[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \S+ [\w.@/-]+(\[\d+\])?: )"
)
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


#: Python's exception-group traceback (3.11+; anyio's task groups under uvicorn raise one): each
#: line behind a ``|`` gutter, opened by ``+ Exception Group Traceback ...`` and each
#: sub-exception's traceback framed by ``+---- n ----`` rules. The gutter is taken off so the
#: tracebacks inside read as any other; a rule is a blank line.
_GROUP_GUTTER = re.compile(r"^ {2,}(\|( |$)|\+ (?=Exception Group Traceback))")
_GROUP_RULE = re.compile(r"^ {2,}\+[-+]*-[-+\d ]*$")


def _unwrap(line: str) -> str:
    """The line as SGLang wrote it, without a carrier's tag (:data:`_CARRIER`), colours or an
    exception group's gutter (:data:`_GROUP_GUTTER`)."""
    line = _CARRIER.sub("", _ANSI.sub("", line), count=1)
    if _GROUP_RULE.match(line):
        return ""
    return _GROUP_GUTTER.sub("", line, count=1)


def _strip_prefix(line: str) -> str:
    return _TS_PREFIX.sub("", _unwrap(line), count=1)


def same_value(expected: Any, logged: Any) -> bool:
    """Whether a logged value is the expected one (floats within rounding)."""
    if isinstance(expected, float) or isinstance(logged, float):
        try:
            return math.isclose(float(expected), float(logged), rel_tol=1e-9, abs_tol=1e-12)
        except (TypeError, ValueError):
            return False
    return bool(expected == logged)


class StartupJournal:
    """The server's output since the restart, with checks a test can make on it."""

    def __init__(self, lines: Sequence[str], *, where: str = "") -> None:
        self.lines: list[str] = list(lines)
        self.where = where

    def __repr__(self) -> str:
        return f"StartupJournal({len(self.lines)} lines{', ' + self.where if self.where else ''})"

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def extend(self, lines: Iterable[str]) -> None:
        self.lines.extend(lines)

    @property
    def ready(self) -> bool:
        return any(READY_LINE in line for line in self.lines)

    def server_args(self) -> dict[str, Any]:
        """The parsed ``server_args`` line of this start; JournalError when it is missing."""
        for line in reversed(self.lines):
            if "server_args=" in line:
                try:
                    return parse_server_args(line)
                except ValueError as exc:
                    raise JournalError(f"{self._at()}unreadable server_args line: {exc}") from None
        raise JournalError(f"{self._at()}no server_args line since the restart")

    def scheduler_limits(self) -> dict[str, int]:
        """``max_total_num_tokens`` and the *effective* ``max_running_requests`` (rank 0)."""
        for line in reversed(self.lines):
            match = _SCHEDULER_LINE.search(line)
            if match:
                return {
                    "max_total_num_tokens": int(match.group(1)),
                    "max_running_requests": int(match.group(2)),
                }
        return {}

    def excerpt(self, around: int | None = None, *, lines: int = 12) -> str:
        """A short excerpt: the last ``lines`` lines, or the ones around index ``around``."""
        if around is None:
            chosen = self.lines[-lines:]
        else:
            chosen = self.lines[max(0, around - lines // 2) : around + lines // 2]
        return "\n".join(chosen)

    def _at(self) -> str:
        return f"{self.where}: " if self.where else ""

    # -- assertions ---------------------------------------------------------------------------

    def expect(self, pattern: str | re.Pattern[str]) -> str:
        """The first line matching ``pattern``; JournalError when none does."""
        __tracebackhide__ = True
        regex = re.compile(pattern) if isinstance(pattern, str) else pattern
        for line in self.lines:
            if regex.search(line):
                return line
        raise JournalError(
            f"{self._at()}no journal line since the restart matches {regex.pattern!r}"
        )

    def forbid(self, pattern: str | re.Pattern[str]) -> None:
        """JournalError naming the first line that matches ``pattern``."""
        __tracebackhide__ = True
        regex = re.compile(pattern) if isinstance(pattern, str) else pattern
        for line in self.lines:
            if regex.search(line):
                raise JournalError(
                    f"{self._at()}forbidden pattern {regex.pattern!r} in journal: {line.strip()}"
                )

    def verify(self, expected: ExpectedJournal) -> dict[str, Any]:
        """Check the startup against ``expected``; returns the parsed ``server_args``.

        Fails with a requested-vs-logged diff when a value differs, when a resolution warning
        SGLang must print is missing, when the scheduler's effective limit exceeds the requested
        one, or when a fatal line is present.
        """
        __tracebackhide__ = True
        fatal = find_fatal(self.lines)
        if fatal is not None:
            raise JournalError(f"{self._at()}{fatal.summary}")
        logged = self.server_args()
        diffs = []
        for key, want in expected.server_args.items():
            if key not in logged:
                diffs.append(f"{key} requested {want!r}, not logged")
            elif not same_value(want, logged[key]):
                diffs.append(f"{key} requested {want!r}, logged {logged[key]!r}")
        if diffs:
            raise JournalError(
                f"{self._at()}{len(diffs)} value(s) in server_args differ from the request "
                f"(after SGLang's resolution rules): " + "; ".join(diffs)
            )
        args_index = max(i for i, line in enumerate(self.lines) if "server_args=" in line)
        before = self.lines[:args_index]
        for warning in expected.warnings:
            if not any(warning in line for line in before):
                raise JournalError(f"{self._at()}expected warning missing: {warning!r}")
        limits = self.scheduler_limits()
        bound = expected.max_running_requests
        if bound is not None and limits and limits["max_running_requests"] > bound:
            raise JournalError(
                f"{self._at()}scheduler runs max_running_requests="
                f"{limits['max_running_requests']}, above the requested {bound}"
            )
        return logged
