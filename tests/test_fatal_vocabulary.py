"""The libraries' own error vocabulary, named by the cause troubleshooting.md gives it.

Each message is the library's own text (the source it comes from is named by its family), put in
a small record of the kind an SGLang start leaves: a scheduler's traceback through SGLang's own
code, the exception, the parent's ``Received sigquit``. The point is that a new wording of a known
library lands in its category, not in the generic *crashed*.
"""

from __future__ import annotations

import pytest

from pytest_sglang.lifecycle.journal import find_fatal, traceback_complete

SCHED = "[2026-12-05 10:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):"
SIGQUIT = "[2026-12-05 10:00:01] Received sigquit from a child process. It usually means the child failed."


def record(exception: str, *frames: str) -> list[str]:
    """A failed start whose scheduler raised ``exception`` under ``frames`` (outermost first)."""
    return [
        SCHED,
        '  File "/x/sglang/srt/managers/scheduler.py", line 3000, in run_scheduler_process',
        "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank)",
        *frames,
        exception,
        "",
        SIGQUIT,
    ]


def reason_of(exception: str, *frames: str) -> str | None:
    """The cause the classifier names for ``record(exception, *frames)``."""
    fatal = find_fatal(record(exception, *frames))
    return None if fatal is None else fatal.reason


# cudaGetErrorString / hipGetErrorString (the HIP runtime's table gives CUDA's spelling of each
# hipError_t), printed by torch as ``CUDA error: <string>``, by Triton as ``Triton Error [CUDA]:``,
# by a library's check macro with no prefix.
CUDA_RUNTIME = [
    "torch.AcceleratorError: CUDA error: invalid configuration argument",
    "RuntimeError: CUDA error: too many resources requested for launch",
    "RuntimeError: CUDA error: the launch timed out and was terminated",
    "RuntimeError: invalid device function",
    "RuntimeError: Triton Error [CUDA]: device kernel image is invalid",
    "RuntimeError: invalid resource handle",
    "RuntimeError: misaligned address",
    "RuntimeError: an illegal instruction was encountered",
    "RuntimeError: CUDA error: uncorrectable ECC error encountered",
    "RuntimeError: peer access is not supported between these two devices",
    "RuntimeError: unspecified launch failure",
    "RuntimeError: too many blocks in cooperative launch",
    "RuntimeError: HIP error: invalid device function",
    # cuBLAS / cuSPARSE / cuSOLVER / cuDNN statuses as torch reports them (ATen's CUDA checks)
    "RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasGemmEx( ... )`",
    "RuntimeError: cusparse error: CUSPARSE_STATUS_INTERNAL_ERROR",
    "RuntimeError: cusolver error: CUSOLVER_STATUS_EXECUTION_FAILED",
    "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_SUPPORTED. This error may appear if you passed in",
    # ROCm's libraries
    "RuntimeError: hipblaslt error: HIPBLAS_STATUS_NOT_SUPPORTED",
    "RuntimeError: rocblas_status_internal_error",
]


# The same tables: the stream-capture errors (cudaErrorStreamCapture*, cudaErrorCapturedEvent).
CAPTURE = [
    "RuntimeError: CUDA error: operation not permitted when stream is capturing",
    "RuntimeError: CUDA error: operation failed due to a previous error during capture",
    "RuntimeError: capturing stream has unjoined work",
    "RuntimeError: operation would make the legacy stream depend on a capturing blocking stream",
    "RuntimeError: CUDA error: operation not permitted on an event last recorded in a capturing "
    "stream",
]


@pytest.mark.parametrize(
    ("exception", "reason"),
    [
        # the runtime's strings that name another cause than a device fault
        ("RuntimeError: CUDA error: no CUDA-capable device is detected", "no GPU"),
        (
            "RuntimeError: CUDA driver initialization failed, you might not have a CUDA gpu.",
            "no GPU",
        ),
        (
            "RuntimeError: CUDA error: the provided PTX was compiled with an unsupported toolchain.",
            "driver too old",
        ),
        (
            "RuntimeError: CUDA error: forward compatibility was attempted on non supported HW",
            "driver too old",
        ),
        ("RuntimeError: CUDA driver error: out of memory", "out of memory"),
        ("RuntimeError: Triton Error [CUDA]: out of memory", "out of memory"),
        ("RuntimeError: CUDA error: invalid device ordinal", "invalid config"),
        # torch's ProcessGroupNCCL constructor (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp)
        ("ValueError: ProcessGroupNCCL is only supported with GPUs, no GPUs found!", "no GPU"),
    ],
)
def test_runtime_strings_that_name_another_cause_keep_it(exception: str, reason: str) -> None:
    assert reason_of(exception) == reason


# ncclGetErrorString (NVIDIA/nccl), torch's c10d (NCCLUtils / ProcessGroupNCCL.cpp, socket.cpp,
# distributed_c10d.py, torch.distributed.elastic.rendezvous.api), and Gloo as torch wraps it
# (ProcessGroupGloo.cpp's ``Gloo connectFullMesh failed with ...``, gloo/common/logging.h's
# ``[enforce fail at ...]``).
COLLECTIVE = [
    "RuntimeError: unhandled system error (run with NCCL_DEBUG=INFO for details)",
    "RuntimeError: remote process exited or there was a network error",
    "RuntimeError: internal error - please report this issue to the NCCL developers",
    "RuntimeError: invalid usage (run with NCCL_DEBUG=WARN for details)",
    "torch.distributed.DistBackendError: NCCL communicator was aborted on rank 1. Original reason"
    " for failure was: ...",
    "torch.distributed.DistNetworkError: The client socket has timed out after 600000ms while "
    "trying to connect to (10.0.0.1, 29500).",
    "RuntimeError: Timed out initializing process group in store based barrier on rank 0, for key:"
    " store_based_barrier_key:1 (world_size=2, num_workers_joined=1, timeout=0:30:00)",
    "torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError",
    "RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/"
    "pair.cc:144] no error",
    "RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:83] ifa != "
    "nullptr. Unable to find address for: eth0",
]


def test_an_unknown_error_in_a_process_group_setup_or_collective_is_nccl() -> None:
    """c10d's TCPStore and Gloo's transport raise in their own words (``Socket Timeout``, a
    transport timeout); under ``init_process_group`` or a barrier, their frames say what failed.
    A connection refused there is the rendezvous, not a download."""
    setup = (
        '  File "/x/sglang/srt/distributed/parallel_state.py", line 1200, in '
        "init_distributed_environment",
        "    torch.distributed.init_process_group(",
        '  File "/x/torch/distributed/distributed_c10d.py", line 1500, in init_process_group',
        "    store, rank, world_size = next(rendezvous_iterator)",
    )
    assert reason_of("RuntimeError: Socket Timeout", *setup) == "NCCL"
    assert reason_of("ConnectionRefusedError: [Errno 111] Connection refused", *setup) == "NCCL"
    barrier = (
        '  File "/x/torch/distributed/distributed_c10d.py", line 4000, in barrier',
        "    work.wait()",
    )
    timeout = (
        "RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out "
        "waiting 1800000ms for recv operation to complete"
    )
    assert reason_of(timeout, *barrier) == "NCCL"
    # the same words with no such frame are not placed there
    assert reason_of("RuntimeError: Socket Timeout") == "crashed"


# Triton (python/triton/runtime/errors.py: PTXASError's ``PTXAS error: ...``; the older
# ``Internal Triton PTX codegen error``; python/triton/compiler/errors.py), ptxas/nvcc/ninja's own
# lines, torch.compile (torch/_dynamo/exc.py, torch/_inductor/exc.py), the driver's PTX JIT.
JIT = [
    "triton.runtime.errors.PTXASError: PTXAS error: Internal Triton PTX codegen error",
    "RuntimeError: Internal Triton PTX codegen error: ",
    "ptxas fatal   : Value 'sm_103a' is not defined for option 'gpu-name'",
    "triton.compiler.errors.CompileTimeAssertionFailure: at 10:4:",
    "torch._dynamo.exc.Unsupported: call_function BuiltinVariable(print) [ConstantVariable(str)] {}",
    "torch._dynamo.exc.TorchRuntimeError: Failed running call_function <built-in function add>",
    "torch._inductor.exc.CppCompileError: C++ compile error",
    "torch._inductor.exc.LoweringException: AssertionError: ",
    '/tmp/jit/kernel.cu(12): error: identifier "foo" is undefined',
    '1 error detected in the compilation of "/tmp/jit/kernel.cu".',
    "RuntimeError: ninja: build stopped: subcommand failed.",
    "RuntimeError: CUDA error: a PTX JIT compilation failed",
]


#: Each family's words with the cause troubleshooting.md gives the family.
BY_CAUSE = [
    *((exception, "CUDA error") for exception in CUDA_RUNTIME),
    *((exception, "CUDA graph capture") for exception in CAPTURE),
    *((exception, "NCCL") for exception in COLLECTIVE),
    *((exception, "JIT compile failed") for exception in JIT),
]


@pytest.mark.parametrize(("exception", "reason"), BY_CAUSE)
def test_each_librarys_own_words_name_its_familys_cause(exception: str, reason: str) -> None:
    assert reason_of(exception) == reason


def test_tritons_out_of_resources_stays_a_cuda_error() -> None:
    """troubleshooting.md: a kernel that needs more than the GPU has is a CUDA error."""
    message = (
        "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 262144, "
        "Hardware limit: 232448. Reducing block sizes or `num_stages` may help."
    )
    assert reason_of(message) == "CUDA error"


def test_an_unknown_error_in_a_compilers_code_is_a_jit_compile_failure() -> None:
    """Raised in Triton's compiler, torch's extension builder or a JIT builder, with no phase
    that names it, an exception no rule knows is the compile failing."""
    triton = (
        '  File "/x/triton/compiler/compiler.py", line 300, in compile',
        "    next_module = compile_ir(module, metadata)",
    )
    assert reason_of("KeyError: 'sm_120a'", *triton) == "JIT compile failed"
    flashinfer = (
        '  File "/x/flashinfer/jit/core.py", line 120, in build_and_load',
        "    self.build(verbose)",
    )
    assert reason_of("subprocess.TimeoutExpired: Command 'ninja' timed out", *flashinfer) == (
        "JIT compile failed"
    )
    # Triton's runtime, through which every launch passes, is no compiler
    runtime = (
        '  File "/x/sglang/srt/layers/attention/triton_ops/decode_attention.py", line 80, in f',
        "    _fwd_kernel[grid](q, k)",
        '  File "/x/triton/runtime/jit.py", line 330, in <lambda>',
        "    return lambda *args, **kwargs: self.run(grid=grid, *args, **kwargs)",
    )
    assert reason_of("AttributeError: 'NoneType' object has no attribute 'stride'", *runtime) == (
        "crashed"
    )


