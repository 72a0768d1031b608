"""The classifier's rules: which words on a line name which cause of a failed start.

:data:`FATAL_PATTERNS` is the table, most specific rule first, and the fragments it is built from
(a GPU refusal, a model kind refused, a wait for readiness given up, ...) are named here, each
with what it means. They sit apart from the code that reads a record because they change with
every new family of failures while the reading does not, and because they depend on nothing:
every other module of the classifier imports them, and they import none of it.
"""

from __future__ import annotations

import re

#: The line SGLang logs once the server serves. The rules read it too: a refusal raised after it
#: is a state check while serving, not the config refused.
READY_LINE = "The server is fired up and ready to roll!"

#: A process killed by signal 9 (the kernel's OOM killer, most often, when no other line says),
#: or stopped by a SIGTERM it did not send itself (an operator, a supervisor): from outside, either
#: way, as a child's exit code says it (``-15``).
_KILLED = (
    r"(?i:\b(exit|return) ?code[:=]? ?-(9|15)\b)|status=(9/KILL|15/TERM)"
    r"|(?<!-9 )\(SIGKILL\)|^Killed$|\d Killed\s|signal 9\b|signal: killed"
    r"|(?i:\bexited with (exit )?code:? ?137\b)"
)

#: A kernel, backend or dtype refusing the GPU it runs on (``Unsupported arch``, ``not supported
#: on sm_120``, ``requires compute capability 9.0``, ``only supports Hopper GPUs``), or the CPU
#: (``Fp8LinearMethod on CPU requires that CPU has AMX support``, ``only works on AMX``): the
#: config chose something this machine cannot run, so it is an invalid config, named only on an
#: exception line or its continuation (a warning with the same words is
#: :data:`.reading._WARNING_ONLY`) since SGLang logs them when it falls back to another kernel by
#: itself.
_GPU_REFUSAL = (
    r"(?i:\bunsupported (gpu |cuda |sm |device |compute )?arch(?!itectures?:)"
    r"|\bunsupported (gpu|device|sm( version)?|compute capability)\b"
    r"|\bnot (supported|available) (on|for) (this |the current |your |the )?"
    r"(gpus?|device|sm_?\d+\w*"
    r"|arch\w*|compute capability|[\w-]+ gpus?)\b"
    r"|\brequires? .*\b(compute capability|sm_?\d{2,3}\w?\b|sm ?\d{2,3}\+?(?!\w)|sm ?>= ?\d{2,3}"
    r"|(hopper|blackwell|ampere|ada)\b)"
    r"|\bonly (supports?|supported on|works on|available on|runs on) .*\b(gpus?|sm_?\d{2,3}\w?"
    r"|sm ?\d{2,3}\+?|hopper|blackwell|ampere|compute capability)(?!\w)"
    r"|\bsm_?\d{2,3}\w? (is |are )?not supported\b"
    r"|\b(does not|doesn't|do not|cannot|can't) (yet )?(support|run on) (this|the current|your)"
    r" (gpu|device|architecture|arch)\b"
    r"|\brequires? (that )?(the |this |your )?(cpu|host|machine|processor)?( has| to have| with)?"
    r" ?(intel )?(amx|avx-?512\w*|avx2|sve2?|neon)\b"
    r"|\b(amx|avx-?512\w*)( support)? (is |are )?not (supported|available|detected)\b"
    r"|\bonly (works|runs|supported) on (intel )?(amx|avx-?512\w*)\b)"
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
#: aftermath of a failure shown before it (:func:`.reading.find_fatal`), never outranking it.
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
    # the KV-cache and transfer libraries SGLang integrates (their connectors' APIs move too)
    "lmcache",
    "nixl",
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

#: CUDA's stream-capture errors (``cudaGetErrorString`` of ``cudaErrorStreamCapture*`` and
#: ``cudaErrorCapturedEvent``, the driver API's ``CUDA_ERROR_STREAM_CAPTURE_*``): an operation a
#: CUDA graph cannot record, made while one was being captured, so a capture failure whatever
#: raised it.
_CAPTURE_ERROR = (
    r"operation not permitted when stream is capturing|operation failed due to a previous error"
    r" during capture|operation would make the legacy stream depend on a capturing blocking stream"
    r"|operation would result in a merge of separate capture sequences"
    r"|capturing stream has unjoined work|dependency created on uncaptured work in another stream"
    r"|capture was not (initiated in this stream|ended in the same stream as it began)"
    r"|attempt to terminate a thread-local capture sequence from another thread"
    r"|operation not permitted on an event last recorded in a capturing stream"
    r"|cudaErrorStreamCapture\w+|cudaErrorCapturedEvent|CUDA_ERROR_STREAM_CAPTURE_\w+"
    r"|CUDA_ERROR_CAPTURED_EVENT|hipErrorStreamCapture\w+|hipErrorCapturedEvent"
)

#: The CUDA runtime's and driver's own words for a device fault or a launch refused
#: (``cudaGetErrorString``/``cuGetErrorString``, printed by torch's ``CUDA error: ...``, Triton's
#: ``Triton Error [CUDA]: ...``, a library's own check macro with no prefix), for the errors whose
#: wording is CUDA's alone; the ones that name another cause (out of memory, no device, an
#: insufficient driver, an invalid device ordinal, stream capture) are in those causes' rules,
#: ahead of this one. The libraries' status codes (cuBLAS, cuDNN, cuSPARSE, cuSOLVER, cuFFT,
#: cuRAND, and ROCm's rocBLAS, hipBLAS(Lt), MIOpen) are the same family.
_CUDA_RUNTIME_ERROR = (
    r"invalid configuration argument|too many resources requested for launch"
    r"|the launch timed out and was terminated|invalid device function|device kernel image is"
    r" invalid|invalid resource handle|an illegal memory access was encountered|misaligned address"
    r"|an illegal instruction was encountered|invalid program counter|hardware stack error"
    r"|uncorrectable ECC error encountered|uncorrectable NVLink error"
    r"|peer access is not supported between these two devices|peer access has not been enabled"
    r"|unspecified launch failure|too many blocks in cooperative launch"
    r"|limit is not supported on this architecture|launch failed because kernel uses unsupported"
    r"|\bCU(BLAS|SPARSE|SOLVER|RAND)_STATUS_\w+|\bCUFFT_(INTERNAL_ERROR|EXEC_FAILED|SETUP_FAILED"
    r"|INVALID_\w+)\b|\b(cublas|cusparse|cusolver|cufft|curand|cuDNN|cudnn) error\b"
    r"|\b(HIPBLAS|HIPBLASLT|HIPSPARSE|HIPSOLVER|ROCBLAS)_STATUS_\w+|\brocblas_status_(?!success)\w+"
    r"|\bmiopenStatus(?!Success)\w+"
)

#: NCCL's own words for its result codes (``ncclGetErrorString``: ``unhandled system error (run
#: with NCCL_DEBUG=INFO for details)``, ``remote process exited or there was a network error``),
#: torch's c10d explanations of them and of its communicators (``NCCL communicator was aborted
#: on rank``, ``Some NCCL operations have failed or timed out``, its watchdog stuck or its
#: heartbeat monitor timed out, a rank's ``ncclUniqueId`` not fetched from the store), its
#: rendezvous store (TCPStore's ``The client socket has timed out after ... while trying to
#: connect to``, a store-based barrier timed out, torchelastic's ``Rendezvous*`` errors), and
#: c10d's check that the ranks call the same collectives (``Detected mismatch between collectives on
#: ranks``, with ``TORCH_DISTRIBUTED_DEBUG=DETAIL``), Gloo, torch's CPU collective backend (``Gloo
#: connectFullMesh failed``, its ``[enforce fail at .../gloo/...]`` checks), and the KV-transfer
#: engines of a disaggregated start (Mooncake's ``Transfer Engine initialization failed``, NIXL's
#: ``NIXL_ERR_*`` statuses): a collective, its rendezvous or the ranks' transfer link failing, as
#: NCCL's own errors are. Gloo's transport errors (``[.../gloo/transport/tcp/pair.cc:N] Connection
#: reset by peer``) are placed by their frames (:mod:`.placement`), not here.
_COLLECTIVE_FAILED = (
    r"unhandled (cuda|system) error \(run with NCCL_DEBUG|invalid (argument|usage) \(run with"
    r" NCCL_DEBUG|please report this issue to the NCCL developers|remote process exited or there"
    r" was a network error|nccl(UnhandledCudaError|SystemError|InternalError|InvalidArgument"
    r"|InvalidUsage|RemoteError|Timeout)\b|NCCL communicator was aborted|\bNCCL_ERROR_\w+"
    r"|The client socket has (timed out after|failed to connect to)"
    r"|Timed out initializing process group in store based barrier"
    r"|\bRendezvous(Timeout|Connection|Closed|State)?Error\b|torch\.distributed\.DistError\b"
    r"|\bGloo connectFullMesh failed|connectFullMesh failed|\[enforce fail at [^\]]*\bgloo/"
    r"|(?i:\bgloo (\w+ )?(error|exception)\b)"
    r"|retrieving ncclUniqueId from \[\d+\] via c10d key-value store"
    r"|Some NCCL operations have failed or timed out|ProcessGroupNCCL's watchdog got stuck"
    r"|Detected mismatch between collectives on ranks"
    r"|Heartbeat monitor timed out|(?i:\bmooncake transfer engine initiali[sz]ation failed)"
    r"|\bNIXL_ERR_\w+"
)

#: Triton's compile failing (``triton.compiler.errors.CompilationError`` and its subclasses,
#: ``triton.runtime.errors.PTXASError``, the older ``Internal Triton PTX codegen error`` and
#: ``` `ptxas` failed with error code```), the driver's own PTX JIT failing (``a PTX JIT
#: compilation failed``), ``ptxas``' and ``nvcc``'s own error lines, ninja's
#: report of a failed step, and torch.compile's (``torch._dynamo.exc.*``, ``torch._inductor.exc.*``:
#: ``CppCompileError``, ``LoweringException``): a kernel compiled at first use did not build.
#: Triton's ``OutOfResources`` is not here: a kernel that built but needs more than the GPU has
#: is a CUDA error.
_JIT_TOOLCHAIN_FAILED = (
    r"\bPTXASError\b|\bPTXAS error\b|Internal Triton PTX codegen error|`ptxas` failed with"
    r"|a PTX JIT compilation failed|CUDA_ERROR_INVALID_PTX"
    r"|^ptxas (fatal|error) *: |\btriton\.compiler\.errors\.\w+|\bCompileTimeAssertionFailure\b"
    r"|\bUnsupportedLanguageConstruct\b|\btorch\._(dynamo|inductor)\.exc\.\w+"
    r"|\b(CppCompileError|CUDACompileError|LoweringException|InvalidCxxCompiler"
    r"|InternalTorchDynamoError)\b"
    r"|\.(cu|cuh|cpp|cc|h|hpp)\(\d+\): (catastrophic )?error: |\d+ errors? detected in the"
    r" compilation of |\bninja: build stopped: subcommand failed|^FAILED: \S+\.o\b"
)

#: A value handed to a native (Rust, through PyO3) function's argument that does not fit it
#: (``argument 'worker_urls': 'NoneType' object cannot be converted to 'Sequence'``): the router's
#: and the kernel bindings' launchers pass the config's values straight through, so the config
#: gave a value of the wrong kind, or none where one is needed.
_ARGUMENT_NOT_CONVERTED = (
    r"\bargument '\w+': '\w+' object (cannot be (converted to|interpreted as)"
    r"|is not an instance of)"
)

#: The server's own limits refusing a request before it serves (its warmup request): a queue
#: that holds none (``The request queue is full.``), a prompt longer than the context or the KV
#: pool allow (``Input length (14 tokens) exceeds the maximum allowed length (2 tokens)``). One
#: request at start-up meets them only when the config set the limit below it.
_LIMIT_REFUSES_ONE_REQUEST = (
    r"^([\w.]+\.)?\w*(Error|Exception): .*(The request queue is full"
    r"|exceeds the maximum allowed length|is longer than the model's context length)"
)

#: A backend the settings chose that lacks what the start asks of it (``'TorchNativeAttnBackend'
#: object has no attribute 'init_cpu_graph_state'``: torch.compile's CPU graph on the torch-native
#: attention backend): a combination that cannot run, as a backend's ``NotImplementedError`` is,
#: not a fault of the code, in whatever phase it is met.
_BACKEND_LACKS = r"^([\w.]+\.)?AttributeError: '\w+Backend' object has no attribute '\w+'"

#: argparse refusing a known flag's value that its type could not read (``argument
#: --extra-metric-labels: invalid loads value: "{'k': 1}"``, a type function's own words
#: ``--cuda-graph-config must be JSON: ...``): the flag is right and its value is the config's,
#: as SGLang's own refusal of text that is not JSON is. The command line's shape stays *bad
#: flag*: a flag the parser does not know or cannot tell apart, one given without its value, two
#: that exclude each other, and a choice outside the release's set (``invalid choice``: most
#: often a choice of another release, as an unknown flag is).
VALUE_NOT_PARSED = (
    r"error: argument -[\w./-]+: (?!invalid choice: |expected (one|at least one|\d+)"
    r" arguments?|ignored explicit argument|not allowed with argument)"
)

#: A value the config names that is not one of the names the runtime knows (``Chat template
#: zephyr.jinja is not a built-in template name``, ``Unknown attention backend: x``): the config
#: gave a name outside the choices, as argparse's ``invalid choice`` says of a flag. Not a model
#: or architecture name (:data:`_NO_IMPLEMENTATION` and the unsupported-model rule come first).
_NOT_A_KNOWN_NAME = (
    r"(?i:\bis not an? (valid|known|built-?in|supported|recogni[sz]ed|available|registered)"
    r" ([\w-]+ ){0,2}(name|choice|option|value|template|backend|mode|format|parser|method"
    r"|algorithm|dtype|kind)s?\b"
    r"|\bunknown ([\w-]+ ){0,2}(backend|parser|template|mode|format|method|algorithm|choice"
    r"|option|dtype|kind)s?\b ?[:'\"`=])"
)

#: A library saying the failure is its own bug (torch's ``INTERNAL ASSERT FAILED ... please
#: report a bug to PyTorch``): a fault of the code, whatever the start was doing when it fired
#: and whatever device words its message quotes.
_CODE_FAULT = re.compile(r"INTERNAL ASSERT FAILED|(?i:\bplease (report|file) (a|this) bug\b)")

#: SGLang's parent saying a child died, as the HTTP server words it (``Received sigquit from a
#: child process``, ``proces`` in older releases; ``SIGQUIT received`` once serving) and as the
#: gRPC server does (``Received SIGQUIT from scheduler process. Scheduler failed, shutting down
#: gRPC server.``): the cause is on the lines before it, and the parent then kills its tree.
_CHILD_DIED = (
    r"Received sigquit from a child proces|SIGQUIT received|Received SIGQUIT from scheduler process"
)

#: A summary that points back at the cause (SGLang's ``Initialization failed. Please see the
#: error messages above``, another engine's ``Engine core initialization failed. See root cause
#: above.``): never the cause itself, the exception or last words before it are.
_SEE_ABOVE = (
    r"Initialization failed\. Please see the error messages above"
    r"|(?i:\b(see|check) (the )?(root cause|stack ?trace|errors?|error messages?|logs?|messages?"
    r"|traceback)( printed| logged| shown)? above\b)"
)

#: A launcher's, router's or harness's own error-level line saying it could not start what it
#: starts (``[Router (Python)] ... - ERROR - Error starting router: ...``, ``Failed to launch
#: server: ...``): printed instead of a traceback, it is the start's last word, a crash unless a
#: more specific rule names what it quotes.
_LAUNCHER_GAVE_UP = (
    r"(?:\bERROR\b|\bCRITICAL\b|\bFATAL\b)\W.*\b(Error (starting|launching|initiali[sz]ing)"
    r"|Failed to (start|launch|initiali[sz]e)) (the )?(router|server|engine|workers?|launcher)\b"
)

#: (pattern, cause) for lines that mean the server will not come up, most specific first: when
#: several lines match, the earliest rule wins (a CUDA-graph capture that ran out of memory is a
#: capture failure; an NCCL watchdog that reports a CUDA error is a CUDA error). The patterns are
#: matched against every line that is not a traceback frame, and against the lines that continue
#: an exception's message (see :func:`.reading.find_fatal`), so a cause SGLang prints on its own
#: continuation line still names the failure.
FATAL_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p), reason)
    for p, reason in (
        (r"Not enough memory\. Please try to increase --mem-fraction-static", "out of memory"),
        (r"(?i:capture cuda graph failed|cuda graph capture failed)", "CUDA graph capture"),
        (_CAPTURE_ERROR, "CUDA graph capture"),
        (
            r"OutOfMemoryError|CUDA out of memory|CUDA error: out of memory|runs out of memory"
            r"|\[Errno 12\] Cannot allocate memory|std::bad_alloc|Unable to allocate \d"
            r"|^MemoryError\b|CUBLAS_STATUS_ALLOC_FAILED|cudaErrorMemoryAllocation"
            r"|\bCU(SPARSE|SOLVER|DNN)_STATUS_ALLOC_FAILED|\bCUFFT_ALLOC_FAILED"
            r"|(?i:\b(cuda|hip)( driver)? error:? out of memory\b)"
            r"|Error \[(CUDA|HIP)\]: out of memory"
            r"|Cuda failure '?out of memory|(?i:not enough (gpu |cuda |device )?memory)"
            r"|killed by the OOM killer|Failed with result 'oom-kill'|Out of memory: Killed process"
            r"|invoked oom-killer|\boom-kill\b|\bOOMKilled\b|hipErrorOutOfMemory"
            r"|CUDA_ERROR_OUT_OF_MEMORY|DefaultCPUAllocator: can't allocate memory"
            r"|Failed to CUDA (calloc|malloc|host alloc) \d+ bytes"
            # the dynamic loader could not map a library into the address space left (a cap on
            # it, ``ulimit -v``): ENOMEM, said or not; a mount that forbids it says EPERM
            r"|failed to map segment from shared object(?!: Operation not permitted)"
            rf"|{_DEVICE_OOM}|{_NO_ROOM_FOR_CACHE}",
            "out of memory",
        ),
        (VALUE_NOT_PARSED, "invalid config"),
        (
            r"error: (unrecognized arguments|ambiguous option|argument --|the following arguments)"
            r"|^\S*(\.py|launch_server|sglang\S*): error: ",
            "bad flag",
        ),
        (
            r"ddress already in use|error while attempting to bind on address|\[Errno 98\]"
            r"|\bEADDRINUSE\b",
            "port in use",
        ),
        (
            r"GatedRepoError|access a gated repo|Cannot access gated repo|401 Client Error"
            r"|Invalid (credentials|username or password)|DisabledRepoError|403 Client Error"
            r"|Access to model \S+ is restricted|is awaiting a review from the repo authors"
            r"|Invalid user token|LocalTokenNotFoundError",
            "model access denied",
        ),
        (
            r"RepositoryNotFoundError|HFValidationError|Repository Not Found"
            r"|is not a local folder and is not a valid model identifier"
            r"|does not appear to have a file named config\.json|LocalEntryNotFoundError"
            r"|Can't load the configuration of|Incorrect path_or_model_id"
            r"|No such file or directory: '\S*config\.json'"
            r"|EntryNotFoundError|RevisionNotFoundError|OfflineModeIsEnabled"
            r"|does not appear to have a file named (?!\S*(tokenizer|\.bin\b|\.safetensors\b))"
            r"|config file at .* is not a valid JSON file|\bHfHubHTTPError: 404\b"
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
            r"|(?i:\bmodel type [`'\"]?\w+[`'\"]? is not (yet )?supported"
            r"(?! (for|with|when|together|in combination|alongside|if|by)\b))"
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
            r"|the provided PTX was compiled with an unsupported toolchain"
            r"|cudaErrorUnsupportedPtxVersion|CUDA_ERROR_UNSUPPORTED_PTX_VERSION"
            r"|forward compatibility was attempted on non supported HW"
            r"|cudaErrorCompatNotSupportedOnDevice|CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE"
            r"|^(\w+\.)*\w+: (HIP error: )?driver version is insufficient for runtime version"
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
            r"|busy or unavailable|cudaErrorDevicesUnavailable|no CUDA-capable device is detected"
            r"|CUDA_ERROR_NO_DEVICE|ProcessGroupNCCL is only supported with GPUs"
            r"|CUDA driver initialization failed, you might not have a CUDA gpu"
            r"|no ROCm-capable device is detected|cudaErrorSystemDriverMismatch"
            r"|CUDA_ERROR_SYSTEM_DRIVER_MISMATCH|CUDA_ERROR_SYSTEM_NOT_READY"
            r"|\b0 active drivers \(\[\]\)\. There should only be one"
            r"|Attempting to deserialize object on a CUDA device but torch\.cuda\.is_available\(\)"
            r"|system has unsupported display driver / cuda driver combination"
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
            rf"|BackendCompilerFailed|InductorError|{_JIT_TOOLCHAIN_FAILED}"
            rf"|{_KERNEL_COMPILER_FAILED}",
            "JIT compile failed",
        ),
        (_MORE_GPUS_THAN_THERE_ARE, "invalid config"),
        (_GPU_REFUSAL, "invalid config"),
        (_ARGUMENT_NOT_CONVERTED, "invalid config"),
        (_NOT_A_KNOWN_NAME, "invalid config"),
        (_LIMIT_REFUSES_ONE_REQUEST, "invalid config"),
        (_BACKEND_LACKS, "invalid config"),
        # the open-file limit reached, said by a C++ library before it aborts (ZeroMQ's
        # ``Too many open files (src/epoll.cpp:38)``) as by Python's EMFILE: the unit's limit
        (r"\bToo many open files\b", "invalid config"),
        (
            r"CUDA error: |illegal memory access|device-side assert|cudaError\w+"
            r"|no kernel image is available|CUBLAS_STATUS_\w+|CUDNN_STATUS_\w+|CUDA driver error"
            r"|unspecified launch failure|misaligned address|an illegal instruction was encountered"
            r"|is not compatible with the current PyTorch installation|Error \[CUDA\]: "
            r"|\bCUDA_ERROR_\w+|HIP error: |\bhipError\w+"
            r"|(?i:\bout of resources?\b|OutOfResources|too many resources requested)"
            rf"|{_CUDA_RUNTIME_ERROR}|{_CHECK_MACRO_FAILED}|{_OTHER_ACCELERATOR_ERROR}",
            "CUDA error",
        ),
        (
            r"(?i:\b[NRH]CCL error\b)|DistBackendError|Watchdog caught collective operation timeout"
            r"|nccl(UnhandledCuda|System|Internal|InvalidUsage|RemoteError)"
            r"|DistStoreError|DistNetworkError|ProcessGroupNCCL\S* .*(timed out|Timeout)"
            r"|\bHccl\w+ failed|\bHCCL_E_\w+|failure detected by watchdog"
            r"|\[E\d{4} [\d:.]+ (\d+ )?ProcessGroup(NCCL|Gloo)\b"
            rf"|{_COLLECTIVE_FAILED}",
            "NCCL",
        ),
        # a soft watchdog (``self.soft=True``, ``--soft-watchdog-timeout``) logs a dump and the
        # server carries on: no cause
        (r"(?i)\bwatchdog timeout\b(?!.*\bself\.soft=true\b)", "watchdog timeout"),
        (
            r"could finish the model loading, but there are other ranks"
            r"|Cannot find any model weights|No model weights found|SafetensorError"
            r"|Error while deserializing header"
            r"|does not appear to have a file named \S+\.(bin|safetensors)"
            r"|(?i:checkpoint) .*(is )?(corrupt|truncated)|MetadataIncompleteBuffer"
            r"|Error\(s\) in loading state_dict|size mismatch for \w"
            r"|File does not contain tensor \S|\bHeaderTooLarge\b|\bInvalidHeaderDeserialization\b"
            r"|PytorchStreamReader failed|Weights only load failed"
            r"|Unable to load weights from pytorch checkpoint file"
            r"|Error no file named \S+.{0,200}? found in directory",
            "model loading",
        ),
        (
            r"Error loading tokenizer|Can't load tokenizer|(?i:tokenizer).* (is )?(invalid|corrupt)"
            r"|data did not match any variant of untagged enum|PyPreTokenizerTypeWrapper"
            r"|EOF while parsing|Failed to load tokenizer"
            r"|Couldn't instantiate the backend tokenizer|Tokenizer class \w+ does not exist"
            r"|could not parse ModelProto from|Not found: \"\S*tokenizer\.model\""
            r"|^Exception: (expected value|trailing characters|invalid type: .*|missing field `\w+`"
            r"|unknown variant `.*|key must be a string|expected `[,:]` or `[}\]]`) at line \d+"
            r" column \d+$",
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
            r"|requires (?!(?i:sm|compute|cc)\b)\w[\w-]*(>=|==)|cannot open shared object file"
            r"|No module named '|^\S*python[\d.]*: No module named \S+$"
            r"|^AttributeError: module '[\w.]+' has no attribute|Torch not compiled with CUDA"
            r"|^AttributeError: '_OpNamespace' '\w+' object has no attribute"
            r"|PackageNotFoundError|DistributionNotFound|distribution was not found"
            r"|: command not found$|executable file not found in \$PATH"
            r"|^\S*sh: (\d+: )?\S+: not found$"
            r"|Unable to initialize backend '|not in the list of known backends"
            r"|VersionConflict|but you have \S+ \S+ which is incompatible"
            r"|compiled with different CUDA (major )?versions|operator \S+::\S+ does not exist"
            r"|No matching distribution found for|Could not find a version that satisfies"
            r"|ResolutionImpossible|Failed building wheel for|exec format error"
            r"|Please make sure you have `\w+` installed in order to use this tokenizer"
            r"|\bTensileLibrary\w*\.dat\b|Could not initialize Tensile host"
            r"|cuDNN version incompatibility|(?i:\bcudnn compatibility issue\b)"
            r"|is already used by a Transformers model|(?i:\bis already registered\b)"
            r"|Could not run 'aten::\w+' with arguments from the '(CUDA|HIP|XPU|NPU|MPS)' backend"
            rf"|{_KERNEL_OP_MISMATCH}",
            "broken install",
        ),
        (
            r"Max retries exceeded with url|Temporary failure in name resolution"
            r"|We couldn't connect to|Network is unreachable|ConnectTimeout|ConnectionRefusedError"
            r"|ReadTimeoutError|SSLError|ProxyError|Cannot assign requested address"
            r"|429 Client Error|Too Many Requests|\b50[0234] Server Error"
            r"|Connection error, and we cannot find the requested files"
            r"|\bhttpx\.(ConnectError|ReadTimeout|WriteTimeout|PoolTimeout|ReadError|RemoteProtocolError"
            r"|NetworkError|TimeoutException)\b|\brequests\.exceptions\.(ConnectionError|ReadTimeout"
            r"|Timeout|ChunkedEncodingError)\b|Read timed out\. \(read timeout="
            r"|Name or service not known|No route to host|\bNameResolutionError\b",
            "network",
        ),
        (_KILLED, "killed"),
        (r"\b\w+ hit an exception", "crashed"),
        (_SEE_ABOVE, "crashed"),
        (_CHILD_DIED, "crashed"),
        (r"Rank \d+ scheduler (is dead|died during initialization)", "crashed"),
        (r"Subprocess \S+ \(pid=\d+\) crashed|Scheduler PP\d+ TP\d+ crashed: ", "crashed"),
        (_LAUNCHER_GAVE_UP, "crashed"),
        (
            r"Traceback \(most recent call last\):|^terminate called after throwing"
            rf"|Segmentation fault|Fatal Python error|core dumped|{_NATIVE_LAST_WORDS}",
            "crashed",
        ),
    )
)

#: The rule of a wait for readiness given up (:data:`_NEVER_READY`).
_NEVER_READY_RULE = next(i for i, (p, _) in enumerate(FATAL_PATTERNS) if p.pattern == _NEVER_READY)

#: The rule a traceback whose ``Traceback (most recent call last):`` header is not shown (an
#: excerpt that starts at its frames, Ray's relayed task error) counts as: a crash, to be placed.
#: So does an exception line Python printed on its own (untimestamped, with a message): what an
#: uncaught exception leaves when only its last line is kept.
_HEADLESS = len(FATAL_PATTERNS) - 1