def test_a_phase_outranks_the_library_that_raised() -> None:
    """Inside a CUDA-graph capture, an unknown error in Triton's compiler is how the capture
    failed, as a CUDA error there is."""
    lines = [
        "[2026-12-05 10:00:00 TP0] Capture cuda graph begin. This can take up to several minutes.",
        *record(
            "KeyError: 'sm_120a'",
            '  File "/x/triton/compiler/compiler.py", line 300, in compile',
            "    next_module = compile_ir(module, metadata)",
        ),
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.reason == "CUDA graph capture"


# huggingface_hub (src/huggingface_hub/errors.py), transformers (tokenization_utils_fast.py,
# models/auto/tokenization_auto.py, modeling_utils.py), sentencepiece, safetensors, torch.load.
@pytest.mark.parametrize(
    ("exception", "reason"),
    [
        ("huggingface_hub.errors.DisabledRepoError: 403 Client Error.", "model access denied"),
        (
            "requests.exceptions.HTTPError: 403 Client Error: Forbidden for url: "
            "https://huggingface.co/api/models/org/model",
            "model access denied",
        ),
        (
            "huggingface_hub.errors.OfflineModeIsEnabled: Cannot reach "
            "https://huggingface.co/api/models/org/model: offline mode is enabled.",
            "model not found",
        ),
        ("httpx.ConnectError: [Errno 111] Connection refused", "network"),
        (
            "requests.exceptions.ReadTimeout: HTTPSConnectionPool(host='huggingface.co', port=443):"
            " Read timed out. (read timeout=10)",
            "network",
        ),
        ("socket.gaierror: [Errno -2] Name or service not known", "network"),
        (
            "ValueError: Couldn't instantiate the backend tokenizer from one of: (1) a `tokenizers` "
            "library serialization file,",
            "tokenizer",
        ),
        (
            "ValueError: Tokenizer class LlamaTokenizerX does not exist or is not currently "
            "imported.",
            "tokenizer",
        ),
        (
            "RuntimeError: Internal: could not parse ModelProto from /m/tokenizer.model",
            "tokenizer",
        ),
        (
            "ValueError: This tokenizer cannot be instantiated. Please make sure you have "
            "`sentencepiece` installed in order to use this tokenizer.",
            "broken install",
        ),
        (
            "safetensors_rust.SafetensorError: File does not contain tensor "
            "model.embed_tokens.weight",
            "model loading",
        ),
        (
            "RuntimeError: PytorchStreamReader failed reading zip archive: failed finding central "
            "directory",
            "model loading",
        ),
        (
            "OSError: Error no file named pytorch_model.bin, model.safetensors, tf_model.h5, "
            "model.ckpt.index or flax_model.msgpack found in directory /m.",
            "model loading",
        ),
        (
            "RuntimeError: The server socket has failed to listen on any local network address. "
            "port: 29500, useIpv6: 0, code: -98, name: EADDRINUSE, message: address already in use",
            "port in use",
        ),
    ],
)
def test_the_hubs_and_loaders_words_name_their_cause(exception: str, reason: str) -> None:
    assert reason_of(exception) == reason


def test_a_warning_that_quotes_a_cuda_error_is_not_a_cause() -> None:
    """SGLang goes on without custom all-reduce when peer access is missing, and says how to
    silence the warning: the CUDA string it quotes is no failure."""
    lines = [
        "[2026-12-05 10:00:00 TP1] Setup Custom allreduce failed with CUDART error: peer access is "
        "not supported between these two devices. To silence this warning, specify "
        "--disable-custom-all-reduce explicitly.",
        "[2026-12-05 10:00:05] The server is fired up and ready to roll!",
    ]
    assert find_fatal(lines) is None


def test_a_code_fault_in_sglang_stays_a_crash() -> None:
    """An ``AttributeError`` or ``TypeError`` in SGLang's own code names no library."""
    frames = (
        '  File "/x/sglang/srt/model_executor/model_runner.py", line 500, in init_memory_pool',
        "    self.token_to_kv_pool.foo()",
    )
    assert reason_of(
        "AttributeError: 'MHATokenToKVPool' object has no attribute 'foo'", *frames
    ) == ("crashed")
    assert reason_of(
        "TypeError: unsupported operand type(s) for +: 'int' and 'NoneType'", *frames
    ) == ("crashed")


@pytest.mark.parametrize(
    ("exception", "reason"),
    [
        # torch's ProcessGroupNCCL.cpp: the store fetch of a communicator's id, the watchdog
        (
            "torch.distributed.DistBackendError: [1] is setting up NCCL communicator and retrieving"
            " ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got "
            "error: Socket Timeout",
            "NCCL",
        ),
        (
            "RuntimeError: Some NCCL operations have failed or timed out. Due to the asynchronous "
            "nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete "
            "data.",
            "NCCL",
        ),
        # huggingface_hub's errors.py / utils/_http.py
        (
            "huggingface_hub.errors.GatedRepoError: 403 Client Error. Your request to access model"
            " org/model is awaiting a review from the repo authors.",
            "model access denied",
        ),
        (
            "huggingface_hub.errors.LocalTokenNotFoundError: Token is required (`token=True`), but "
            "no token found.",
            "model access denied",
        ),
        # the HIP runtime's spellings (hipGetErrorString)
        ("RuntimeError: HIP error: no ROCm-capable device is detected", "no GPU"),
        (
            "RuntimeError: HIP error: driver version is insufficient for runtime version",
            "driver too old",
        ),
        # Triton's runtime/driver.py when no GPU driver is active
        ("RuntimeError: 0 active drivers ([]). There should only be one.", "no GPU"),
        # serde_json's errors, as the tokenizers library raises them reading tokenizer.json
        ("Exception: expected value at line 1 column 1", "tokenizer"),
        ("Exception: trailing characters at line 3 column 2", "tokenizer"),
        # a name outside the ones the runtime knows, as argparse's ``invalid choice`` is
        (
            "RuntimeError: Chat template configs/zephyr.jinja is not a built-in template name",
            "invalid config",
        ),
        ("RuntimeError: Unknown attention backend: 'flashmla3'", "invalid config"),
        # a configuration class registered by two packages whose releases do not go together
        (
            "ValueError: '<class 'sglang.srt.configs.qwen2_5_vl_config.Qwen2_5_VLConfig'>' is "
            "already used by a Transformers model.",
            "broken install",
        ),
        # a GPU generation asked for as SM>=NN (FlashAttention 3's backend check), not a package
        (
            "AssertionError: FlashAttention v3 Backend requires SM>=80 and SM<=90. Please use "
            "`--attention-backend flashinfer`.",
            "invalid config",
        ),
        ("ImportError: This model requires transformers>=4.57.0", "broken install"),
        ("RuntimeError: The fused MoE kernel does not support this GPU", "invalid config"),
        # a torch built without the backend the start runs on
        (
            "NotImplementedError: Could not run 'aten::empty_strided' with arguments from the "
            "'CUDA' backend.",
            "broken install",
        ),
        # huggingface_hub's HTTP error for a repo or file that is not there
        (
            "huggingface_hub.errors.HfHubHTTPError: 404 Client Error: Not Found for url: "
            "https://huggingface.co/api/models/org/model",
            "model not found",
        ),
    ],
)
def test_more_of_the_libraries_words_name_their_cause(exception: str, reason: str) -> None:
    assert reason_of(exception) == reason


@pytest.mark.parametrize(
    ("exception", "reason"),
    [
        # SGLang's (and vLLM's) Mooncake connector when its engine cannot start (an RDMA device)
        ("RuntimeError: Mooncake Transfer Engine initialization failed.", "NCCL"),
        # torch/backends/cudnn/__init__.py: another cuDNN loaded ahead of the bundled one
        (
            "RuntimeError: cuDNN version incompatibility: PyTorch was compiled  against (9, 8, 0) "
            "but found runtime version (9, 5, 1).",
            "broken install",
        ),
        # torch/serialization.py on a host where CUDA is not available
        (
            "RuntimeError: Attempting to deserialize object on a CUDA device but "
            "torch.cuda.is_available() is False. If you are running on a CPU-only machine, ...",
            "no GPU",
        ),
    ],
)
def test_transfer_engines_and_torchs_own_setup_checks_name_their_cause(
    exception: str, reason: str
) -> None:
    assert reason_of(exception) == reason


@pytest.mark.parametrize(
    ("exception", "reason"),
    [
        # c10d's collective fingerprint check (TORCH_DISTRIBUTED_DEBUG=DETAIL):
        # torch/csrc/distributed/c10d/ProcessGroupWrapper.cpp
        ("RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running", "NCCL"),
        # SGLang's own check of torch against the cuDNN it loads (server_args.py)
        ("RuntimeError: PyTorch 2.9.1 & CuDNN Compatibility Issue Detected", "broken install"),
        # a GPU refused in "not available" words (a quantization kernel for an older GPU)
        ("RuntimeError: FP4 is not available on this device", "invalid config"),
        # rocBLAS without the Tensile kernels of this GPU's arch (rocBLAS's own message)
        (
            "RuntimeError: rocBLAS error: Cannot read TensileLibrary_lazy_gfx90a.dat",
            "broken install",
        ),
    ],
)
def test_wordings_of_c10d_sglangs_checks_and_rocblas_name_their_cause(
    exception: str, reason: str
) -> None:
    assert reason_of(exception) == reason


def test_a_launchers_own_error_line_is_the_cause_and_a_native_argument_refused_is_the_config() -> (
    None
):
    """sglang-router's launcher logs its failure and exits, with no traceback: that line is the
    cause, and PyO3's refusal of a value for a Rust function's argument is the config's value."""
    lines = [
        "$ python -m sglang_router.launch_router",
        "[Router (Python)] 2025-01-09 00:28:10 - ERROR - Error starting router: argument"
        " 'worker_urls': 'NoneType' object cannot be converted to 'Sequence'",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.reason == "invalid config"
    lines[1] = "[Router (Python)] 2025-01-09 00:28:10 - ERROR - Error starting router: bad things"
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.reason == "crashed" and "bad things" in fatal.line
    # the same words at info level, or about something else, are not a failed start
    assert find_fatal(["[Router] - INFO - Error starting router is retried"]) is None


def test_the_last_words_before_a_summary_the_parent_raises_itself() -> None:
    """``RuntimeError: Rank 0 scheduler is dead`` ends the parent's own traceback: the native
    library's line printed just before that traceback began is the cause."""
    lines = [
        "[2025-03-14 08:20:20 TP0] Load weight begin. avail mem=63.72 GB",
        "Error: the device's kernel library could not be read.",
        "Traceback (most recent call last):",
        '  File "/sgl-workspace/sglang/python/sglang/launch_server.py", line 14, in <module>',
        "    launch_server(server_args)",
        '  File "/sgl-workspace/sglang/python/sglang/srt/entrypoints/engine.py", line 612, in'
        " _launch_subprocesses",
        "    raise RuntimeError(",
        "RuntimeError: Rank 0 scheduler is dead. Please check if there are relevant logs.",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.reason == "crashed"
    assert "kernel library could not be read" in fatal.line


#: Messages no rule of the classifier knows, in words an engineer reads the family from
#: (:mod:`pytest_sglang.lifecycle.fatal.words`): each would otherwise be a bare *crashed*.
UNKNOWN_WORDS = [
    ("RuntimeError: the staging buffer ran out of device memory", "out of memory"),
    ("RuntimeError: ptxas exited with status 255 for kernel fused_topk", "JIT compile failed"),
    ("Exception: module_gemm_a8w8 build failed", "JIT compile failed"),
    ("RuntimeError: version mismatch between the runtime and its kernels", "broken install"),
    ("OSError: libfoo_ops.so.2: wrong ELF class: ELFCLASS32", "broken install"),
    ("RuntimeError: Failed to import the grammar backend's bindings", "broken install"),
    ("RuntimeError: UCX transport could not open an endpoint to the peer", "NCCL"),
    ("RuntimeError: Detected a mismatch between collectives across the ranks", "NCCL"),
    ("RuntimeError: rendezvous round closed before every rank joined", "NCCL"),
    ("RuntimeError: the NPU stream reported an unrecoverable fault", "CUDA error"),
    ("RuntimeError: cuBLASLt heuristic returned no algorithm for this shape", "CUDA error"),
    ("ValueError: --max-lora-rank must be set when --lora-paths is given", "invalid config"),
    ("RuntimeError: FP4 GEMM is not available on this GPU generation", "invalid config"),
    ("RuntimeError: this page size is not supported by the chosen backend", "invalid config"),
    # a value over a maximum the config sets, whichever library's words surround it
    (
        "RuntimeError: Failed: Assertion error /x/nccl_ext/csrc/buffer.cpp:88 'n <= "
        "num_max_tokens_per_rank'",
        "invalid config",
    ),
    ("RuntimeError: the number of UCX endpoints exceeds the maximum of 64", "invalid config"),
    ("OSError: failed while reading the checkpoint shard 3 of 8", "model loading"),
    ("RuntimeError: the tokenizer returned no special tokens", "tokenizer"),
    ("RuntimeError: model directory /models/x not found on this node", "model not found"),
]


@pytest.mark.parametrize(("exception", "reason"), UNKNOWN_WORDS)
def test_an_unknown_message_is_named_by_its_words(exception: str, reason: str) -> None:
    assert reason_of(exception) == reason


@pytest.mark.parametrize(
    "exception",
    [
        # the code's own mistakes, whatever words they quote
        "AttributeError: 'CudaGraphRunner' object has no attribute 'nccl_group'",
        "TypeError: launch_gpu_kernel() missing 1 required positional argument: 'stream'",
        "KeyError: 'cuda:0'",
        "NameError: name 'cuda_graph_workspace' is not defined",
        "IndexError: list index out of range",
        # a device named in a tensor's place is no device fault
        "RuntimeError: Expected all tensors to be on the same device, but found cuda:0 and cpu!",
        # a library's report of its own bug
        'RuntimeError: handles_.empty() INTERNAL ASSERT FAILED at "../c10/cuda/CUDAGraph.cpp":90,'
        " please report a bug to PyTorch.",
        # no family's words
        "RuntimeError: result expired",
    ],
)
def test_a_code_mistake_or_a_message_without_family_words_stays_a_crash(exception: str) -> None:
    assert reason_of(exception) == "crashed"


def test_a_rule_a_frame_or_a_phase_outranks_the_words() -> None:
    """The words are the last reading: a phase the start was in, or a frame a hint knows, says
    more than a message's vocabulary."""
    capture = (
        '  File "/x/sglang/srt/model_executor/cuda_graph_runner.py", line 300, in capture',
        "    self.capture_one_batch_size(bs, forward)",
    )
    assert reason_of("RuntimeError: UCX endpoint closed", *capture) == "CUDA graph capture"
    loading = [
        "[2026-12-05 10:00:00 TP0] Load weight begin. avail mem=70.00 GB",
        *record("RuntimeError: rendezvous closed while fetching the tensor"),
    ]
    fatal = find_fatal(loading)
    assert fatal is not None and fatal.reason == "model loading"


def test_a_summary_that_points_above_is_never_the_cause() -> None:
    """``... initialization failed. See root cause above.`` (another engine's words for SGLang's
    ``Please see the error messages above``) names the lines before it."""
    lines = [
        "[2026-12-05 10:00:00] Load weight begin. avail mem=70.00 GB",
        "E1205 10:00:01.000 12 ucx_utils.cpp:537] UCX endpoint create failed: no such device",
        "RuntimeError: Engine core initialization failed. See root cause above.",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.index == 1 and fatal.reason == "NCCL"
    lines[2] = "RuntimeError: Worker failed, please check the stack trace above for the root cause"
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.index == 1 and fatal.reason == "NCCL"


def test_a_line_logged_at_error_level_is_a_last_word_before_a_summary() -> None:
    """Timestamped or not, the error-level line just before ``Rank 0 scheduler is dead`` is the
    process's last word (and named by its words), never the summary."""
    lines = [
        "[2026-12-05 10:00:00 TP0] Load weight begin. avail mem=70.00 GB",
        "[2026-12-05 10:00:01 TP0] ERROR: could not read weights: shard 2 of 4 is missing",
        "[2026-12-05 10:00:02 TP0] INFO: releasing the memory pool",
        "[2026-12-05 10:00:05] Rank 0 scheduler is dead. Please check if there are relevant logs.",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.index, fatal.reason) == (1, "model loading")
    # an info line is no last word: the summary stays the cited line
    lines[1] = "[2026-12-05 10:00:01 TP0] INFO: reading shard 2 of 4"
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.index == 3


def test_a_check_in_the_serving_loop_and_an_operators_own_check_are_crashes() -> None:
    """An ``AssertionError`` raised under the scheduler's event loop is a batch being run (the
    warmup's), not the config refused; an operator's ``The bias should be 1D`` is its check of a
    tensor, not a setting that must be something."""
    loop = (
        '  File "/x/sglang/srt/managers/scheduler.py", line 1012, in event_loop_overlap',
        "    self.process_batch_result(tmp_batch, tmp_result)",
    )
    assert reason_of("AssertionError: output ids out of step", *loop) == "crashed"
    assert reason_of("RuntimeError: The bias should be 1D") == "crashed"
    assert reason_of("RuntimeError: page_size must be 1 for this backend") == "invalid config"


def test_a_librarys_class_built_with_an_argument_it_no_longer_takes_is_an_install() -> None:
    frames = (
        '  File "/x/sglang/srt/mem_cache/storage/lmcache/lmc_radix_cache.py", line 103, in '
        "__init__",
        "    self.lmcache_connector = LMCacheLayerwiseConnector(",
    )
    exception = (
        "TypeError: LMCacheLayerwiseConnector.__init__() got an unexpected keyword argument "
        "'tp_group'"
    )
    assert reason_of(exception, *frames) == "broken install"
    # SGLang's own class built wrongly stays a fault of its code
    own = (frames[0], "    self.cache = RadixCache(")
    assert reason_of(
        "TypeError: RadixCache.__init__() got an unexpected keyword argument 'x'", *own
    ) == ("crashed")


def test_the_last_words_are_the_error_line_before_a_librarys_dump() -> None:
    """A native library prints the object it failed on after its error line: the error line is
    the last word, not the dump's last field."""
    lines = [
        "[2026-12-05 10:00:00 TP0] Capture cuda graph end. Time elapsed: 3.0 s",
        "Error: Failed to initialize the TMA descriptor 801",
        "format         9",
        "dim            4",
        "oobFill        0",
        "[2026-12-05 10:00:05] Rank 0 scheduler is dead. Please check if there are relevant logs.",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.index == 1


def test_a_program_embedding_sglang_with_arguments_this_release_does_not_take() -> None:
    """A harness calling SGLang's API (``Runtime``, ``Engine``, ``ServerArgs``) with arguments
    this release does not take was written for another release: a broken install. The same
    misfit with only SGLang's own frames is a fault of its code."""
    lines = [
        "2024-06-02 00:26:10 | INFO | model_worker | args: Namespace(host='0.0.0.0', "
        "trust_remote_code=True)",
        "2024-06-02 00:26:10 | ERROR | stderr | Traceback (most recent call last):",
        '2024-06-02 00:26:10 | ERROR | stderr |   File "/home/u/FastChat/fastchat/serve/'
        'sglang_worker.py", line 290, in <module>',
        "2024-06-02 00:26:10 | ERROR | stderr |     runtime = sgl.Runtime(",
        '2024-06-02 00:26:10 | ERROR | stderr |   File "/x/site-packages/sglang/srt/server.py", '
        "line 394, in __init__",
        "2024-06-02 00:26:10 | ERROR | stderr |     self.server_args = ServerArgs(*args, "
        "log_level=log_level, **kwargs)",
        "2024-06-02 00:26:10 | ERROR | stderr | TypeError: sglang.srt.server_args.ServerArgs() "
        "got multiple values for keyword argument 'log_level'",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == ("broken install", 6)
    own = [lines[1], *lines[4:]]
    fatal = find_fatal(own)
    assert fatal is not None and fatal.reason == "crashed"


def test_nccls_failed_allocation_is_out_of_memory() -> None:
    """NCCL's ``Failed to CUDA calloc N bytes`` (its alloc.h), printed under ``Last error:`` after
    the ``ncclUnhandledCudaError``, is the device out of memory, not a collective failing."""
    exception = (
        "torch.distributed.DistBackendError: NCCL error in: NCCLUtils.cpp:76, unhandled cuda error"
    )
    lines = record(exception)
    lines[4:4] = [
        "ncclUnhandledCudaError: Call to CUDA function failed.",
        "Last error:",
        "Failed to CUDA calloc 67108864 bytes",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.reason == "out of memory"
    assert "Failed to CUDA calloc" in fatal.summary


def test_a_summary_quoting_a_childs_traceback_cites_the_childs_exception() -> None:
    """SGLang 0.2's parent raises ``Initialization failed. controller_init_state: Traceback ...``
    with its child's traceback in the message: the child's exception, printed after it, is the
    cause, and the record is not complete until it is there."""
    lines = [
        "Traceback (most recent call last):",
        '  File "/x/sglang/srt/server.py", line 376, in launch_server',
        "    raise RuntimeError(",
        "RuntimeError: Initialization failed. controller_init_state: Traceback (most recent call"
        " last):",
        '  File "/x/torch/cuda/__init__.py", line 279, in _lazy_init',
        "    raise RuntimeError(",
        "RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA with "
        "multiprocessing, you must use the 'spawn' start method",
        ", detoken_init_state: init ok",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.index == 6 and fatal.complete
    early = find_fatal(lines[:6])
    assert early is not None and not early.complete


def test_sglangs_own_function_called_wrongly_is_a_crash_in_any_phase() -> None:
    """A call into SGLang's own code that does not fit (a model's layer builder handed an
    argument its lambda does not take) is a fault of the code, even while weights load."""
    loading = (
        '  File "/x/sglang/srt/model_executor/model_runner.py", line 300, in load_model',
        "    self.model = get_model(model_config=self.model_config)",
        '  File "/x/sglang/srt/models/phi3_small.py", line 380, in __init__',
        "    self.start_layer, self.end_layer, self.layers = make_layers(",
    )
    exception = (
        "TypeError: Phi3SmallModel.__init__.<locals>.<lambda>() got an unexpected keyword "
        "argument 'idx'"
    )
    assert reason_of(exception, *loading) == "crashed"


JSON_FRAMES = (
    '  File "/usr/lib/python3.11/json/__init__.py", line 293, in load',
    "    return loads(fp.read(),",
    '  File "/usr/lib/python3.11/json/decoder.py", line 355, in raw_decode',
    '    raise JSONDecodeError("Expecting value", s, err.value) from None',
)


@pytest.mark.parametrize(
    ("frames", "reason"),
    [
        # tokenizer_config.json unreadable: transformers' tokenizer loader read it
        (
            (
                '  File "/v/sglang/srt/utils/hf_transformers/tokenizer.py", line 538, in'
                " get_tokenizer",
                "    tokenizer = _auto_tokenizer_from_pretrained(",
                '  File "/v/transformers/models/auto/tokenization_auto.py", line 653, in'
                " get_tokenizer_config",
                "    result = json.load(reader)",
            ),
            "tokenizer",
        ),
        # --json-model-override-args that is not JSON: SGLang's model config parses the value
        (
            (
                '  File "/v/sglang/srt/configs/model_config.py", line 955, in from_server_args',
                "    return ModelConfig(",
                '  File "/v/sglang/srt/configs/model_config.py", line 612, in __init__',
                "    json.loads(json_model_override_args)",
            ),
            "invalid config",
        ),
        # the model's config.json unreadable: a path that holds no model (the convention kept)
        (
            (
                '  File "/v/sglang/srt/utils/hf_transformers/config.py", line 200, in get_config',
                "    config = AutoConfig.from_pretrained(",
                '  File "/v/transformers/configuration_utils.py", line 700, in'
                " _dict_from_json_file",
                "    return json.loads(text)",
            ),
            "model not found",
        ),
    ],
    ids=["tokenizer", "override-args", "model-config"],
)
def test_a_decode_error_is_named_by_whose_reading_failed(
    frames: tuple[str, ...], reason: str
) -> None:
    """The innermost frame outside Python's own decoders says whose file or value it was."""
    exception = "json.decoder.JSONDecodeError: Expecting value: line 23 column 17 (char 487)"
    assert reason_of(exception, *frames, *JSON_FRAMES) == reason


@pytest.mark.parametrize(
    "exception",
    [
        "AssertionError: Fp8LinearMethod on CPU requires that CPU has AMX support",
        "ValueError: CPU FP8 KV cache requires Intel AMX support.",
        "RuntimeError: this kernel requires AVX512 support",
        "ValueError: AMX is not supported on this machine",
    ],
)
def test_a_feature_the_cpu_lacks_is_the_config_even_while_weights_load(exception: str) -> None:
    loading = (
        '  File "/v/sglang/srt/model_loader/loader.py", line 1089, in postprocess_weights',
        "    quant_method.process_weights_after_loading(module)",
        '  File "/v/sglang/srt/layers/quantization/fp8.py", line 1291, in'
        " process_weights_after_loading",
        "    assert cpu_has_amx_support()",
    )
    assert reason_of(exception, *loading) == "invalid config"


@pytest.mark.parametrize(
    "exception",
    [
        'AssertionError: {"object":"error","message":"The request queue is full.","type":"503",'
        '"param":null,"code":503}',
        'AssertionError: {"error":{"message":"Input length (14 tokens) exceeds the maximum allowed'
        ' length (2 tokens). Use a shorter input or enable --allow-auto-truncate."}}',
    ],
)
def test_a_warmup_request_refused_by_a_limit_the_config_set_is_the_config(exception: str) -> None:
    lines = [
        "[2026-12-05 10:00:00] Application startup complete.",
        "[2026-12-05 10:00:00] Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)",
        "Traceback (most recent call last):",
        '  File "/v/sglang/srt/entrypoints/http_server.py", line 3300, in _wait_and_warmup',
        "    _execute_server_warmup(server_args)",
        '  File "/v/sglang/srt/entrypoints/http_server.py", line 3250, in _execute_server_warmup',
        '    assert res.status_code == 200, f"{res.text}"',
        exception,
        "[2026-12-05 10:00:02] Initialization failed. warmup error: Traceback (most recent call"
        " last):",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.reason == "invalid config"
    assert fatal.line == exception


def test_a_warmup_error_of_another_kind_stays_a_warmup_failure() -> None:
    lines = [
        "Traceback (most recent call last):",
        '  File "/v/sglang/srt/entrypoints/http_server.py", line 3300, in _wait_and_warmup',
        "    _execute_server_warmup(server_args)",
        'AssertionError: {"object":"error","message":"Internal server error","code":500}',
        "[2026-12-05 10:00:02] Initialization failed. warmup error: Traceback (most recent call"
        " last):",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.reason == "warmup failed"


def test_a_file_a_setting_names_that_is_not_there_is_that_settings() -> None:
    """Read wherever it is read (here the warmup request), a path the logged ``server_args``
    gave that is not there is the config's, named with the setting; a model's is model not
    found."""

    def start(setting: str) -> list[str]:
        return [
            f"[2026-12-05 10:00:00] server_args={{'model_path': '/m', '{setting}': '/srv/nope',"
            " 'tp_size': 1}",
            "Traceback (most recent call last):",
            '  File "/v/sglang/srt/entrypoints/http_server.py", line 2590, in _wait_and_warmup',
            "    if not execute_warmup_func(server_args):",
            '  File "/v/numpy/lib/_npyio_impl.py", line 454, in load',
            '    fid = stack.enter_context(open(os.fspath(file), "rb"))',
            "FileNotFoundError: [Errno 2] No such file or directory: '/srv/nope'",
        ]

    fatal = find_fatal(start("debug_tensor_dump_input_file"))
    assert fatal is not None and fatal.reason == "invalid config"
    assert "(debug_tensor_dump_input_file='/srv/nope', which does not exist)" in fatal.message
    fatal = find_fatal(start("tokenizer_path"))
    assert fatal is not None and fatal.reason == "model not found"
    # a missing file no setting named stays what the frames say
    other = start("debug_tensor_dump_input_file")
    other[-1] = "FileNotFoundError: [Errno 2] No such file or directory: '/tmp/other'"
    fatal = find_fatal(other)
    assert fatal is not None and fatal.reason == "warmup failed"


@pytest.mark.parametrize(
    ("exception", "statement", "reason"),
    [
        (
            "TypeError: 'NoneType' object is not subscriptable",
            "    self.hf_config.architectures[0] in mm_disabled_models",
            "unsupported model",
        ),
        (
            "AttributeError: 'NoneType' object has no attribute 'startswith'",
            "    if self.hf_text_config.model_type.startswith('qwen'):",
            "unsupported model",
        ),
        (
            "TypeError: unsupported operand type(s) for //: 'NoneType' and 'int'",
            "    self.head_dim = self.hf_config.hidden_size // heads",
            "model loading",
        ),
    ],
    ids=["architectures", "model_type", "hidden_size"],
)
def test_a_none_read_from_the_models_config_is_the_key_it_lacks(
    exception: str, statement: str, reason: str, request: pytest.FixtureRequest
) -> None:
    frames = ('  File "/v/sglang/srt/configs/model_config.py", line 699, in __init__', statement)
    fatal = find_fatal(record(exception, *frames))
    assert fatal is not None and fatal.reason == reason
    key = request.node.callspec.id
    assert f"(the model's config.json gives no {key})" in fatal.message


def test_a_none_the_code_reads_elsewhere_stays_its_own_fault() -> None:
    frames = (
        '  File "/v/sglang/srt/managers/scheduler.py", line 900, in init_memory_pool',
        "    self.req_to_token_pool.size[0]",
    )
    assert reason_of("TypeError: 'NoneType' object is not subscriptable", *frames) != (
        "unsupported model"
    )


# The sixteenth batch's families (tests/data/failures/README.md): what a child's death by a signal,
# a refused environment value and a capped address space say, in the real 0.5.23 package's words.
_SITE = "/v/lib/python3.11/site-packages"
_PARENT_READ = [
    "[2026-12-05 12:03:10] Load weight begin. avail mem=20.94 GB",
    "Traceback (most recent call last):",
    f'  File "{_SITE}/sglang/srt/entrypoints/engine.py", line 2018, in _wait_for_scheduler_ready',
    "    data = scheduler_pipe_readers[i].recv()",
    '  File "/usr/lib/python3.11/multiprocessing/connection.py", line 399, in _recv',
    "    raise EOFError",
    "EOFError",
    "",
    "During handling of the above exception, another exception occurred:",
    "",
    "Traceback (most recent call last):",
    f'  File "{_SITE}/sglang/srt/entrypoints/engine.py", line 2029, in _wait_for_scheduler_ready',
    "    raise _scheduler_died_error(i, scheduler_procs[i])",
]


def _scheduler_died(code: int) -> list[str]:
    return [
        *_PARENT_READ,
        f"RuntimeError: Rank 0 scheduler died during initialization (exit code: {code}). If exit "
        "code is -9 (SIGKILL), a common cause is the OS OOM killer. Run `dmesg -T | grep -i oom` "
        "to check.",
    ]


@pytest.mark.parametrize(
    ("code", "reason"), [(-9, "killed"), (-15, "killed"), (-11, "crashed"), (-6, "crashed")]
)
def test_a_child_dead_of_a_signal_is_named_by_the_parents_summary(code: int, reason: str) -> None:
    """The parent's bare ``EOFError`` on the pipe says nothing; the summary it raised while
    handling it says how the child died: killed from outside (SIGKILL, SIGTERM) or by a fault
    of its own (SIGSEGV, SIGABRT)."""
    fatal = find_fatal(_scheduler_died(code))
    assert fatal is not None and fatal.reason == reason
    assert f"(exit code: {code})" in fatal.line


def test_an_environment_value_refused_for_its_default_is_a_warning() -> None:
    warning = (
        f"{_SITE}/sglang/srt/environ.py:83: UserWarning: Invalid value for SGLANG_USE_MLX: "
        '"not-a-value" is not a valid boolean value, using default "False"'
    )
    ready = "[2026-12-05 12:01:58] The server is fired up and ready to roll!"
    lines = [warning, "  warnings.warn(", f"Loading shards: 0/1 [00:00<?, ?it/s]{warning}", ready]
    assert find_fatal(lines) is None


@pytest.mark.parametrize(
    ("said", "reason"), [("", "out of memory"), (": Operation not permitted", "broken install")]
)
def test_a_library_the_address_space_cannot_hold_is_out_of_memory(said: str, reason: str) -> None:
    lines = [
        "Traceback (most recent call last):",
        f'  File "{_SITE}/torch/__init__.py", line 290, in <module>',
        "    from torch._C import *  # noqa: F403",
        f"ImportError: libtorch_python.so: failed to map segment from shared object{said}",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.reason == reason


# The eighteenth batch's families: a division by a setting given 0, a backend that lacks a step.
@pytest.mark.parametrize(
    ("setting", "statement"),
    [
        ("decode_log_interval", "    if self.forward_ct_decode % self.decode_log_interval != 0:"),
        ("pp_size", "    nnodes_per_pp_rank = max(nnodes // parallel.pp_size, 1)"),
    ],
)
def test_a_division_by_a_setting_given_0_is_the_config(setting: str, statement: str) -> None:
    lines = [
        f"[2026-12-05 13:30:00] server_args={{'model_path': '/m', 'nnodes': 1, '{setting}': 0}}",
        "Traceback (most recent call last):",
        f'  File "{_SITE}/sglang/srt/managers/scheduler.py", line 934, in report_decode_stats',
        statement,
        "ZeroDivisionError: integer modulo by zero",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.reason == "invalid config"
    assert f"({setting}=0, a setting the start divides by)" in fatal.message
    # a divisor that no setting gave as 0 stays the code's own fault
    lines[0] = lines[0].replace(f"'{setting}': 0", f"'{setting}': 4")
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.reason != "invalid config"


def _raised(where: str, statement: str, exception: str, dump: str = "") -> list[str]:
    """A record whose exception was raised by ``statement`` in SGLang's module ``where``, after
    the ``server_args`` dump ``dump`` (a dict's text) when one is given."""
    return [
        *([f"[2026-12-05 13:57:45] server_args={dump}"] if dump else []),
        "Traceback (most recent call last):",
        f'  File "{_SITE}/sglang/srt/{where}", line 400, in __init__',
        f"    {statement}",
        exception,
    ]


def test_a_backend_that_lacks_what_the_start_asks_of_it_is_the_config() -> None:
    lines = _raised(
        "model_executor/cpu_graph_runner.py",
        "self.model_runner.attn_backend.init_cpu_graph_state(",
        "AttributeError: 'TorchNativeAttnBackend' object has no attribute 'init_cpu_graph_state'",
    )
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.reason == "invalid config"
    lines[-1] = "AttributeError: 'ModelRunner' object has no attribute 'graph_runner'"
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.reason != "invalid config"


def test_an_empty_value_refused_is_the_setting_given_it() -> None:
    """The nineteenth batch's family: ``--device ''`` refused by torch, far from the argument
    checks; the setting the refusal names by a word of its own is the one to fix."""
    lines = _raised(
        "model_executor/model_runner.py",
        "torch.device(self.device)",
        "RuntimeError: Device string must not be empty",
        "{'model_path': '/m', 'device': '', 'fastapi_root_path': ''}",
    )
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.reason == "invalid config"
    assert "(device='', a setting given no value)" in fatal.message
    lines[0] = lines[0].replace("'device': ''", "'device': 'cpu'")
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.reason != "invalid config"


def _config_refused(field: str) -> list[str]:
    """transformers 5 refusing a ``config.json`` value of the wrong type (the twenty-first
    batch's shape): the validator's ``TypeError``, chained to the strict dataclass's error,
    raised as SGLang reads the model's config."""
    hub = f"{_SITE}/huggingface_hub/dataclasses.py"
    refusal = f"TypeError: Field '{field}' expected int, got str (value: 'not-a-value')"
    return [
        "Traceback (most recent call last):",
        f'  File "{hub}", line 615, in _validate_simple_type',
        "    raise TypeError(",
        refusal,
        "",
        "The above exception was the direct cause of the following exception:",
        "",
        "Traceback (most recent call last):",
        f'  File "{_SITE}/sglang/srt/utils/hf_transformers/config.py", line 228, in parse',
        "    config = AutoConfig.from_pretrained(",
        f'  File "{_SITE}/transformers/configuration_utils.py", line 157, in __init__',
        "    self.__post_init__(**kwargs)",
        f'  File "{hub}", line 146, in __strict_setattr__',
        "    raise StrictDataclassFieldValidationError(field=name, cause=e) from e",
        "huggingface_hub.errors.StrictDataclassFieldValidationError: Validation error for field "
        f"'{field}':",
        f"    {refusal}",
    ]


def test_a_model_config_value_refused_as_it_is_read_is_the_model_and_says_which() -> None:
    """A value of the model's ``config.json`` that its config class refuses is the model's
    description at fault (model loading), wherever in the config's reading it is refused; the
    wrapper's message is a header for the refusal, so the refusal is what is cited."""
    fatal = find_fatal(_config_refused("hidden_size"))
    assert fatal is not None and fatal.reason == "model loading"
    assert "TypeError: Field 'hidden_size' expected int" in fatal.line
    assert fatal.message.startswith(
        "huggingface_hub.errors.StrictDataclassFieldValidationError: Validation error for field "
        "'hidden_size': TypeError: Field 'hidden_size' expected int, got str"
    )
    refused = _config_refused("architectures")
    overrides = '{"architectures": "LlamaForCausalLM"}'
    dump = f"server_args={{'model_path': '/m', 'json_model_override_args': '{overrides}'}}"
    fatal = find_fatal([dump, *refused])
    assert fatal is not None and fatal.reason == "invalid config"
    assert "(json_model_override_args sets 'architectures')" in fatal.message


def test_only_a_value_refused_as_the_model_config_is_read_is_the_model() -> None:
    """Reading the config also touches the hub's cache (a directory the service may not write)
    and is wrapped by SGLang's own ``get_config``, whose refusals are of its settings: neither
    is a value of the model's."""
    read = f'  File "{_SITE}/transformers/models/auto/configuration_auto.py", line 440, in from_pretrained'
    lines = ["Traceback (most recent call last):", read, "    raise ValueError(", ""]
    lines[-1] = "ValueError: rope_scaling must be a dictionary with two fields"
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.reason == "model loading"
    validate = (
        f'  File "{_SITE}/transformers/generation/configuration_utils.py", line 681, in validate'
    )
    below_hooks = [
        lines[0],
        f'  File "{_SITE}/sglang/srt/arg_groups/hook.py", line 9, in run',
        validate,
    ]
    refused = "TypeError: '<' not supported between instances of 'str' and 'int'"
    fatal = find_fatal([*below_hooks, "    if self.pad_token_id < 0:", refused])
    assert fatal is not None and fatal.reason == "model loading"  # generation_config.json's
    lines[-1] = "PermissionError: [Errno 13] Permission denied: '/root/.cache/huggingface/hub/x'"
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.reason != "model loading"
    lines = _raised(
        "utils/hf_transformers/config.py",
        "raise ValueError(",
        "ValueError: model_config_parser='mistral' is incompatible with GGUF inputs",
    )
    lines.insert(1, f'  File "{_SITE}/sglang/srt/arg_groups/pipeline.py", line 122, in run')
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.reason == "invalid config"


@pytest.mark.parametrize(
    ("setting", "said"),
    [
        ("'port': 99999", "(port=99999, not a TCP port)"),
        ("'port': -1", "(port=-1, not a TCP port)"),
        ("'host': 'http://127.0.0.1'", "(host='http://127.0.0.1', not a host name or address)"),
        ("'host': '127.0.0.1:30000'", "(host='127.0.0.1:30000', not a host name or address)"),
    ],
)
def test_an_address_no_socket_takes_is_the_setting_wherever_it_is_first_used(
    setting: str, said: str
) -> None:
    """The twenty-third batch's family: 0.5.23 checks neither its port's range nor its host's
    shape, and fails where the address is first used (its warmup request to itself, the
    rendezvous of torch.distributed); the setting is the cause."""
    lines = _raised(
        "entrypoints/http_server.py",
        "res = requests.get(url + '/model_info', timeout=5)",
        "urllib3.exceptions.LocationParseError: Failed to parse: http://127.0.0.1:99999/model_info",
        "{'model_path': '/m', " + setting + "}",
    )
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.reason == "invalid config"
    assert said in fatal.message
    for usable in ("'host': '::1'", "'port': 30000", "'nccl_port': None"):
        lines[0] = lines[0].replace(setting, usable)
        setting = usable
        fatal = find_fatal(lines)
        assert fatal is not None and fatal.reason != "invalid config"


def test_a_model_path_naming_one_of_its_files_is_a_model_not_found() -> None:
    """``--model-path .../config.json``: whichever file is read first fails (here the
    tokenizer's), and the fix is to give the model's directory. A GGUF file is a model."""
    lines = _raised(
        "utils/hf_transformers/tokenizer.py",
        "tokenizer = AutoTokenizer.from_pretrained(",
        "KeyError: 'regular_tokens'",
        "{'model_path': '/srv/models/llama/config.json', 'tokenizer_path': '/srv/models/llama'}",
    )
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.reason == "model not found"
    assert "(model_path='/srv/models/llama/config.json' is a file" in fatal.message
    lines[0] = lines[0].replace("llama/config.json'", "llama-q4.gguf'")
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.reason != "model not found"


def test_a_background_thread_ended_by_an_exception_is_not_the_start_failing() -> None:
    """The twenty-fourth batch's family: ``--watchdog-timeout nan`` ends SGLang's watchdog thread
    (``time.sleep(nan)``), which it logs with the traceback, and the server serves without it.
    The same exception raised where the start runs is still its cause."""
    ended = [
        "[2026-12-05 16:09:22] Scheduler watchdog thread crashed: Invalid value NaN (not a number)",
        "Traceback (most recent call last):",
        f'  File "{_SITE}/sglang/srt/utils/watchdog.py", line 147, in _watchdog_once',
        "    time.sleep(self.watchdog_timeout / 2)",
        "ValueError: Invalid value NaN (not a number)",
        "[2026-12-05 16:09:23] The server is fired up and ready to roll!",
    ]
    assert find_fatal(ended) is None
    assert find_fatal(ended[1:]) is not None
    link = ["", "The above exception was the direct cause of the following exception:", ""]
    chained = [*ended[:5], *link, *ended[1:5], ended[5]]  # the thread's traceback, chained
    assert find_fatal(chained) is None


def _template_loaded(where: str, statement: str, exception: str, *inner: str) -> list[str]:
    """A record whose exception was raised as SGLang's template manager ran ``where``."""
    return [
        "Traceback (most recent call last):",
        f'  File "{_SITE}/sglang/srt/parser/template_manager.py", line 305, in '
        "initialize_templates",
        "    self.load_chat_template(tokenizer_manager, chat_template, model_path)",
        f'  File "{_SITE}/sglang/srt/parser/template_manager.py", line 330, in {where}',
        f"    {statement}",
        *inner,
        exception,
    ]


@pytest.mark.parametrize(
    ("where", "statement", "exception", "inner"),
    [
        (
            "_load_jinja_template",
            "template = f.read()",
            "UnicodeDecodeError: 'utf-8' codec can't decode byte 0x80 in position 0: invalid "
            "start byte",
            ('  File "<frozen codecs>", line 322, in decode',),
        ),
        (
            "_load_json_chat_template",
            'sep_style=template["sep_style"],',
            "KeyError: 'sep_style'",
            (),
        ),
    ],
)
def test_a_template_a_flag_names_that_cannot_be_loaded_is_the_config(
    where: str, statement: str, exception: str, inner: tuple[str, ...]
) -> None:
    """The twenty-sixth batch's family: ``--chat-template`` given a file that does not decode,
    or a JSON file without a template's keys (a model's config.json): the file the flag names,
    whatever was raised. The same raised as the model's own template is resolved is not."""
    fatal = find_fatal(_template_loaded(where, statement, exception, *inner))
    assert fatal is not None and fatal.reason == "invalid config", fatal
    own = _template_loaded("_resolve_hf_chat_template", statement, exception, *inner)
    fatal = find_fatal(own)
    assert fatal is not None and fatal.reason != "invalid config", fatal


def test_a_gpu_found_missing_where_the_device_is_the_cpu_is_the_config() -> None:
    """The twenty-sixth batch's family: with ``--device cpu`` logged, a feature switched on that
    reaches for CUDA (``--enable-forward-pass-metrics``) finds no driver: the setting, not the
    machine, is at fault. With a GPU device logged it is the machine's lack."""
    lines = _raised(
        "utils/common.py",
        "torch.cuda.synchronize()",
        "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an "
        "NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/index.aspx",
        "{'model_path': '/srv/models/llama', 'device': 'cpu'}",
    )
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.reason == "invalid config", fatal
    assert "(device='cpu': another setting reached for a GPU)" in fatal.message
    lines[0] = lines[0].replace("'device': 'cpu'", "'device': 'cuda'")
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.reason == "no GPU", fatal


def test_values_a_models_own_config_class_finds_disagreeing_are_the_model() -> None:
    """The twenty-seventh batch's family: transformers 5's per-model config class checks that
    the model's ``config.json`` agrees with itself (``validate_architecture``: the hidden size a
    multiple of the heads) and refuses it with a ``ValueError``: the model's description, not the
    server's settings, though the words are a setting's. The same raised by SGLang's own argument
    checks is the config."""
    hub = f"{_SITE}/huggingface_hub/dataclasses.py"
    refusal = (
        "ValueError: The hidden size (128) is not a multiple of the number of attention heads (3)."
    )
    lines = [
        "Traceback (most recent call last):",
        f'  File "{hub}", line 251, in validate',
        "    validator(self)",
        f'  File "{_SITE}/transformers/models/llama/configuration_llama.py", line 97, in '
        "validate_architecture",
        "    raise ValueError(",
        refusal,
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.reason == "model loading", fatal
    lines[3] = f'  File "{_SITE}/sglang/srt/server_args.py", line 97, in _handle_attention'
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.reason == "invalid config", fatal


def _backend_built(backend: str, device: str, exception: str, *inner: str) -> list[str]:
    """SGLang's attention registry building the backend ``backend`` chose (the thirtieth batch's
    shape): ``create_<backend>_backend`` imports its module, which fails with ``exception``."""
    dump = f"{{'model_path': '/srv/models/llama', 'device': {device!r}, "
    dump += f"'attention_backend': {backend!r}}}"
    return [
        f"[2026-12-05 13:57:45] server_args={dump}",
        SCHED,
        f'  File "{_SITE}/sglang/srt/layers/attention/attention_registry.py", line 138, in '
        f"create_{backend}_backend",
        f"    return {backend.title()}Backend(runner)",
        *inner,
        exception,
        "",
        SIGQUIT,
    ]


@pytest.mark.parametrize(
    ("backend", "exception"),
    [
        ("wave", "ModuleNotFoundError: No module named 'wave_lang'"),
        ("flashinfer", "NameError: name 'BatchPrefillWithRaggedKVCacheWrapper' is not defined"),
        ("flashmla", "OSError: libcuda.so.1: cannot open shared object file: No such file or "
         "directory"),
        ("hpc_ops", "ImportError: The hpc_ops attention backend requires the `hpc` package."),
    ],
)  # fmt: skip
def test_a_backend_chosen_on_a_cpu_server_that_finds_its_hardware_absent_is_the_config(
    backend: str, exception: str
) -> None:
    """The thirtieth batch's family: with ``--device cpu`` logged, a backend chosen for other
    hardware fails as it is built on something absent (its package, the CUDA driver library, a
    name its guarded GPU import never defined): the choice is at fault, not the install. With a
    GPU device logged, what is absent is the install's, but for an extra package SGLang does not
    install, which stays the choice's (an extra package a setting asked for, below)."""
    fatal = find_fatal(_backend_built(backend, "cpu", exception))
    assert fatal is not None and fatal.reason == "invalid config", fatal
    assert f"(attention_backend={backend!r} chosen on a device='cpu' server" in fatal.message
    fatal = find_fatal(_backend_built(backend, "cuda", exception))
    if backend in ("wave", "hpc_ops"):  # wave_lang, hpc: extras
        assert fatal is not None and fatal.reason == "invalid config", fatal
        assert f"(attention_backend={backend!r} needs the package" in fatal.message
    else:
        assert fatal is None or fatal.reason != "invalid config", fatal


def test_a_cpu_server_failing_outside_the_chosen_backend_is_not_named_after_it() -> None:
    lines = _backend_built("wave", "cpu", "ModuleNotFoundError: No module named 'pybase64'")
    lines[2] = f'  File "{_SITE}/sglang/srt/model_executor/model_runner.py", line 9, in load'
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.reason == "broken install", fatal
    lines = _backend_built("wave", "cpu", "RuntimeError: shape '[1, 4, 32]' is invalid")
    fatal = find_fatal(lines)
    assert fatal is None or fatal.reason != "invalid config", fatal


def test_a_chained_cause_is_placed_by_the_frames_of_the_whole_chain() -> None:
    """The driver library's ``OSError`` is the cause cited; the registry's frames that show the
    chosen backend being built are in the traceback it was chained to."""
    lines = _backend_built(
        "flashmla", "cpu", "OSError: Could not load this library: flash_mla/cuda.abi3.so"
    )
    root = [
        "Traceback (most recent call last):",
        f'  File "{_SITE}/torch/_ops.py", line 1587, in load_library',
        "    ctypes.CDLL(path)",
        "OSError: libcuda.so.1: cannot open shared object file: No such file or directory",
        "",
        "The above exception was the direct cause of the following exception:",
        "",
    ]
    lines[1:2] = [lines[1].replace("Traceback (most recent call last):", ""), *root,
                  "Traceback (most recent call last):"]  # fmt: skip
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.reason == "invalid config", fatal
    assert "libcuda.so.1" in fatal.line and "attention_backend='flashmla'" in fatal.message


def test_a_kernel_the_installed_build_lacks_is_the_install() -> None:
    """torch's ``'_OpNamespace' 'sgl_kernel' object has no attribute ...``: the kernel package
    installed was built without an op SGLang calls (an upgrade of one without the other, the
    build for another device), as sglang#5668 reports after an upgrade. An EAGLE-family
    algorithm without its draft model reaching it is still the config."""
    missing = "AttributeError: '_OpNamespace' 'sgl_kernel' object has no attribute 'awq_dequantize'"
    frame = f'  File "{_SITE}/sgl_kernel/gemm.py", line 40, in awq_dequantize'
    assert reason_of(missing, frame, "    return torch.ops.sgl_kernel.awq_dequantize(") == (
        "broken install"
    )
    lines = [
        "[2026-12-05 13:57:45] server_args={'model_path': '/m', 'device': 'cpu', "
        "'speculative_algorithm': 'EAGLE', 'speculative_draft_model_path': None}",
        *record(missing, frame, "    return torch.ops.sgl_kernel.awq_dequantize("),
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.reason == "invalid config", fatal


def _quantization_failed(quantization: str | None, where: str, exception: str) -> list[str]:
    """A start whose quantization method's own code (``where``, a frame) failed on the
    checkpoint (the thirty-first batch's shape), the method chosen by ``--quantization`` when
    ``quantization`` is given (a checkpoint's own method is taken from its config instead)."""
    dump = f"{{'model_path': '/srv/models/llama', 'quantization': {quantization!r}}}"
    return [
        f"[2026-12-05 13:57:45] server_args={dump}",
        SCHED,
        f'  File "{_SITE}/sglang/srt/model_loader/loader.py", line 215, in _get_quantization_config',
        "    quant_config = get_quant_config(",
        where,
        "    raise ValueError(",
        exception,
        "",
        SIGQUIT,
    ]


@pytest.mark.parametrize(
    ("quantization", "where", "exception"),
    [
        ("awq", f'  File "{_SITE}/sglang/srt/model_loader/weight_utils.py", line 389, in '
         "get_quant_config", "ValueError: Cannot find the config file for awq"),
        ("quark", f'  File "{_SITE}/sglang/srt/layers/quantization/quark/quark.py", line 348, in '
         "__init__", "ValueError: Either quant_config or online_scheme must be provided"),
        ("w4afp8", f'  File "{_SITE}/sglang/srt/layers/quantization/fp8.py", line 606, in '
         "validate_block_quant_shapes", "ValueError: Weight output_partition_size = 64 is not "
         "divisible by weight quantization block_n = 128."),
    ],
)  # fmt: skip
def test_a_quantization_chosen_for_a_checkpoint_it_does_not_fit_is_the_config(
    quantization: str, where: str, exception: str
) -> None:
    """The thirty-first batch's family: ``--quantization`` given a method the checkpoint was not
    quantized with fails in that method's code (its config file looked for, its block sizes
    checked) while weights load: the choice, not the checkpoint, is what to change. Where no
    method was chosen, the checkpoint's own failed: the model."""
    fatal = find_fatal(_quantization_failed(quantization, where, exception))
    assert fatal is not None and fatal.reason == "invalid config", fatal
    assert f"(quantization={quantization!r} chosen for a checkpoint it does not fit)" in (
        fatal.message
    )
    fatal = find_fatal(_quantization_failed(None, where, exception))
    assert (
        fatal is None or fatal.reason != "invalid config" or "quantization=" not in (fatal.message)
    ), fatal


def test_a_cpu_feature_refusal_in_other_words_is_the_config() -> None:
    lines = _raised(
        "layers/quantization/w8a8_int8.py",
        "assert _is_cpu_amx_available, ...",
        "AssertionError: W8A8Int8LinearMethod on CPU only works on AMX or Arm64",
        "{'model_path': '/m', 'device': 'cpu', 'quantization': 'w8a8_int8'}",
    )
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.reason == "invalid config", fatal
    assert "a choice this CPU server cannot run: quantization='w8a8_int8'" in fatal.message


def test_a_refusal_naming_a_flag_with_its_value_names_that_setting() -> None:
    """The thirty-second batch's ``--bf16-gemm-backend cutedsl requires SM100/SM103``: the
    refusal says which setting it refuses, by its flag and value, though the classifier knows no
    module named after it; a flag given with another value is advice, not what was refused."""
    dump = "{'model_path': '/m', 'device': 'cpu', 'attention_backend': 'torch_native', "
    refused = _raised(
        "server_args.py",
        "raise ValueError(...)",
        "ValueError: --bf16-gemm-backend cutedsl requires SM100/SM103 (Blackwell)",
        dump + "'bf16_gemm_backend': 'cutedsl'}",
    )
    fatal = find_fatal(refused)
    assert fatal is not None and fatal.reason == "invalid config", fatal
    assert fatal.message.endswith(
        "(a choice this CPU server cannot run: bf16_gemm_backend='cutedsl')"
    )
    advised = _raised(
        "layers/attention/flashattention_backend.py",
        "assert ..., ...",
        "AssertionError: FlashAttention v3 Backend requires SM>=80 and SM<=90. Please use "
        "`--attention-backend flashinfer`.",
        "{'model_path': '/m', 'device': 'cpu', 'attention_backend': 'fa3'}",
    )
    fatal = find_fatal(advised)
    assert fatal is not None and "attention_backend='fa3'" in fatal.message, fatal


def test_an_attribute_named_after_a_chosen_component_is_that_choice() -> None:
    """The thirtieth and thirty-second batches' ``qsa``: the memory pool a model builds lacks
    the attribute the chosen backend reads (``qsa_compress_ratio``), named after the choice: the
    backend does not fit this model. An attribute no choice names stays a crash."""
    dump = "{'model_path': '/m', 'device': 'cpu', 'decode_attention_backend': 'qsa'}"
    lacking = "AttributeError: 'MHATokenToKVPool' object has no attribute '{}'"
    where, statement = "layers/attention/qwen_sparse_attn_backend.py", "self.ratio = pool.x"
    fatal = find_fatal(_raised(where, statement, lacking.format("qsa_compress_ratio"), dump))
    assert fatal is not None and fatal.reason == "invalid config", fatal
    assert "(decode_attention_backend='qsa' expects a 'qsa_compress_ratio'" in fatal.message
    fatal = find_fatal(_raised(where, statement, lacking.format("compress_ratio"), dump))
    assert fatal is not None and fatal.reason != "invalid config", fatal


def _overlap_loader(enable_lora: str) -> list[str]:
    """The thirty-third batch's shape: the scheduler builds the LoRA overlap loader, which reads
    the LoRA manager that ``--enable-lora`` would have built."""
    return [
        "[2026-12-06 00:44:32] server_args={'model_path': '/m', 'device': 'cpu', "
        f"'enable_lora': {enable_lora}, 'enable_lora_overlap_loading': True}}",
        SCHED,
        f'  File "{_SITE}/sglang/srt/managers/scheduler.py", line 2411, in init_lora_overlap_loader',
        "    self.lora_overlap_loader = LoRAOverlapLoader(",
        f'  File "{_SITE}/sglang/srt/lora/lora_overlap_loader.py", line 24, in __init__',
        "    self.device_module = torch.get_device_module(self.lora_manager.device)",
        "AttributeError: 'NoneType' object has no attribute 'device'",
        "",
        SIGQUIT,
    ]


def test_a_switch_on_without_the_feature_it_extends_is_the_config() -> None:
    """``--enable-lora-overlap-loading`` without ``--enable-lora``: the extension uses what the
    feature would have built (``None``) in the feature's own frames; the fix is the feature's
    switch. With the feature on, the same crash stays a crash."""
    fatal = find_fatal(_overlap_loader("None"))
    assert fatal is not None and fatal.reason == "invalid config", fatal
    assert "(enable_lora_overlap_loading=True without enable_lora" in fatal.message
    fatal = find_fatal(_overlap_loader("True"))
    assert fatal is not None and fatal.reason == "crashed", fatal


def test_a_model_refused_for_a_feature_is_the_feature_chosen() -> None:
    """The thirty-fourth batch's ``--language-only``: SGLang refuses the model type *for* a
    feature the config turned on (encoder disaggregation); the model itself serves, so the
    fix is the setting. A model type refused outright stays an unsupported model."""
    fatal = find_fatal(
        _raised(
            "server_args.py",
            "raise ValueError(...)",
            "ValueError: Model type LlamaForCausalLM is not supported for encoder disaggregation.",
        )
    )
    assert fatal is not None and fatal.reason == "invalid config", fatal
    fatal = find_fatal(
        _raised("configs/model_config.py", "raise ValueError(...)", "ValueError: Model type "
                "FooForCausalLM is not supported.")
    )  # fmt: skip
    assert fatal is not None and fatal.reason == "unsupported model", fatal


def test_a_load_format_that_finds_no_weights_of_its_kind_is_the_config() -> None:
    """``--load-format pt`` over a safetensors checkpoint: no weights of the chosen kind are
    found; the logged format says why. Without a chosen format the same line is the model's."""
    missing = "RuntimeError: Cannot find any model weights with `/srv/models/llama`"
    where, statement = "model_loader/loader.py", "raise RuntimeError(...)"
    chosen = "{'model_path': '/srv/models/llama', 'load_format': 'pt'}"
    fatal = find_fatal(_raised(where, statement, missing, chosen))
    assert fatal is not None and fatal.reason == "invalid config", fatal
    assert "(load_format='pt' looks for weight files this model does not have)" in fatal.message
    auto = "{'model_path': '/srv/models/llama', 'load_format': 'auto'}"
    fatal = find_fatal(_raised(where, statement, missing, auto))
    assert fatal is not None and fatal.reason == "model loading", fatal


@pytest.mark.parametrize(
    ("setting", "exception", "named"),
    [
        (  # the thirty-fourth batch: the module is named after the chosen value's first word
            "'load_format': 'runai_streamer'",
            "ModuleNotFoundError: No module named 'runai_model_streamer'",
            "load_format='runai_streamer' needs the package 'runai_model_streamer'",
        ),
        (  # the thirty-third: SGLang's own "Please install" words
            "'load_format': 'bitsandbytes'",
            "ImportError: Please install bitsandbytes>=0.44.0 via `pip install bitsandbytes>=0.44.0`"
            " to use bitsandbytes quantizer.",
            "load_format='bitsandbytes' needs the package 'bitsandbytes'",
        ),
        (  # the twenty-sixth: a switch, named by the message as a flag
            "'enable_flexkv': True",
            "RuntimeError: FlexKV is not installed. Please install the FlexKV package to use "
            "--enable-flexkv.",
            "enable_flexkv=True needs the package 'flexkv'",
        ),
    ],
)
def test_an_extra_package_a_setting_asked_for_missing_is_that_setting(
    setting: str, exception: str, named: str
) -> None:
    """A package SGLang does not install itself, missing, where a logged setting chose what
    needs it: the host serves every other config, so the setting is the cause (choose another
    value, or install the extra for it), not the install. Without the setting logged, only a
    message that names the flag itself (SGLang's own word that it was given) says so."""
    dump = f"{{'model_path': '/m', 'device': 'cuda', {setting}}}"
    where, statement = "utils/extras.py", "import extra"
    fatal = find_fatal(_raised(where, statement, exception, dump))
    assert fatal is not None and fatal.reason == "invalid config", fatal
    assert f"({named}, which SGLang does not install)" in fatal.message
    fatal = find_fatal(_raised(where, statement, exception, "{'model_path': '/m'}"))
    unlogged = "invalid config" if " --" in exception else "broken install"
    assert fatal is not None and fatal.reason == unlogged, fatal


def test_a_package_sglang_installs_itself_missing_stays_the_install() -> None:
    """``sgl_kernel`` is SGLang's own requirement: missing, the install is broken, whatever
    setting shares a word with it."""
    dump = "{'model_path': '/m', 'attention_backend': 'flashinfer', 'sampling_backend': 'torch'}"
    for missing in ("sgl_kernel", "flashinfer", "torch_memory_saver"):
        exception = f"ModuleNotFoundError: No module named '{missing}'"
        fatal = find_fatal(_raised("layers/sampler.py", "import x", exception, dump))
        assert fatal is not None and fatal.reason == "broken install", (missing, fatal)


def test_a_cpp_terminate_is_complete_only_once_its_what_line_is_there() -> None:
    """The systemd replay of ``illegal_memory_access_nccl_watchdog.log`` read once between its
    ``terminate called`` line and the ``what():`` line that says *CUDA error: an illegal memory
    access* (seen under load in ``make test``): the record read then named NCCL. A reader
    waits for that line, as for a traceback's exception line."""
    head = [
        "[2026-11-30 10:00:23] INFO:     Uvicorn running on http://0.0.0.0:30000",
        "terminate called after throwing an instance of 'c10::DistBackendError'",
    ]
    what = (
        "  what():  [PG ID 2 PG GUID 3 Rank 1] Process group watchdog thread terminated with "
        "exception: CUDA error: an illegal memory access was encountered"
    )
    assert not traceback_complete(head)
    early = find_fatal(head)
    assert early is not None and not early.complete
    fatal = find_fatal([*head, what])
    assert fatal is not None and fatal.complete and fatal.reason == "CUDA error", fatal


def test_a_sharded_load_format_that_finds_no_files_of_its_kind_is_the_config() -> None:
    """The thirty-fifth batch's ``--load-format sharded_state``: the same family as ``pt``, in
    other words (``Could not find checkpoint files ... only pre-sharded checkpoints``)."""
    missing = (
        "ValueError: Could not find checkpoint files '/m/model-rank-0-part-*.safetensors', only "
        "pre-sharded checkpoints are currently supported!"
    )
    where, statement = "model_loader/loader.py", "raise ValueError(...)"
    chosen = "{'model_path': '/m', 'load_format': 'sharded_state'}"
    fatal = find_fatal(_raised(where, statement, missing, chosen))
    assert fatal is not None and fatal.reason == "invalid config", fatal
    assert "(load_format='sharded_state' looks for weight files" in fatal.message
    fatal = find_fatal(_raised(where, statement, missing, "{'model_path': '/m'}"))
    assert fatal is not None and fatal.reason != "invalid config", fatal


def _scheduler_raised(dump: str, exception: str, *frames: tuple[str, str, str]) -> list[str]:
    """A scheduler's record as 0.5.23 writes it: the ``server_args`` dump ``dump`` (a dict's
    text), then a traceback through SGLang's ``frames`` (module below ``srt/``, function,
    statement; outermost first) raising ``exception``, then the parent's SIGQUIT."""
    lines = [f"[2026-12-06 04:20:11] server_args={dump}", SCHED]
    for where, function, statement in frames:
        lines += [
            f'  File "{_SITE}/sglang/srt/{where}", line 100, in {function}',
            f"    {statement}",
        ]
    return [*lines, exception, "", SIGQUIT]


def test_a_refusal_naming_a_chosen_value_is_that_setting_wherever_it_is_raised() -> None:
    """The thirty-fifth batch's ``--reasoning-parser response_template``: the parser refuses to
    run without its template, in the tokenizer manager's frames; the refusal names the value
    the setting chose, so it is the setting's, not the tokenizer's. Without that value logged,
    the frames place it."""

    def record(dump: str) -> list[str]:
        return _scheduler_raised(
            dump,
            "ValueError: response_template is required",
            ("managers/scheduler.py", "init_tokenizer", "self.reasoning_parser = ReasoningParser("),
            (
                "parser/response_template.py",
                "_load",
                'raise ValueError("response_template is required")',
            ),
        )

    fatal = find_fatal(record("{'model_path': '/m', 'reasoning_parser': 'response_template'}"))
    assert fatal is not None and fatal.reason == "invalid config", fatal
    assert "(reasoning_parser='response_template' is refused)" in fatal.message
    fatal = find_fatal(record("{'model_path': '/m'}"))
    assert fatal is not None and fatal.reason == "tokenizer", fatal


def test_a_refusal_naming_a_flag_the_config_set_is_that_setting_wherever_it_is_raised() -> None:
    """The thirty-eighth batch's ``--ple-offload-embedding`` on a Llama: the loader refuses the
    flag by its command-line name as the weights load, so the refusal is the setting's, not the
    model's loading. A flag the config left unset, named as advice, places nothing: the frames
    do."""

    def record(dump: str, refusal: str) -> list[str]:
        return _scheduler_raised(
            dump,
            refusal,
            (
                "model_executor/model_runner.py",
                "load_model",
                "loaded = load_model_with_memory_saver(",
            ),
            (
                "model_executor/model_runner_components/load_model_utils.py",
                "load",
                "raise ValueError(",
            ),
        )

    refusal = "ValueError: --ple-offload-embedding only supports Qwen4ExpForConditionalGeneration"
    on = "{'model_path': '/m', 'ple_offload_embedding': True}"
    _reads(record(on, refusal), "invalid config", "(ple_offload_embedding=True is refused)")
    for dump in ("{'model_path': '/m', 'ple_offload_embedding': None}", "{'model_path': '/m'}"):
        _reads(record(dump, refusal), "model loading")


def _reads(lines: list[str], reason: str, said: str = "") -> None:
    """The classifier names ``reason`` for ``lines``, its message saying ``said``."""
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.reason == reason and said in fatal.message, fatal


def _loader_raised(
    dump: str, exception: str, function: str = "load_weights_and_postprocess"
) -> list[str]:
    """A scheduler's record whose model loader's ``function`` raised ``exception`` as the
    weights load (:func:`_scheduler_raised`)."""
    return _scheduler_raised(
        dump,
        exception,
        ("model_executor/model_runner.py", "load_model", "model = loader.load_model("),
        ("model_loader/loader.py", function, "raise ValueError("),
    )


def test_a_refusal_naming_a_chosen_value_as_one_word_is_that_setting() -> None:
    """The thirty-eighth batch's ``--load-format flash_rl``: the loader refuses the model under
    the product's name (``FlashRL does not support LlamaForCausalLM.load_weights``), the value's
    words run together; it is the load format's refusal, not the model failing to load. Another
    load format chosen, the same words name nothing of the config."""

    def record(load_format: str) -> list[str]:
        return _loader_raised(
            f"{{'model_path': '/m', 'load_format': '{load_format}'}}",
            "ValueError: FlashRL does not support LlamaForCausalLM.load_weights: use a regular load"
            " format for other models.",
        )

    _reads(record("flash_rl"), "invalid config", "(load_format='flash_rl' is refused)")
    _reads(record("safetensors"), "model loading")


def test_a_refusal_naming_the_class_a_chosen_value_builds_is_that_setting() -> None:
    """The thirty-ninth batch's ``--load-format layered`` on a Llama: the loader SGLang names
    after the value (``LayeredModelLoader``) refuses the model as the weights load, so the
    refusal is the load format's. A model's own class (``LlamaForCausalLM``) is no component a
    choice builds, and another load format chosen names nothing."""

    def record(load_format: str, refusal: str) -> list[str]:
        return _loader_raised(
            f"{{'model_path': '/m', 'load_format': '{load_format}', 'tool_call_parser': 'llama'}}",
            refusal,
            function="load_model",
        )

    layered = (
        "ValueError: LayeredModelLoader requires the model to have a `load_weights_to_module`"
        " method. /m does not support it."
    )
    _reads(record("layered", layered), "invalid config", "(load_format='layered' is refused)")
    _reads(record("auto", layered), "model loading")
    _reads(record("auto", "ValueError: LlamaForCausalLM has no weights at /m"), "model loading")


def test_the_grpc_servers_words_for_a_dead_scheduler_end_a_start_as_a_crash() -> None:
    """0.5.23's gRPC server (``--grpc-mode``) says its scheduler died in words of its own,
    then kills its tree: with nothing else in the record, that line is the crash."""
    fatal = find_fatal(
        [
            "[2026-12-07 02:11:42] Load weight end. elapsed=0.1 s",
            "[2026-12-07 02:11:42] Received SIGQUIT from scheduler process. Scheduler failed,"
            " shutting down gRPC server.",
            "[2026-12-07 02:11:42] kill_process_tree called: parent_pid=8224, include_parent=True",
        ]
    )
    assert fatal is not None and fatal.reason == "crashed", fatal
    assert "shutting down gRPC server" in fatal.line


def test_a_crash_in_the_code_of_a_feature_a_setting_turned_on_is_that_setting() -> None:
    """The thirty-sixth batch's ``--kv-canary log``: the canary's manager, which the setting
    built, makes a device stream the CPU build of torch cannot. The frames run through the
    feature's own package (``kv_canary``, two words of the setting's name), so the setting is
    the cause. At its default (``none``), or through a one-word package, nothing is named."""

    def record(dump: str, package: str = "kv_canary") -> list[str]:
        return _scheduler_raised(
            dump,
            "TypeError: Stream.__init__() got an unexpected keyword argument 'device'",
            (f"{package}/api.py", "install_canary", "manager = CanaryManager(...)"),
            (
                f"{package}/runner/canary_manager.py",
                "__init__",
                "self.stream = create_device_stream(device)",
            ),
            ("utils/common.py", "create_device_stream", "return torch.Stream(device=device)"),
        )

    fatal = find_fatal(record("{'model_path': '/m', 'kv_canary': 'log'}"))
    assert fatal is not None and fatal.reason == "invalid config", fatal
    assert "(kv_canary='log' turned on code that fails on this server)" in fatal.message
    for dump, package in (
        ("{'model_path': '/m', 'kv_canary': 'none'}", "kv_canary"),
        ("{'model_path': '/m', 'kv_canary': 'log'}", "canary"),
    ):
        fatal = find_fatal(record(dump, package))
        assert fatal is not None and fatal.reason == "crashed", (dump, package, fatal)


@pytest.mark.parametrize("parser", ["deepseekv4", "deepseekv41"])
def test_a_component_a_chosen_value_names_failing_as_it_is_built_is_that_setting(
    parser: str,
) -> None:
    """The thirty-fifth and thirty-seventh batches' ``--tool-call-parser deepseekv4``/
    ``deepseekv41`` on a Llama: the chat server builds the DeepSeek encoder the parser asks for
    (``serving_deepseek_recipe.py``, in ``__init__``: named after the value's family, without
    the version), which fails on the tokenizer's lack of DeepSeek's special tokens. The choice
    is the cause. Without it logged, at a value naming no module of the frames, or with the
    component failing as it runs rather than as it is built, nothing is named."""

    def record(dump: str, function: str = "__init__") -> list[str]:
        return _scheduler_raised(
            dump,
            'RuntimeError: failed to encode conversation: special token "<|begin_of_sentence|>"'
            " is not in the added vocabulary",
            ("entrypoints/http_server.py", "lifespan", "serving_chat = OpenAIServingChat("),
            ("entrypoints/openai/serving_deepseek_recipe.py", function, "self._encode(...)"),
            ("parser/deepseek_recipe_renderer.py", "encode", "raise RuntimeError(...)"),
        )

    chosen = f"{{'model_path': '/m', 'tool_call_parser': '{parser}'}}"
    fatal = find_fatal(record(chosen))
    assert fatal is not None and fatal.reason == "invalid config", fatal
    assert f"(tool_call_parser={parser!r} chose code that fails on this server)" in fatal.message
    for dump, function in (
        ("{'model_path': '/m'}", "__init__"),
        ("{'model_path': '/m', 'tool_call_parser': 'qwen25'}", "__init__"),
        (chosen, "handle_request"),
    ):
        fatal = find_fatal(record(dump, function))
        assert fatal is not None and fatal.reason == "crashed", (dump, function, fatal)


def test_a_feature_asking_the_model_for_what_it_lacks_is_the_switch_not_the_model() -> None:
    """The thirty-sixth batch's ``--enable-return-routed-experts`` on a dense Llama: the
    capturer the switch built (``state_capturer/routed_experts.py``) asks the model's config
    for its experts. The model is not unsupported; the switch does not fit it. With the switch
    off, the same lack is the model's."""

    def record(switch: bool) -> list[str]:
        return _scheduler_raised(
            f"{{'model_path': '/m', 'enable_return_routed_experts': {switch}}}",
            "AttributeError: 'LlamaConfig' object has no attribute 'num_experts_per_tok'",
            (
                "state_capturer/routed_experts.py",
                "__init__",
                "self.top_k = model_config.hf_config.num_experts_per_tok",
            ),
        )

    fatal = find_fatal(record(True))
    assert fatal is not None and fatal.reason == "invalid config", fatal
    assert (
        "(enable_return_routed_experts=True asks the model's config for 'num_experts_per_tok'"
        in fatal.message
    )
    fatal = find_fatal(record(False))
    assert fatal is not None and fatal.reason == "unsupported model", fatal


def test_a_child_that_cannot_load_the_gpu_driver_on_a_cpu_server_is_the_config() -> None:
    """The thirty-sixth batch's ``--enable-memory-saver`` on a CPU server: the scheduler's
    child, started with the memory saver's preload, dies at exec for want of ``libcuda.so.1``
    (exit 127). With ``device='cpu'`` logged, a setting reached for a GPU the server was not
    given; on a GPU server the same line is the install's."""

    def record(device: str) -> list[str]:
        return [
            f"[2026-12-06 07:45:30] server_args={{'model_path': '/m', 'device': '{device}'}}",
            "/v/bin/python: error while loading shared libraries: libcuda.so.1: cannot open "
            "shared object file: No such file or directory",
            "[2026-12-06 07:45:35] kill_process_tree called: parent_pid=1, include_parent=False",
            "Traceback (most recent call last):",
            "EOFError",
            "",
            "During handling of the above exception, another exception occurred:",
            "",
            "Traceback (most recent call last):",
            "RuntimeError: Rank 0 scheduler died during initialization (exit code: 127).",
        ]

    fatal = find_fatal(record("cpu"))
    assert fatal is not None and fatal.reason == "invalid config", fatal
    assert "(device='cpu': another setting reached for a GPU)" in fatal.message
    fatal = find_fatal(record("cuda"))
    assert fatal is not None and fatal.reason == "broken install", fatal


def test_an_extra_package_a_chained_refusal_says_a_flag_needs_is_that_flag() -> None:
    """The thirty-sixth batch's ``--enable-http2``: the import of ``granian`` fails, and the
    exception raised while handling it says ``--enable-http2 requires the 'granian' package``;
    the start ended before any ``server_args`` dump, so SGLang's own words name the flag. A
    chain that names no flag leaves the missing package the install's."""

    def record(refusal: str) -> list[str]:
        return [
            "Traceback (most recent call last):",
            f'  File "{_SITE}/sglang/srt/arg_groups/serving_hook.py", line 108, in handle_ssl',
            "    import granian  # noqa: F401",
            "ModuleNotFoundError: No module named 'granian'",
            "",
            "During handling of the above exception, another exception occurred:",
            "",
            "Traceback (most recent call last):",
            f'  File "{_SITE}/sglang/srt/arg_groups/serving_hook.py", line 110, in handle_ssl',
            "    raise ValueError(",
            refusal,
        ]

    fatal = find_fatal(
        record(
            "ValueError: --enable-http2 requires the 'granian' package. Install it with: pip "
            'install "sglang[http2]"'
        )
    )
    assert fatal is not None and fatal.reason == "invalid config", fatal
    assert "(--enable-http2 needs the package 'granian', which SGLang does not install)" in (
        fatal.message
    )
    fatal = find_fatal(record("ValueError: HTTP/2 needs the 'granian' package."))
    assert fatal is not None and fatal.reason == "broken install", fatal


def test_argparse_refusing_a_known_flags_value_is_the_config_and_its_shape_a_bad_flag() -> None:
    """The forty-second batch: 0.5.23's parser refuses a value its type cannot read (a dict in
    Python's quoting where JSON is meant); the flag is right, its value is the config's. A flag it
    does not know, one without its value, and a choice outside the release's set stay *bad
    flag*."""
    usage = "usage: sglang serve [-h] --model-path MODEL_PATH"

    def record(error: str) -> list[str]:
        return [usage, f"sglang serve: error: {error}"]

    _reads(
        record("""argument --extra-metric-labels: invalid loads value: "{'k': 1}\""""),
        "invalid config",
        "--extra-metric-labels",
    )
    _reads(
        record("argument --cuda-graph-config: --cuda-graph-config must be JSON: Expecting value"),
        "invalid config",
    )
    _reads(
        record("argument --tp-size/--tensor-parallel-size: invalid int value: 'x'"),
        "invalid config",
    )
    _reads(record("unrecognized arguments: --enable-reasoning"), "bad flag")
    _reads(record("argument --port: expected one argument"), "bad flag")
    _reads(record("argument --attention-backend: invalid choice: 'torch_sdpa'"), "bad flag")


def test_an_error_type_of_a_settings_own_config_is_the_config() -> None:
    """The forty-second batch's ``--watermark-config`` and ``--kv-events-config``: the error's
    type (``WatermarkConfigError``) or pydantic's refusal of a settings class says a setting's
    config is wrong, where the message alone names no family."""
    for exception in (
        "sglang.srt.sampling.watermarking.config.WatermarkConfigError: watermark config contains"
        " unknown fields",
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for KVEventsConfig",
    ):
        lines = _scheduler_raised(
            "{'model_path': '/m'}",
            exception,
            ("managers/scheduler.py", "__init__", "self.init_watermark()"),
        )
        _reads(lines, "invalid config")
    _reads(
        _scheduler_raised(
            "{'model_path': '/m'}",
            "sglang.srt.x.SchedulerStateError: queue drained twice",
            ("managers/scheduler.py", "__init__", "self.init_watermark()"),
        ),
        "crashed",
    )


def test_keys_of_an_object_setting_a_component_does_not_take_are_that_setting() -> None:
    """The forty-second batch's ``--radix-eviction-policy-config '{"k": 1}'``: the eviction
    strategy is built with the object's keys (``factory(**config)``) and takes none; the frames
    (``get_eviction_strategy`` of ``unified_radix_cache``) name the setting. Its keys are said,
    never its values. Without such a setting logged, the code's own fault stays a crash."""

    def record(dump: str) -> list[str]:
        return _scheduler_raised(
            dump,
            "TypeError: LRUStrategy() takes no arguments",
            ("mem_cache/unified_radix_cache.py", "__init__", "self.tree_core = create_tree_core("),
            ("mem_cache/utils.py", "get_eviction_strategy", "return factory(**config)"),
        )

    _reads(
        record("{'model_path': '/m', 'radix_eviction_policy_config': {'k': 'secret'}}"),
        "invalid config",
        "radix_eviction_policy_config's keys k",
    )
    assert "secret" not in str(find_fatal(record("{'radix_eviction_policy_config': {'k': 's'}}")))
    _reads(record("{'model_path': '/m', 'radix_eviction_policy_config': None}"), "crashed")


def test_an_object_setting_refused_as_not_json_or_by_its_key_is_that_setting() -> None:
    """The forty-second batch's ``--model-loader-extra-config``: refused in the loader (so placed
    as *model loading* by its frames) as text a JSON decoder cannot read, or by a key it quotes;
    either is the setting's. A JSON decode error where no setting's text is broken stays where
    its frames place it."""

    def record(value: str, exception: str) -> list[str]:
        dump = f"{{'model_path': '/m', 'model_loader_extra_config': {value!r}}}"
        return _loader_raised(dump, exception)

    not_json = "orjson.JSONDecodeError: unexpected character: line 1 column 2 (char 1)"
    _reads(record("{'k': 1}", not_json), "invalid config", "model_loader_extra_config, not JSON")
    _reads(record("{}", not_json), "model loading")
    keys = "ValueError: Unexpected extra config keys for load format LoadFormat.AUTO: {'k'}"
    _reads(record('{"k": 1}', keys), "invalid config", "model_loader_extra_config's key k")


def test_a_package_an_sglang_environment_variable_asks_for_is_that_setting() -> None:
    """The forty-third batch's ``SGLANG_USE_MLX=1``: SGLang refuses to run without MLX, a
    package it does not install, and names the variable that asked for it; the variable is a
    setting given in the service's environment (no dump shows it), so the start is the config's,
    as a flag asking for an extra is. The same package missing with no variable named stays a
    broken install."""

    def record(exception: str) -> list[str]:
        return [
            "Traceback (most recent call last):",
            f'  File "{_SITE}/sglang/srt/hardware_backend/mlx/runtime.py", line 35, in _validate',
            "    raise RuntimeError(",
            exception,
        ]

    _reads(
        record(
            "RuntimeError: SGLANG_USE_MLX requires stable Torch 2.13.x and MLX >= 0.32.0, but MLX"
            " is not installed; reinstall with the srt_mps extra"
        ),
        "invalid config",
        "SGLANG_USE_MLX needs the package 'mlx'",
    )
    _reads(record("RuntimeError: MLX is not installed; reinstall"), "broken install")


def test_a_crash_through_sglangs_own_test_harness_is_a_test_setting_turned_on() -> None:
    """The forty-third batch's ``SGLANG_TEST_SCRIPTED_RUNTIME=1``: the tree cache is built by
    SGLang's test harness (``sglang/test/scripted_runtime/``, shipped in the wheel), which then
    looks for a Rust workspace no wheel has. A server runs that code only when a setting meant
    for SGLang's tests is on; the same crash in the server's own code stays a crash."""

    def record(harness: bool) -> list[str]:
        where = "test/scripted_runtime" if harness else "srt/mem_cache"
        return [
            SCHED,
            f'  File "{_SITE}/sglang/srt/mem_cache/registry.py", line 191, in create_tree_core',
            "    return factory(params, components)",
            f'  File "{_SITE}/sglang/{where}/tree_core_inspection.py", line 17, in factory',
            "    raise FileNotFoundError(",
            "FileNotFoundError: Rust workspace for sglang.srt.mem_cache.x was not found at /v/rust",
            "",
            SIGQUIT,
        ]

    _reads(record(harness=True), "invalid config", "SGLang's test harness")
    _reads(record(harness=False), "crashed")


def test_a_soft_watchdog_logs_and_the_server_carries_on() -> None:
    """The forty-fourth batch's ``--soft-watchdog-timeout 0``: the tokenizer manager's soft
    watchdog (``self.soft=True``) logs its timeout, with a stack dump, on every tick, and the
    server serves: no cause. The scheduler's own watchdog (``self.soft=False``) ends the start."""
    soft = "[2026-12-07 06:39:04] TokenizerManager watchdog timeout (self.watchdog_timeout=0.0, self.soft=True)"
    ready = "[2026-12-07 06:39:09] The server is fired up and ready to roll!"
    assert find_fatal([soft, soft, ready]) is None
    hard = "[2026-12-07 06:39:04] Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)"
    _reads([hard], "watchdog timeout")


def _config_file_read(step: str, exception: str, *inner: str) -> list[str]:
    """The main process's record of a start that failed as 0.5.23 read its ``--config`` file,
    in the merger's ``step`` (frames below it: ``inner``, outermost first)."""
    merger = f"{_SITE}/sglang/srt/utils/server_args_config_parser.py"
    return [
        "Traceback (most recent call last):",
        f'  File "{_SITE}/sglang/srt/server_args.py", line 689, in prepare_server_args',
        "    argv = config_merger.merge_config_with_args(argv)",
        f'  File "{merger}", line 91, in merge_config_with_args',
        "    config_data = self._parse_yaml_config(config_file_path)",
        f'  File "{merger}", line 140, in {step}',
        "    config_data = yaml.safe_load(file)",
        *inner,
        exception,
    ]


def test_a_failure_reading_the_config_file_is_the_files() -> None:
    """The forty-fifth batch's ``--config`` files written wrong: whatever fails as SGLang reads
    the YAML file (the YAML parser's own errors, a folder where the file was meant) is the file,
    *invalid config*; ``--config`` twice or without its path, and a key naming a flag the file
    cannot hold, are the flags', *bad flag*. The same YAML error raised by the model's own code
    stays a crash."""
    yaml_frame = f'  File "{_SITE}/yaml/scanner.py", line 258, in fetch_more_tokens'
    scanner = "yaml.scanner.ScannerError: while scanning for the next token"
    _reads(
        _config_file_read("_parse_yaml_config", scanner, yaml_frame), "invalid config", "--config"
    )
    folder = "IsADirectoryError: [Errno 21] Is a directory: '/etc/sglang/server.yaml'"
    _reads(_config_file_read("_parse_yaml_config", folder), "invalid config", "--config file")
    twice = "ValueError: Multiple config files specified! Only one allowed."
    _reads(_config_file_read("_extract_config_file_path", twice), "bad flag", "--config given")
    held = "ValueError: Unsupported config option 'dcp_replicate_q_proj' with action 'BooleanOptionalAction'"
    _reads(_config_file_read("_convert_config_to_args", held), "bad flag", "cannot hold")
    elsewhere = [
        "Traceback (most recent call last):",
        f'  File "{_SITE}/sglang/srt/configs/model_config.py", line 90, in __init__',
        "    data = yaml.safe_load(file)",
        yaml_frame,
        scanner,
    ]
    _reads(elsewhere, "crashed")


def _imported(*inner: str) -> list[str]:
    """The main process's record of a start that failed as SGLang imported a library, the
    library's frames ``inner`` (outermost first, each a frame line and its statement)."""
    return [
        "Traceback (most recent call last):",
        f'  File "{_SITE}/sglang/srt/utils/common.py", line 89, in <module>',
        "    import torch",
        *inner,
    ]


def test_the_interpreter_refusing_its_environment_is_the_environments() -> None:
    """The forty-eighth batch's ``PYTHONHASHSEED``, ``PYTHONMALLOC`` and ``PYTHONIOENCODING``
    given no value Python takes: it refuses them as it starts, before any code runs, and names
    the variable. A fault of the running interpreter stays a crash."""
    hash_seed = (
        'Fatal Python error: config_init_hash_seed: PYTHONHASHSEED must be "random" or an integer'
    )
    _reads([hash_seed, "Python runtime state: preinitialized"], "invalid config", "PYTHONHASHSEED")
    encoding = "Fatal Python error: init_stdio_encoding: failed to get the Python codec name"
    _reads([encoding, "LookupError: unknown encoding: x"], "invalid config", "PYTHONIOENCODING")
    _reads(
        [
            "Fatal Python error: Segmentation fault",
            "",
            "Current thread 0x1 (most recent call first):",
        ],
        "crashed",
    )


def test_a_library_refusing_an_environment_variable_is_the_environments() -> None:
    """The forty-eighth batch's ``HF_HUB_DOWNLOAD_TIMEOUT`` and ``TORCHINDUCTOR_COMPILE_THREADS``
    given no number: the library refuses the value as it is imported, where it reads the
    variable; the variable is named, its value never. The same refusal where no environment is
    read stays the library's import failing."""
    hub = f"{_SITE}/huggingface_hub/constants.py"

    def record(reads: str) -> list[str]:
        return _imported(
            f'  File "{hub}", line 314, in <module>',
            f"    HF_HUB_DOWNLOAD_TIMEOUT: int = _as_int({reads}) or DEFAULT_DOWNLOAD_TIMEOUT",
            f'  File "{hub}", line 25, in _as_int',
            "    return int(value)",
            "ValueError: invalid literal for int() with base 10: 'x'",
        )

    env = 'os.environ.get("HF_HUB_DOWNLOAD_TIMEOUT")'
    _reads(record(env), "invalid config", "refused the environment's HF_HUB_DOWNLOAD_TIMEOUT")
    fatal = find_fatal(record("DEFAULTS['timeout']"))
    assert fatal is not None and fatal.reason != "invalid config", fatal


def test_a_directory_the_environment_names_that_cannot_be_made_is_the_environments() -> None:
    """The forty-eighth batch's ``HOME`` and ``TORCHINDUCTOR_CACHE_DIR`` pointing where no
    process can create a directory: torch makes its cache directory as it is imported. A full
    disk stays its own cause."""

    def record(error: str) -> list[str]:
        return _imported(
            f'  File "{_SITE}/torch/_inductor/runtime/cache_dir_utils.py", line 20, in cache_dir',
            "    os.makedirs(cache_dir, exist_ok=True)",
            '  File "<frozen os>", line 225, in makedirs',
            error,
        )

    missing = "FileNotFoundError: [Errno 2] No such file or directory: '/proc/x'"
    _reads(record(missing), "invalid config", "a directory the environment names")
    _reads(record("OSError: [Errno 28] No space left on device: '/c'"), "no space left")


def test_torch_refusing_its_allocator_settings_is_the_environments() -> None:
    """The forty-eighth batch's ``PYTORCH_CUDA_ALLOC_CONF=not-a-value``, and the same variable
    with an option the installed torch does not know: its C++ side refuses them as its CUDA
    library loads, and the process aborts."""
    for what in (
        '  what():  i < config_.size() INTERNAL ASSERT FAILED at "c10/core/AllocatorConfig.h":124',
        "  what():  Unrecognized CachingAllocator option: expandable_segment",
    ):
        lines = ["terminate called after throwing an instance of 'c10::Error'", what]
        _reads(lines, "invalid config", "PYTORCH_CUDA_ALLOC_CONF")
    other = ["terminate called after throwing an instance of 'c10::Error'", "  what():  CUDA error"]
    fatal = find_fatal(other)
    assert fatal is not None and fatal.reason != "invalid config", fatal


# The forty-ninth batch's families: the unit's own settings, read in its journal.
_UNIT = "sglang.service"


def test_systemd_failing_to_set_the_process_up_is_service_setup() -> None:
    """The forty-ninth batch's ``User=``, ``ProtectHome=``, ``Group=``, ``WorkingDirectory=``:
    systemd cannot set the process up, the server never runs, and the journal holds systemd's
    lines alone; its ``Failed at step`` line says why, and where only its exit status was kept,
    that status (200 to 245: systemd's own) says the step. An exit the server's own code gives
    stays the server's."""
    program = "/opt/sglang/bin/python"
    _reads(
        [
            f"{_UNIT}: Failed to execute {program}: Permission denied",
            f"{_UNIT}: Failed at step EXEC spawning {program}: Permission denied",
            f"{_UNIT}: Main process exited, code=exited, status=203/EXEC",
            f"{_UNIT}: Failed with result 'exit-code'.",
        ],
        "service setup failed",
        f"step EXEC before the server ran, spawning {program}: Permission denied",
    )
    _reads(
        [f"{_UNIT}: Main process exited, code=exited, status=200/CHDIR"],
        "service setup failed",
        "step CHDIR",
    )
    assert find_fatal([f"{_UNIT}: Main process exited, code=exited, status=1/FAILURE"]) is None


def test_a_signal_the_kernel_sends_for_a_units_setting_is_the_config() -> None:
    """The forty-ninth batch's ``SystemCallFilter=~@resources``: the kernel ends the process by
    SIGSYS as it makes a call the filter denies, and it writes nothing; systemd's line says the
    signal, and the setting that sends it is named. A SIGKILL says no setting."""
    killed = f"{_UNIT}: Main process exited, code=killed, status=31/SYS"
    _reads(
        [killed, f"{_UNIT}: Failed with result 'signal'."], "invalid config", "SystemCallFilter="
    )
    _reads([f"{_UNIT}: Main process exited, code=killed, status=9/KILL"], "killed")
    _reads([f"{_UNIT}: Main process exited, code=killed, status=11/SEGV"], "crashed", "SIGSEGV")


def test_a_sigbus_before_the_server_wrote_a_line_is_a_library_cut_short() -> None:
    """The fifty-seventh batch's libraries cut off: the dynamic loader maps one and the first read
    past its end is a SIGBUS to the main process before it writes a line, so systemd's lines are
    the whole record; that is a library of the install, *broken install*. A SIGBUS after the
    server wrote (a mapped model or shared memory, a signal sent) stays a crash."""
    bus = f"{_UNIT}: Main process exited, code=killed, status=7/BUS"
    started = f"Started {_UNIT} - /opt/sglang/bin/python -m sglang.launch_server"
    _reads([started, bus, f"{_UNIT}: Failed with result 'signal'."], "broken install", "reinstall")
    _reads(
        [started, "[2026-12-07 22:30:01] server_args=ServerArgs(model_path='/m')", bus], "crashed"
    )


@pytest.mark.parametrize(
    ("error", "named"),
    [
        (
            "OSError: [Errno 30] Read-only file system: '/root/.cache/flashinfer/jit.log'",
            "ProtectHome=",
        ),
        (
            "FileNotFoundError: [Errno 2] No usable temporary directory found in ['/tmp', '/']",
            "PrivateTmp=",
        ),
        ("zmq.error.ZMQError: Too many open files", "LimitNOFILE="),
        (
            "PermissionError: [Errno 13] Permission denied: '/root/.cache/flashinfer/jit.log'",
            "User=",
        ),
        ("FileNotFoundError: [Errno 2] No such file or directory: '/proc/stat'", "ProcSubset="),
    ],
)
def test_what_the_units_sandbox_and_limits_deny_is_the_config(error: str, named: str) -> None:
    """The forty-ninth batch's ``ProtectHome=read-only``, ``ProtectSystem=strict``,
    ``LimitNOFILE=64``, ``ProcSubset=pid``: the server meets them deep in a library as it starts,
    and the exception says what was denied; the settings that deny it are named. A path that is
    not there stays what it was."""
    record = _imported(
        f'  File "{_SITE}/psutil/_common.py", line 682, in open_binary',
        '    return open(fname, "rb")',
        error,
    )
    _reads(record, "invalid config", named)
    other = _imported(
        f'  File "{_SITE}/psutil/_common.py", line 682, in open_binary',
        '    return open(fname, "rb")',
        "FileNotFoundError: [Errno 2] No such file or directory: '/srv/x'",
    )
    fatal = find_fatal(other)
    assert fatal is not None and fatal.reason != "invalid config", fatal
    hub_model = "/root/.cache/huggingface/hub/models--org--m/snapshots/1/config.json"
    fatal = find_fatal(
        [*other[:-1], f"PermissionError: [Errno 13] Permission denied: '{hub_model}'"]
    )
    assert fatal is not None and fatal.reason != "invalid config", fatal  # a model, not a cache


def test_the_interpreter_finding_no_server_module_is_a_broken_install() -> None:
    """The fiftieth batch's venv whose ``sglang`` package its user cannot read: ``python -m``
    finds no module to run, and says so in runpy's own words, without a traceback."""
    venv = "/opt/sglang/bin/python"
    _reads([f"{venv}: No module named sglang.launch_server"], "broken install", "sglang.launch")


def test_a_model_file_the_units_user_may_not_read_is_model_access_denied() -> None:
    """The fifty-first batch's model files and directories made private to root, the server
    run as ``User=nobody``: permission denied on a path inside the logged model path, or in
    frames that read the model's files before the settings are logged (its config, as the
    arguments resolve) or from a library that names no path (tokenizers' ``os error 13``). A
    home directory the same frames cannot create stays the environment's."""
    model = "/srv/models/m"
    dump = f"[2026-12-07 16:00:00] server_args=ServerArgs(model_path='{model}', tp_size=1)"
    tokenizer = [
        dump,
        "Traceback (most recent call last):",
        f'  File "{_SITE}/sglang/srt/utils/hf_transformers/tokenizer.py", line 9, in get_tokenizer',
        "    tokenizer = AutoTokenizer.from_pretrained(path)",
        f"PermissionError: [Errno 13] Permission denied: '{model}/tokenizer_config.json'",
    ]
    _reads(tokenizer, "model access denied", f"may not read {model}/tokenizer_config.json")
    config = _imported(
        f'  File "{_SITE}/transformers/configuration_utils.py", line 792, in get_config_dict',
        "    config_dict, kwargs = cls._get_config_dict(path)",
        f"PermissionError: [Errno 13] Permission denied: '{model}/config.json'",
    )
    _reads(config, "model access denied", f"{model}/config.json")
    rust = _imported(
        f'  File "{_SITE}/transformers/tokenization_utils_base.py", line 1739, in from_pretrained',
        "    return cls._from_pretrained(path)",
        "Exception: Permission denied (os error 13)",
    )
    _reads(rust, "model access denied", "a file of the model")
    home = _imported(
        f'  File "{_SITE}/transformers/configuration_utils.py", line 792, in get_config_dict',
        "    config_dict, kwargs = cls._get_config_dict(path)",
        f'  File "{_SITE}/huggingface_hub/constants.py", line 40, in cache_dir',
        "    os.makedirs(cache_dir, exist_ok=True)",
        '  File "<frozen os>", line 225, in makedirs',
        "PermissionError: [Errno 13] Permission denied: '/nonexistent'",
    )
    _reads(home, "invalid config")


def test_the_open_file_limit_said_by_a_cpp_library_is_the_units() -> None:
    """The fifty-second batch's ``LimitNOFILE=16``: ZeroMQ's C++ side says it before it aborts
    the process, with no Python exception; the unit's limit is named as for Python's EMFILE."""
    lines = [
        "Too many open files (src/epoll.cpp:38)",
        f"{_UNIT}: Main process exited, code=killed, status=6/ABRT",
    ]
    _reads(lines, "invalid config", "LimitNOFILE=")


def _bus_error(*frames: str) -> list[str]:
    """A scheduler ended by SIGBUS in ``frames`` (faulthandler's dump, innermost first), and
    the parent's summary of it."""
    return [
        "Fatal Python error: Bus error",
        "",
        "Current thread 0x00007f048b85fb80 (most recent call first):",
        *frames,
        f'  File "{_SITE}/sglang/srt/managers/scheduler.py", line 547 in __init__',
        "",
        "Traceback (most recent call last):",
        f'  File "{_SITE}/sglang/srt/entrypoints/engine.py", line 2029, in _wait_for_scheduler_ready',
        "    raise _scheduler_died_error(i, scheduler_procs[i])",
        "RuntimeError: Rank 0 scheduler died during initialization (exit code: -7).",
    ]


def test_a_bus_error_writing_shared_memory_is_dev_shm_short() -> None:
    """The fifty-third batch's ``/dev/shm`` of a page: the scheduler dies of SIGBUS writing its
    load snapshot into a ``/dev/shm`` mapping with no room behind it, and says nothing else.
    Read as an engineer reads a container's small ``--shm-size``: *no space left*, ``/dev/shm``
    named. A Bus error in any other frame (a signal from outside as the KV cache is sized, the
    sixteenth batch's) says nothing of shared memory and stays a crash."""
    snapshot = f'  File "{_SITE}/sglang/srt/managers/load_snapshot.py", line 374 in _write_payload'
    _reads(_bus_error(snapshot), "no space left", "/dev/shm too small or full")
    torch = f'  File "{_SITE}/torch/storage.py", line 526 in _share_fd_cpu_'
    _reads(_bus_error(torch), "no space left", "--shm-size")
    sizing = (
        f'  File "{_SITE}/sglang/srt/mem_cache/kv_cache_configurator.py", line 2999 in _profile'
    )
    _reads(_bus_error("  Garbage-collecting", sizing), "crashed", "Bus error")


def test_systemd_failing_the_start_around_the_server_is_service_setup() -> None:
    """A unit's start refused or failed around the server's own process: an unreadable
    ``EnvironmentFile=``, an ``ExecStartPre=`` check failing, a ``Condition...=`` or
    ``Assert...=`` unmet. systemd's own line says which; the server never ran."""
    _reads(
        [
            f"{_UNIT}: Failed to load environment files: No such file or directory",
            f"{_UNIT}: Failed to run 'start' task: No such file or directory",
            f"{_UNIT}: Failed with result 'resources'.",
        ],
        "service setup failed",
        "EnvironmentFile= cannot be read: No such file or directory",
    )
    _reads(
        [
            f"Starting {_UNIT} - SGLang...",
            f"{_UNIT}: Control process exited, code=exited, status=1/FAILURE",
            f"{_UNIT}: Failed with result 'exit-code'.",
        ],
        "service setup failed",
        "ExecStartPre=, ExecCondition=, ExecStartPost=) failed, status 1/FAILURE",
    )
    _reads(
        [
            f"{_UNIT} - SGLang was skipped because of an unmet condition check"
            " (ConditionPathExists=/dev/nvidia0)."
        ],
        "service setup failed",
        "the unit's ConditionPathExists=/dev/nvidia0 is not met",
    )
    _reads(
        [f"{_UNIT}: Starting requested but asserts failed.", f"Assertion failed for {_UNIT}."],
        "service setup failed",
        "Assert",
    )


def test_a_module_shadowed_by_a_stray_file_names_the_file() -> None:
    """The fifty-fifth batch's stray modules in a unit's working directory (first on
    ``sys.path`` under ``python -m``): an import from the stray file names its path, a
    submodule asked of a single file says it is not a package; both are *broken install* with
    the stray file named and what to do. A module of an installed location is not stray."""
    stray = _imported(
        f'  File "{_SITE}/sglang/srt/utils/common.py", line 30, in <module>',
        "    from json import JSONDecodeError",
        "ImportError: cannot import name 'JSONDecodeError' from 'json' (/srv/wd/json.py)",
    )
    _reads(stray, "broken install", "/srv/wd/json.py shadows the installed json")
    single = _imported(
        f'  File "{_SITE}/sglang/srt/distributed/parallel_state.py", line 40, in <module>',
        "    import torch.distributed",
        "ModuleNotFoundError: No module named 'torch.distributed'; 'torch' is not a package",
    )
    _reads(single, "broken install", "a stray torch.py shadows it")
    installed = _imported(
        f'  File "{_SITE}/sglang/srt/layers/linear.py", line 12, in <module>',
        "    from sgl_kernel import fused_op",
        f"ImportError: cannot import name 'fused_op' from 'sgl_kernel' ({_SITE}/sgl_kernel/__init__.py)",
    )
    fatal = find_fatal(installed)
    assert fatal is not None and "shadows" not in fatal.message, fatal


def _config_read(path: str) -> list[str]:
    """The main process's record of transformers refusing the folder at ``path`` as a model."""
    return [
        "Traceback (most recent call last):",
        f'  File "{_SITE}/sglang/srt/utils/hf_transformers/config.py", line 228, in parse',
        "    config = AutoConfig.from_pretrained(",
        f'  File "{_SITE}/transformers/models/auto/configuration_auto.py", line 442, in from_pretrained',
        "    raise ValueError(",
        f"ValueError: Unrecognized model in {path}. Should have a `model_type` key in its"
        " config.json.",
    ]


def test_a_model_path_at_a_folder_of_the_hub_cache_is_no_model() -> None:
    """The fifty-sixth batch's ``--model-path`` given the hub cache's folder of a model, its
    ``snapshots`` or its ``blobs`` folder: transformers says the folder lacks a model type, as it
    says for a config without one; the path shows it is the cache's own folder, *model not
    found*, and the reason says what to give instead. A snapshot's folder is a model's folder,
    read as its own words say."""
    hub = "/data/hf/hub/models--meta-llama--Llama-3.1-8B"
    for folder in (hub, f"{hub}/snapshots", f"{hub}/blobs"):
        _reads(_config_read(folder), "model not found", "give --model-path meta-llama/Llama-3.1-8B")
    _reads(_config_read(f"{hub}/snapshots/0123abcd"), "unsupported model")
    _reads(_config_read("/models/custom-llama"), "unsupported model")
