"""Startup-journal checks on real SGLang log lines: parse, verify, classify, expect/forbid."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import SEED_FIELDS

from pytest_sglang import JournalError, ServerConfig
from pytest_sglang.lifecycle.journal import (
    StartupJournal,
    find_fatal,
    phase_of,
    traceback_complete,
)
from pytest_sglang.resolution import ADJUST_DRAFT_TOKENS_WARNING, MAX_RUNNING_48_WARNING

DATA = Path(__file__).parent / "data"
SEED = ServerConfig(**SEED_FIELDS, host="0.0.0.0", port=30000)


def seed_lines(*, draft_tokens: int = 3, steps: int = 2, warn: bool = True) -> list[str]:
    """A startup journal built around the real 0.5.23 server_args line of the seed config.

    The captured line holds parsed (unresolved) values; a real server logs them resolved, so
    the values that SGLang's rules change are filled in here as the server would.
    """
    line = (DATA / "server_args_dict_seed_eagle_steps2.txt").read_text().strip()
    line = line.replace(
        "'speculative_num_draft_tokens': None", f"'speculative_num_draft_tokens': {draft_tokens}"
    )
    line = line.replace("'speculative_num_steps': 2", f"'speculative_num_steps': {steps}")
    line = line.replace("'max_running_requests': None", "'max_running_requests': 48")
    lines = ["[2026-11-30 19:50:00] " + MAX_RUNNING_48_WARNING]
    if warn:
        lines.append("[2026-11-30 19:50:00] " + ADJUST_DRAFT_TOKENS_WARNING)
    lines += [
        line,
        "[2026-11-30 19:50:03 TP0] Load weight begin. avail mem=94.10 GB",
        "[2026-11-30 19:50:40 TP0] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 411000",
        "[2026-11-30 19:51:40 TP0] max_total_num_tokens=411000, chunked_prefill_size=8192, "
        "max_prefill_tokens=16384, max_running_requests=21, context_len=262144, "
        "available_gpu_mem=6.69 GB",
        "[2026-11-30 19:51:41] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)",
        "[2026-11-30 19:51:44] The server is fired up and ready to roll!",
    ]
    return lines


def test_a_healthy_seed_startup_verifies() -> None:
    journal = StartupJournal(seed_lines())
    logged = journal.verify(SEED.expected_journal("0.5.23"))
    assert logged["speculative_num_draft_tokens"] == 3
    assert journal.scheduler_limits()["max_running_requests"] == 21
    assert journal.ready


def test_a_flag_that_did_not_take_effect_fails_with_a_diff() -> None:
    journal = StartupJournal(seed_lines(steps=1, draft_tokens=2), where="llm-two eagle-s2-k1")
    with pytest.raises(JournalError) as info:
        journal.verify(SEED.expected_journal())
    message = str(info.value)
    assert message.startswith("llm-two eagle-s2-k1: ")
    assert "speculative_num_steps requested 2, logged 1" in message
    assert "speculative_num_draft_tokens requested 3, logged 2" in message
    assert "\n" not in message


def test_a_missing_adjustment_warning_fails() -> None:
    with pytest.raises(JournalError, match="expected warning missing"):
        StartupJournal(seed_lines(warn=False)).verify(SEED.expected_journal())


def test_a_missing_server_args_line_fails() -> None:
    with pytest.raises(JournalError, match="no server_args line since the restart"):
        StartupJournal(["[2026-11-30 19:50:00] hello"]).verify(SEED.expected_journal())


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (
            "[2026-11-30 19:50:40 TP0] RuntimeError: Not enough memory. Please try to increase "
            "--mem-fraction-static. Current value: mem_fraction_static=0.88",
            "out of memory",
        ),
        ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", "out of memory"),
        (
            "[2026-11-30 19:50:40 TP0] Exception: Capture cuda graph failed: boom",
            "CUDA graph capture",
        ),
        (
            "[2026-11-30 19:50:40 TP0] Scheduler hit an exception: Traceback (most recent call last):",
            "crashed",
        ),
        (
            "[2026-11-30 19:50:40] Received sigquit from a child process. It usually means",
            "crashed",
        ),
        ("launch_server.py: error: unrecognized arguments: --bogus", "bad flag"),
        ("[2026-11-30 19:50:40] Initialization failed. warmup error: x", "warmup failed"),
    ],
)
def test_fatal_lines_are_classified(line: str, reason: str) -> None:
    fatal = find_fatal(["[2026-11-30 19:50:00] Load weight begin. avail mem=1 GB", line])
    assert fatal is not None
    assert fatal.reason == reason
    assert fatal.index == 1


def test_fatal_lines_fail_verification() -> None:
    lines = [*seed_lines(), "[2026-11-30 19:52:00 TP0] Scheduler hit an exception: Traceback"]
    with pytest.raises(JournalError, match="crashed"):
        StartupJournal(lines).verify(SEED.expected_journal())


def test_phase_follows_the_milestones() -> None:
    lines = seed_lines()
    assert phase_of(lines[:3]) == "initialising"
    assert phase_of(lines[:4]) == "loading weights"
    assert phase_of(lines[:5]) == "KV cache"
    assert phase_of(lines) == "ready"


def test_expect_and_forbid() -> None:
    journal = StartupJournal(seed_lines(), where="h c")
    assert "KV Cache" in journal.expect(r"KV Cache is allocated.*#tokens: \d+")
    with pytest.raises(JournalError, match="no journal line since the restart matches"):
        journal.expect("never logged")
    journal.forbid("Traceback")
    with pytest.raises(JournalError, match="forbidden pattern 'Uvicorn'"):
        journal.forbid("Uvicorn")


def test_scheduler_limit_above_the_request_fails() -> None:
    lines = [
        line.replace("max_running_requests=21", "max_running_requests=64") for line in seed_lines()
    ]
    with pytest.raises(JournalError, match="max_running_requests=64, above the requested 48"):
        StartupJournal(lines).verify(SEED.expected_journal())


@pytest.mark.parametrize(
    ("exception", "cited"),
    [("ImportError: common_ops failed to load:", 2), ("ImportError: ", 4)],
)
def test_a_cause_on_a_continuation_line_names_the_failure_and_cites_the_exception(
    exception: str, cited: int
) -> None:
    """The exception line is cited, quoting the continuation that names the cause; one with no
    message of its own cites that continuation line itself (its line carries the cause)."""
    lines = [
        "Traceback (most recent call last):",
        '  File "/x/sgl_kernel/__init__.py", line 5, in <module>',
        exception,
        "[sgl_kernel] CRITICAL: Could not load any common_ops library!",
        "- ImportError: /x/common_ops.abi3.so: undefined symbol: _ZNK3c106SymInt6sym_neERKS0_",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.reason == "broken install" and fatal.index == cited
    assert "undefined symbol" in fatal.summary and "\n" not in fatal.summary


def test_the_most_specific_link_of_a_chain_wins() -> None:
    lines = [
        "[2026-11-30 19:50:40 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/x/loader.py", line 580, in _prepare_weights',
        "RuntimeError: Cannot find any model weights with `/models/x`",
        "",
        "During handling of the above exception, another exception occurred:",
        "",
        "Traceback (most recent call last):",
        '  File "/x/scheduler.py", line 3130, in run_scheduler_process',
        "RuntimeError: Initialization failed",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.reason == "model loading" and fatal.index == 2


@pytest.mark.parametrize(
    ("last_words", "reason"),
    [("Killed", "killed"), ("Segmentation fault (core dumped)", "crashed")],
)
def test_a_summary_line_is_explained_by_the_untimestamped_line_before_it(
    last_words: str, reason: str
) -> None:
    lines = [
        "[2026-11-30 19:50:00] Load weight begin. avail mem=1 GB",
        last_words,
        "[2026-11-30 19:50:40] Received sigquit from a child process. It usually means",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == (reason, 1)


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (
            "sglang.service: A process of this unit has been killed by the OOM killer.",
            "out of memory",
        ),
        ("RuntimeError: Rank 0 scheduler died during initialization (exit code: -9).", "killed"),
        (
            "[2026-11-30 19:50:40 TP0] Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)",
            "watchdog timeout",
        ),
        (
            "[rank4]:[E304 ProcessGroupNCCL.cpp:616] [Rank 4] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1)",
            "NCCL",
        ),
    ],
)
def test_oom_kills_and_watchdogs_are_named(line: str, reason: str) -> None:
    fatal = find_fatal(["[2026-11-30 19:50:00] Load weight begin. avail mem=1 GB", line])
    assert fatal is not None and fatal.reason == reason


def test_a_summary_exception_is_explained_by_the_exception_before_it() -> None:
    """``Initialization failed. Please see the error messages above.`` is the parent's own
    RuntimeError: it names nothing, the child's exception before it does."""
    lines = [
        "[2026-11-30 19:50:40 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/x/model_runner.py", line 300, in init',
        "KeyError: 'foo'",
        "Traceback (most recent call last):",
        '  File "/x/engine.py", line 2035, in _wait_for_scheduler_ready',
        "RuntimeError: Initialization failed. Please see the error messages above.",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == ("crashed", 2)


def test_sglangs_own_sigkill_hint_is_not_a_kill() -> None:
    line = (
        "RuntimeError: Rank 0 scheduler died during initialization (exit code: 1). If exit code "
        "is -9 (SIGKILL), a common cause is the OS OOM killer. Run `dmesg -T | grep -i oom` to check."
    )
    fatal = find_fatal(["[2026-11-30 19:50:00] Load weight begin. avail mem=1 GB", line])
    assert fatal is not None and fatal.reason == "crashed"


def test_an_import_error_sglang_ignores_is_not_a_cause() -> None:
    lines = [
        "[2026-11-30 19:50:00 TP0] Ignore import error when loading sglang.srt.models.x: "
        "No module named 'mindspore'",
        "[2026-11-30 19:50:00 TP0] Load weight begin. avail mem=1 GB",
    ]
    assert find_fatal(lines) is None


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("[2026-11-30 19:50:40] DetokenizerManager hit an exception: Traceback", "crashed"),
        ("RuntimeError: Failed to find C compiler. Please specify via CC.", "JIT compile failed"),
        ("RuntimeError: no kernel image is available for execution on the device", "CUDA error"),
        ("/bin/sh: line 1:   42 Killed                  python3 -m sglang.launch_server", "killed"),
        ("ImportError: libcudart.so.12: cannot open shared object file", "broken install"),
    ],
)
def test_more_causes_are_named(line: str, reason: str) -> None:
    fatal = find_fatal(["[2026-11-30 19:50:00] Load weight begin. avail mem=1 GB", line])
    assert fatal is not None and fatal.reason == reason


def test_the_server_args_dump_is_a_setting_not_a_cause() -> None:
    lines = [
        "[2026-11-30 19:50:00] server_args=ServerArgs(model_path='/m', trust_remote_code=True)",
        "[2026-11-30 19:50:01] Load weight begin. avail mem=1 GB",
    ]
    assert find_fatal(lines) is None


def test_a_kill_after_the_parent_tree_kill_is_aftermath_not_the_cause() -> None:
    """After ``Received sigquit`` SGLang's parent SIGKILLs its own tree; the shell's ``Killed``
    that follows says nothing about why the child failed."""
    lines = [
        "[2026-11-30 19:50:40 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/x/models/llama.py", line 571, in load_weights',
        "    param = params_dict[name]",
        "KeyError: 'model.layers.0.mlp.gate_up_proj.input_scale'",
        "[2026-11-30 19:50:41] Received sigquit from a child process. It usually means the child failed.",
        "./entrypoint.sh: line 47: 28 Killed python3 -m sglang.launch_server ...",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == ("model loading", 3)


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (
            "/x/flashinfer/utils.cuh:21:10: fatal error: cuda_fp8.h: 没有那个文件或目录",
            "JIT compile failed",
        ),
        ("compilation terminated.", "JIT compile failed"),
    ],
)
def test_compiler_failures_are_named_in_any_locale(line: str, reason: str) -> None:
    fatal = find_fatal(["[2026-11-30 19:50:00] Load weight begin. avail mem=1 GB", line])
    assert fatal is not None and fatal.reason == reason


def test_a_model_type_transformers_does_not_know_is_an_unsupported_model() -> None:
    lines = [
        "Traceback (most recent call last):",
        '  File "/x/sglang/srt/configs/model_config.py", line 69, in __init__',
        "    self.hf_config = get_config(",
        '  File "/x/transformers/models/auto/configuration_auto.py", line 813, in __getitem__',
        "    raise KeyError(key)",
        "KeyError: 'llava_qwen'",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == ("unsupported model", 5)


def test_a_quantization_config_refusal_is_an_invalid_config_wherever_it_is_raised() -> None:
    """SGLang builds the quantization config inside weight loading: the refusal's own words (a
    config that only supports another scheme) outrank the loading frames around it."""
    lines = [
        "[2026-11-30 19:50:40 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/x/sglang/srt/model_loader/weight_utils.py", line 205, in get_quant_config',
        "    return quant_cls.from_config(hf_quant_config)",
        '  File "/x/sglang/srt/layers/quantization/awq.py", line 90, in from_config',
        "    raise ValueError(",
        "ValueError: AWQConfig only supports 4-bit weights, got 8.",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == ("invalid config", 5)
    # a loading failure that does not speak of the config stays a loading failure
    lines[-1] = "ValueError: shape mismatch for lm_head.weight"
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.reason == "model loading"


def test_a_signal_faulthandler_reports_is_the_cause_placed_by_the_thread_it_hit() -> None:
    """A SIGSEGV/SIGBUS kills the scheduler before any exception: faulthandler's report is the
    cause, the parent's EOFError after ``scheduler is dead`` its aftermath."""
    lines = [
        "[2026-11-30 19:50:09 TP0] Load weight begin. avail mem=78.53 GB",
        "Fatal Python error: Segmentation fault",
        "",
        "Thread 0x00007f (most recent call first):",
        '  File "/x/tqdm/_monitor.py", line 60 in run',
        "",
        "Current thread 0x00007e (most recent call first):",
        '  File "/x/sglang/srt/models/llama.py", line 500 in load_weights',
        '  File "/x/sglang/srt/model_loader/loader.py", line 377 in load_model',
        "",
        "Extension modules: numpy.core._multiarray_umath, torch._C (total: 84)",
        "[2026-11-30 19:50:40] Rank 0 scheduler is dead. Please check if there are relevant logs.",
        "Traceback (most recent call last):",
        '  File "/x/multiprocessing/connection.py", line 403, in _recv',
        "    raise EOFError",
        "EOFError",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == ("model loading", 1)
    # outside any phase a hint knows, a signal is a bare crash
    lines[7:9] = ['  File "/x/sglang/srt/managers/scheduler.py", line 900 in event_loop']
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == ("crashed", 1)


def test_a_call_that_does_not_fit_its_function_is_a_crash_not_a_refused_setting() -> None:
    lines = [
        "[2026-11-30 19:50:40 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/x/sglang/srt/layers/moe/ep_moe.py", line 412, in forward',
        "    kernel[(n,)](",
        '  File "/x/triton/runtime/jit.py", line 576, in run',
        "    bound_args, specialization, options = binder(*args, **kwargs)",
        "TypeError: dynamic_func() missing 1 required positional argument: 'scale'",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == ("crashed", 5)
    # raised while the arguments are checked, it is the config that is refused
    lines[1] = '  File "/x/sglang/srt/server_args.py", line 700, in __post_init__'
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.reason == "invalid config"


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (
            "ValueError: GGUF model with architecture gemma3n is not supported yet.",
            "unsupported model",
        ),
        ("ValueError: Architecture ['FooForCausalLM'] is not supported.", "unsupported model"),
        ("ValueError: model type `mllama4` is not supported yet", "unsupported model"),
    ],
)
def test_transformers_ways_of_refusing_an_architecture_are_unsupported_models(
    line: str, reason: str
) -> None:
    fatal = find_fatal(["[2026-11-30 19:50:00] Load weight begin. avail mem=1 GB", line])
    assert fatal is not None and fatal.reason == reason


def test_a_gpu_architecture_a_kernel_refuses_is_not_an_unsupported_model() -> None:
    line = "RuntimeError: architecture sm_120 is not supported by this kernel"
    fatal = find_fatal(
        ["Traceback (most recent call last):", '  File "/x/k.py", line 1, in f', line]
    )
    # the GPU, not the model, is refused: a choice this GPU cannot run
    assert fatal is not None and fatal.reason == "invalid config"


def test_an_exception_no_pattern_knows_is_placed_by_the_most_specific_link_of_its_chain() -> None:
    """A library's inner error (json's) wrapped by the one raised where the start failed (the
    warmup thread's ``requests`` call): the outer link says where, so it names the failure."""
    lines = [
        "Traceback (most recent call last):",
        '  File "/x/requests/models.py", line 974, in json',
        "    return complexjson.loads(self.text, **kwargs)",
        "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)",
        "",
        "During handling of the above exception, another exception occurred:",
        "",
        "Traceback (most recent call last):",
        '  File "/x/sglang/srt/entrypoints/http_server.py", line 445, in _wait_and_warmup',
        "    model_info = res.json()",
        '  File "/x/requests/models.py", line 978, in json',
        "    raise RequestsJSONDecodeError(e.msg, e.doc, e.pos)",
        "requests.exceptions.JSONDecodeError: Expecting value: line 1 column 1 (char 0)",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == ("warmup failed", 12)
    # the same two exceptions, not chained: each is its own failure, the first one wins
    lines[5] = "[2026-11-30 19:50:40] Retrying."
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == ("crashed", 3)
    # chained the other way round, the inner link placed and the outer one bare
    chained = [
        *lines[7:13],
        "",
        "The above exception was the direct cause of the following exception:",
        "",
        *lines[:4],
    ]
    fatal = find_fatal(chained)
    assert fatal is not None and (fatal.reason, fatal.index) == ("warmup failed", 5)


def test_a_crash_after_a_flag_without_the_flag_it_needs_is_an_invalid_config() -> None:
    """EAGLE3 without a draft model: SGLang loads the target as its own draft and crashes where
    the draft is first used; the logged server_args show the missing flag."""
    args = {"model_path": "Qwen/Qwen2.5-0.5B-Instruct", "speculative_algorithm": "EAGLE3"}
    lines = [
        f"[2026-12-03 10:00:01] server_args={dict(args, speculative_draft_model_path=None)}",
        "[2026-12-03 10:00:13 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/x/sglang/srt/speculative/eagle_worker.py", line 171, in __init__',
        "    self.draft_model_runner.model.set_embed(embed)",
        "AttributeError: 'Qwen2ForCausalLM' object has no attribute 'set_embed'",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == ("invalid config", 4)
    assert "speculative_draft_model_path, which is not set" in fatal.summary
    # with the draft model given, the same crash is a crash
    lines[0] = f"[2026-12-03 10:00:01] server_args={dict(args, speculative_draft_model_path='d')}"
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.reason == "crashed"
    # a dump that does not list the flag says nothing about it
    lines[0] = f"[2026-12-03 10:00:01] server_args={args}"
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.reason == "crashed"


@pytest.mark.parametrize(
    "line",
    [
        "RuntimeError: No accelerator (CUDA, XPU, HPU, NPU, MUSA, MPS) or platform plugin is "
        "available.",
        "/x/torch/cuda/__init__.py:182: UserWarning: CUDA initialization: Unexpected error from "
        "cudaGetDeviceCount(). Did you run some cuda functions before calling NumCudaDevices() "
        "that might have already set an error? Error 802: system not yet initialized",
    ],
)
def test_a_host_without_a_usable_gpu_is_no_gpu(line: str) -> None:
    fatal = find_fatal([line])
    assert fatal is not None and fatal.reason == "no GPU"


def test_the_exception_is_cited_over_a_warning_that_names_the_same_cause() -> None:
    lines = [
        "/x/torch/cuda/__init__.py:182: UserWarning: CUDA initialization: Unexpected error from "
        "cudaGetDeviceCount(). Error 802: system not yet initialized",
        "  return torch._C._cuda_getDeviceCount() > 0",
        "Traceback (most recent call last):",
        '  File "/x/sglang/srt/server_args.py", line 871, in _handle_missing_default_values',
        "    self.device = get_device()",
        "RuntimeError: No accelerator (CUDA, XPU, HPU, NPU, MUSA, MPS) or platform plugin is "
        "available.",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == ("no GPU", 5)
    # an exception no pattern knows: the warning names the cause
    lines[-1] = "RuntimeError: device unavailable"
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == ("no GPU", 0)


def test_a_feature_disabled_for_a_quoted_cause_is_a_warning() -> None:
    """Real 0.5.23, TP 2 on a CPU, while it warms up and then serves: the cause it quotes
    would read as "no GPU" on an exception line, not on a line that says the server goes on."""
    warning = (
        "[2026-12-03 12:01:05 TP0] multimem all-gather disabled (Found no NVIDIA driver on "
        "your system. Please check that you have an NVIDIA GPU and installed a driver from "
        "http://www.nvidia.com/Download/index.aspx)"
    )
    assert (
        find_fatal([warning, "[2026-12-03 12:01:06] The server is fired up and ready to roll!"])
        is None
    )
    fatal = find_fatal([warning, "RuntimeError: Found no NVIDIA driver on your system."])
    assert fatal is not None and fatal.reason == "no GPU"
    assert fatal.line.startswith("RuntimeError")


@pytest.mark.parametrize(
    "refusal",
    [
        "RuntimeError: Unsupported arch for this kernel: sm_89",
        "RuntimeError: fused_mla_decode is not supported on sm_75",
        "ValueError: The FP4 GEMM requires compute capability 10.0 or newer",
        "AssertionError: This attention kernel only supports Hopper GPUs",
        "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0.",
        "RuntimeError: sm_120 is not supported by this build",
    ],
)
def test_a_kernel_refusing_the_gpu_is_an_invalid_config_naming_the_backend(refusal: str) -> None:
    """Whatever its wording, a kernel, backend or dtype refusing the GPU means the config chose
    something this GPU cannot run; the chosen backend is named when server_args logged one."""
    args = {"model_path": "m", "attention_backend": "fa3", "dtype": "auto"}
    lines = [
        f"[2026-12-03 10:00:01] server_args={args}",
        "[2026-12-03 10:00:09 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/x/sglang/srt/layers/attention/some_backend.py", line 40, in forward',
        "    run(q, k, v)",
        refusal,
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == ("invalid config", 4)
    assert "attention_backend='fa3'" in fatal.summary


def test_a_refusal_of_the_gpu_in_a_warning_is_not_a_cause() -> None:
    """SGLang and its kernels say the same words when they fall back by themselves."""
    lines = [
        "[2026-12-03 10:00:02] WARNING: the fused kernel is not supported on this GPU; "
        "using the reference kernel.",
        "[2026-12-03 10:00:09] The server is fired up and ready to roll!",
    ]
    assert find_fatal(lines) is None


@pytest.mark.parametrize(
    "line",
    [
        "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 99999,"
        " Hardware limit: 65536.",
        "RuntimeError: Triton Error [CUDA]: too many resources requested for launch",
    ],
)
def test_a_kernel_that_exceeds_the_gpus_resources_is_a_cuda_error(line: str) -> None:
    frames = ['  File "/x/sglang/srt/layers/moe/some_kernel.py", line 8, in run', "    k[g]()"]
    fatal = find_fatal(["Traceback (most recent call last):", *frames, line])
    assert fatal is not None and (fatal.reason, fatal.index) == ("CUDA error", 3)
    # raised inside CUDA-graph capture, it is the capture that failed (SGLang's own headline)
    capture = ['  File "/x/sglang/srt/model_executor/cuda_graph_runner.py", line 3, in capture']
    fatal = find_fatal(["Traceback (most recent call last):", *capture, *frames, line])
    assert fatal is not None and fatal.reason == "CUDA graph capture"


def test_a_crash_through_two_chosen_components_is_the_pair_that_cannot_run_together() -> None:
    args = {"model_path": "m", "attention_backend": "triton", "quantization": "w4a8"}
    lines = [
        f"[2026-12-03 10:00:01] server_args={args}",
        "[2026-12-03 10:00:13 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/x/sglang/srt/layers/quantization/w4a8.py", line 90, in apply',
        "    out = self.kernel(x)",
        '  File "/x/sglang/srt/layers/attention/triton_backend.py", line 300, in forward',
        "    meta.kv_indptr[0]",
        "TypeError: 'NoneType' object is not subscriptable",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == ("invalid config", 6)
    assert "attention_backend='triton' with quantization='w4a8'" in fatal.summary
    # through one chosen component only, the crash is that component's fault
    fatal = find_fatal([*lines[:2], *lines[4:]])
    assert fatal is not None and fatal.reason == "crashed"


@pytest.mark.parametrize(
    "line",
    [
        "[rank3]:[E1203 10:00:07.123456789 ProcessGroupNCCL.cpp:1900] [PG ID 1 Rank 3] Process "
        "group watchdog thread terminated with exception: unhandled cuda error",
        "[rank0]:[E1203 10:00:07.1 ProcessGroupNCCL.cpp:2000] [Rank 0] failure detected by "
        "watchdog at work sequence id: 12",
        "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:3000, "
        "remote process exited or there was a network error",
    ],
)
def test_a_collective_failure_is_named_by_its_first_line(line: str) -> None:
    """Torch's abort after an NCCL failure (``terminate called ... DistBackendError``, the
    faulthandler header) is aftermath: the first failure line is cited."""
    lines = [
        "[2026-12-03 10:00:06 TP3] Capture cuda graph end.",
        line,
        "terminate called after throwing an instance of 'c10::DistBackendError'",
        "Fatal Python error: Aborted",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == ("NCCL", 1)


def test_a_lost_peer_in_a_distributed_frame_is_nccl() -> None:
    lines = [
        "Traceback (most recent call last):",
        '  File "/x/torch/distributed/distributed_c10d.py", line 4000, in barrier',
        "    work.wait()",
        "RuntimeError: [/x/gloo/transport/tcp/pair.cc:534] Connection reset by peer",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == ("NCCL", 3)
    lines[1] = '  File "/x/sglang/srt/entrypoints/http_server.py", line 10, in post'
    lines[3] = "RuntimeError: Connection reset by peer"
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.reason == "crashed"
    # a W-level line of the process group is no failure
    warning = (
        "[rank0]:[W1203 10:00:05.1 ProcessGroupNCCL.cpp:5000] Warning: using GPU 0 as device "
        "used by this process is currently unknown"
    )
    assert (
        find_fatal([warning, "[2026-12-03 10:00:09] The server is fired up and ready to roll!"])
        is None
    )


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("RuntimeError: Capture CUDA graph failed: see above", "CUDA graph capture"),
        ("torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB", "out of memory"),
        ("RuntimeError: CUDA_ERROR_OUT_OF_MEMORY while mapping the pool", "out of memory"),
        ("RuntimeError: Triton Error [CUDA]: invalid argument", "CUDA error"),
        (
            "RuntimeError: Failed: CUDA error /x/deep_ep/buffer.cu:88 'invalid argument'",
            "CUDA error",
        ),
        ("RuntimeError: HIP error: invalid device function", "CUDA error"),
        ("RuntimeError: CUDA_ERROR_ILLEGAL_ADDRESS at launch", "CUDA error"),
        ("RuntimeError: RCCL error: unhandled system error", "NCCL"),
        ("OSError: [Errno 98] error binding the socket", "port in use"),
        ("OSError: [Errno 122] Disk quota exceeded: '/cache/m.safetensors'", "no space left"),
        (
            "huggingface_hub.errors.EntryNotFoundError: 404 for url /m/resolve/x.json",
            "model not found",
        ),
        (
            "huggingface_hub.errors.RevisionNotFoundError: no revision v9 for org/m",
            "model not found",
        ),
        ("RuntimeError: Error(s) in loading state_dict for Linear: missing keys", "model loading"),
        ("requests.exceptions.HTTPError: 429 Client Error: Too Many Requests for url", "network"),
        ("requests.exceptions.HTTPError: 503 Server Error: unavailable for url", "network"),
    ],
)
def test_the_same_causes_are_named_in_their_other_wordings(line: str, reason: str) -> None:
    """ROCm's and the driver API's spellings of CUDA failures, Triton's and DeepEP's, the errno
    numbers, the hub's other not-found errors: the cause, not the wording, names the failure."""
    fatal = find_fatal(["[2026-12-03 10:00:01] Load weight begin. avail mem=70 GB", line])
    assert fatal is not None and (fatal.reason, fatal.index) == (reason, 1)


# -- the structural reading: relayed and headless tracebacks, type, raising frame, phase --------

SCHED = "[2026-11-30 19:50:40 TP0] Scheduler hit an exception: Traceback (most recent call last):"


@pytest.mark.parametrize(
    "tag",
    [
        "(WorkerDict pid=77, ip=10.0.0.2) ",
        "[rank0]: ",
        "sglang-1  | ",
        "Dec 03 10:00:01 gpu1 python[123]: ",
        "\x1b[31m",
        "2026-11-30T19:50:00.123456789Z ",
        "2026-11-30T19:50:00+0000 gpu1 python[123]: ",
        "[pod/sglang-0/server] 2026-11-30T19:50:00Z ",
        "[pod/sglang-0/server] 2026-11-30T19:50:00Z (WorkerDict pid=77) ",
    ],
)
def test_a_traceback_relayed_under_another_stacks_tag_is_read_as_a_traceback(tag: str) -> None:
    lines = [
        tag + "[2026-11-30 19:50:00 TP0] Load weight begin. avail mem=70.00 GB",
        tag + "Traceback (most recent call last):",
        tag + '  File "/x/sglang/srt/models/qwen2.py", line 400, in load_weights',
        tag + "    param = params_dict[name]",
        tag + "KeyError: 'model.layers.0.mlp.gate.weight'",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == ("model loading", 4)
    assert fatal.line == lines[4]


def test_frames_then_an_exception_are_a_traceback_without_its_header() -> None:
    lines = [
        '  File "/x/sglang/srt/server_args.py", line 10, in __post_init__',
        "    raise ValueError('tp_size must divide num_attention_heads')",
        "ValueError: tp_size must divide num_attention_heads",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == ("invalid config", 2)
    # all that is left of an uncaught exception may be its last line, printed by Python itself
    fatal = find_fatal(["ValueError: tp_size must divide num_attention_heads"])
    assert fatal is not None and fatal.reason == "invalid config"
    # a logged (timestamped) line that quotes an exception, or one with no message, is not one
    assert find_fatal(["[2026-11-30 19:50:00] ValueError: retrying the download"]) is None
    assert find_fatal(["KeyboardInterrupt"]) is None


def test_a_script_re_raising_at_its_top_level_is_not_an_import() -> None:
    lines = [
        "Traceback (most recent call last):",
        '  File "/x/sglang/launch_server.py", line 19, in <module>',
        "    raise e",
        '  File "/x/sglang/launch_server.py", line 17, in <module>',
        "    launch_server(server_args)",
        '  File "/x/sglang/srt/server.py", line 365, in launch_server',
        "RuntimeError: Initialization failed. controller_init_state: see above",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.reason == "crashed"
    lines[1] = '  File "/x/sglang/srt/layers/fused.py", line 3, in <module>'
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.reason == "broken install"


def test_a_value_refused_is_sglangs_refusal_only_before_it_serves_and_not_the_stdlibs() -> None:
    refused = [
        SCHED,
        '  File "/x/sglang/srt/managers/scheduler.py", line 1, in __init__',
        "AssertionError: page_size must divide chunked_prefill_size",
    ]
    fatal = find_fatal(refused)
    assert fatal is not None and fatal.reason == "invalid config"
    # a state check while serving says nothing of the config
    fatal = find_fatal(
        ["[2026-11-30 19:50:30] The server is fired up and ready to roll!", *refused]
    )
    assert fatal is not None and fatal.reason == "crashed"
    # the standard library refusing what the code handed it is a crash
    stdlib = [
        "Traceback (most recent call last):",
        '  File "/x/sglang/srt/server.py", line 620, in __init__',
        '  File "/usr/lib/python3.10/multiprocessing/util.py", line 452, in spawnv_passfds',
        "ValueError: bad value(s) in fds_to_keep",
    ]
    fatal = find_fatal(stdlib)
    assert fatal is not None and fatal.reason == "crashed"


def test_a_library_failing_under_the_argument_checks_is_not_a_refused_value() -> None:
    lines = [
        "Traceback (most recent call last):",
        '  File "/x/sgl_jax/srt/server_args.py", line 610, in __post_init__',
        '  File "/x/jax/_src/xla_bridge.py", line 985, in devices',
        "RuntimeError: the device runtime could not start",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.reason == "crashed"
    # what the argument checks raise themselves is a refused value
    del lines[2]
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.reason == "invalid config"


@pytest.mark.parametrize(
    ("milestone", "reason"),
    [
        ("Load weight begin. avail mem=70.00 GB", "model loading"),
        ("Capture cuda graph begin. This can take up to several minutes.", "CUDA graph capture"),
        ("Load weight end. type=Qwen2ForCausalLM, avail mem=60.00 GB", "crashed"),
    ],
)
def test_an_unplaced_exception_takes_the_phase_its_start_was_in(
    milestone: str, reason: str
) -> None:
    lines = [
        f"[2026-11-30 19:50:00 TP0] {milestone}",
        SCHED,
        '  File "/x/sglang/srt/layers/thing.py", line 1, in apply',
        "RuntimeError: shape mismatch in an unnamed kernel",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == (reason, 3)


@pytest.mark.parametrize(
    ("frame", "line"),
    [
        # the model's forward pass run after weight loading began: a warmup, not the weights read
        (
            '  File "/x/sglang/srt/models/transformers.py", line 250, in forward',
            "AttributeError: 'TransformersForCausalLM' object has no attribute 'tp_size'",
        ),
        (
            '  File "/x/sglang/srt/models/llama.py", line 40, in forward_extend',
            "RuntimeError: shape mismatch in an unnamed kernel",
        ),
        # a library's own internal check says it is the library's bug
        (
            '  File "/x/sglang/srt/managers/scheduler.py", line 9, in __init__',
            "RuntimeError: captures_underway.empty() INTERNAL ASSERT FAILED at "
            '"../c10/cuda/CUDACachingAllocator.cpp":2967; please report a bug to PyTorch.',
        ),
    ],
)
def test_a_fault_of_the_code_in_the_loading_phase_is_a_crash(frame: str, line: str) -> None:
    lines = ["[2026-11-30 19:50:00 TP0] Load weight begin. avail mem=70.00 GB", SCHED, frame, line]
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == ("crashed", 3)


@pytest.mark.parametrize(
    ("frame", "line", "reason"),
    [
        (
            '  File "/x/transformers/utils/versions.py", line 106, in require_version',
            "importlib.metadata.PackageNotFoundError: No package metadata was found for sglang",
            "broken install",
        ),
        (
            '  File "/x/transformers/configuration_utils.py", line 866, in _dict_from_json_file',
            "UnicodeDecodeError: 'utf-8' codec can't decode byte 0x80 in position 64",
            "model not found",
        ),
        (
            '  File "/x/app/reader.py", line 8, in read',
            "UnicodeDecodeError: 'utf-8' codec can't decode byte 0x80 in position 64",
            "crashed",
        ),
    ],
)
def test_an_exceptions_type_names_the_cause_where_its_frames_agree(
    frame: str, line: str, reason: str
) -> None:
    fatal = find_fatal(["Traceback (most recent call last):", frame, line])
    assert fatal is not None and fatal.reason == reason


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("bash: sglang: command not found", "broken install"),
        ("/bin/sh: 1: python3: not found", "broken install"),
        ("ERROR: No matching distribution found for sglang[all]==9.9", "broken install"),
        ("RuntimeError: operator torchvision::nms does not exist", "broken install"),
        ("exec /usr/bin/python3: exec format error", "broken install"),
        (
            'docker: Error response from daemon: could not select device driver "" with '
            "capabilities: [[gpu]].",
            "no GPU",
        ),
        ("RuntimeError: No HIP GPUs are available", "no GPU"),
        ("LLVM ERROR: Failed to compute parent layout for slice layout.", "JIT compile failed"),
        (
            "python: /x/lib/Analysis/Allocation.cpp:40: std::pair<int, int> "
            "mlir::triton::getCvtOrder(mlir::Attribute): Assertion `!(a && b)' failed.",
            "JIT compile failed",
        ),
        (
            "subprocess.CalledProcessError: Command '['/usr/bin/gcc', '/tmp/main.c']' returned "
            "non-zero exit status 1.",
            "JIT compile failed",
        ),
        (
            "OSError: org/model does not appear to have a file named processor_config.json.",
            "model not found",
        ),
        ("RuntimeError: No model info found for model path: /models/x", "unsupported model"),
        ("error: safetensors path required by this backend", "unsupported model"),
        ("ValueError: Unsupported model type: foo_bar", "unsupported model"),
        ("sglang-1 exited with code 137", "killed"),
        ("Failed to initialize NVML: Driver/library version mismatch", "no GPU"),
        (
            "RuntimeError: [enforce fail] DefaultCPUAllocator: can't allocate memory",
            "out of memory",
        ),
    ],
)
def test_more_wordings_of_known_causes(line: str, reason: str) -> None:
    fatal = find_fatal([line])
    assert fatal is not None and fatal.reason == reason, fatal


def test_the_ray_scheduler_actors_crash_line_is_a_summary() -> None:
    lines = [
        "[2026-11-30 19:50:00 TP0] Load weight begin. avail mem=70.00 GB",
        "Traceback (most recent call last):",
        '  File "/x/sglang/srt/models/llama.py", line 9, in load_weights',
        "KeyError: 'lm_head.weight'",
        "[2026-11-30 19:50:01] Scheduler PP0 TP0 crashed: 'lm_head.weight'",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == ("model loading", 3)


def test_a_connection_error_in_the_warmup_thread_is_the_warmup_failing() -> None:
    lines = [
        "Exception in thread Thread-2 (_wait_and_warmup):",
        "Traceback (most recent call last):",
        '  File "/x/sglang/srt/entrypoints/http_server.py", line 1, in _wait_and_warmup',
        '  File "/x/requests/adapters.py", line 700, in send',
        "requests.exceptions.ConnectionError: HTTPConnectionPool(host='127.0.0.1', port=30000): "
        "Max retries exceeded with url: /generate",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == ("warmup failed", 4)
    # the same error in a download is the network
    lines[2] = '  File "/x/huggingface_hub/file_download.py", line 1, in hf_hub_download'
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.reason == "network"


def test_a_fault_in_the_tokenizer_managers_request_handling_is_a_crash_not_the_tokenizer() -> None:
    lines = [
        "[2026-11-30 19:50:40] TokenizerManager hit an exception: Traceback (most recent call last):",
        '  File "/x/sglang/srt/managers/tokenizer_manager.py", line 1500, in handle_loop',
        '  File "/x/sglang/srt/managers/tokenizer_manager.py", line 1600, in _handle_batch_output',
        "KeyError: 'meta_info'",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == ("crashed", 3)
    # the tokenizer it loads is the tokenizer
    lines[2] = '  File "/x/sglang/srt/utils/hf_transformers_utils.py", line 9, in get_tokenizer'
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.reason == "tokenizer"


def test_a_fault_while_replaying_cuda_graphs_is_not_a_capture_failure() -> None:
    lines = [
        "[2026-11-30 19:50:30] The server is fired up and ready to roll!",
        SCHED,
        '  File "/x/sglang/srt/model_executor/cuda_graph_runner.py", line 700, in replay',
        '  File "/x/sglang/srt/layers/radix_attention.py", line 90, in forward',
        "RuntimeError: CUDA error: an illegal memory access was encountered",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == ("CUDA error", 4)
    lines[2] = '  File "/x/sglang/srt/model_executor/cuda_graph_runner.py", line 400, in capture'
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.reason == "CUDA graph capture"


# -- families read after the sixth batch: warmup wording, the model's kind and config, templates,
# -- frames quoted without their indentation, a machine without CUDA ----------------------------


@pytest.mark.parametrize(
    "line",
    [
        "RuntimeError: API server never became ready within 600 seconds",
        "TimeoutError: timed out waiting for the HTTP server to become ready",
        "RuntimeError: Server failed to become ready after 120 health probes",
    ],
)
def test_a_server_that_never_became_ready_for_its_warmup_is_the_warmup_failing(line: str) -> None:
    fatal = find_fatal(
        ["[2026-12-03 10:00:00] INFO:     Uvicorn running on http://0.0.0.0:30000", line]
    )
    assert fatal is not None and (fatal.reason, fatal.index) == ("warmup failed", 1), fatal


def test_a_runtimes_warmup_headline_is_cited_over_the_exception_it_logs() -> None:
    lines = [
        "[12-03 10:00:00] Engine warm-up failed, stopping: server did not become ready in 30 s",
        "Traceback (most recent call last):",
        '  File "/x/sglang/multimodal_gen/runtime/entrypoints/http_server.py", line 9, in '
        "_warm_up_when_ready",
        '    raise RuntimeError("server did not become ready")',
        "RuntimeError: server did not become ready in 30 s",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == ("warmup failed", 0), fatal
    # the exception alone, placed by the frame that waits for the server to be ready
    lines[4] = "RuntimeError: health check answered 500"
    fatal = find_fatal(lines[1:])
    assert fatal is not None and (fatal.reason, fatal.index) == ("warmup failed", 3), fatal


def test_a_kernels_warmup_in_the_model_runner_is_not_the_servers_warmup() -> None:
    lines = [
        SCHED,
        '  File "/x/sglang/srt/model_executor/model_runner.py", line 9, in kernel_warmup',
        "RuntimeError: workspace pointer is null",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.reason == "crashed", fatal


@pytest.mark.parametrize(
    "line",
    [
        "AssertionError: reward model is not supported yet",
        "ValueError: Encoder-only models are not supported.",
        "NotImplementedError: classification task is not supported",
        "ValueError: This checkpoint cannot be served as an embedding model",
        "AssertionError: generation is not supported for this architecture",
    ],
)
def test_a_refusal_of_the_models_kind_is_an_unsupported_model(line: str) -> None:
    fatal = find_fatal(
        [SCHED, '  File "/x/sglang/srt/managers/scheduler.py", line 1, in init', line]
    )
    assert fatal is not None and (fatal.reason, fatal.index) == ("unsupported model", 2), fatal


def test_a_model_kind_refused_together_with_a_setting_is_the_config() -> None:
    line = "ValueError: embedding is not supported with speculative decoding"
    fatal = find_fatal(
        [SCHED, '  File "/x/sglang/srt/managers/scheduler.py", line 1, in init', line]
    )
    assert fatal is not None and fatal.reason == "invalid config", fatal


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (
            "AttributeError: 'Qwen2VLConfig' object has no attribute 'vocab_size'",
            "unsupported model",
        ),
        (
            "AttributeError: 'PretrainedConfig' object has no attribute 'num_attention_heads'",
            "unsupported model",
        ),
        # SGLang's own runtime and quantization configs: a fault of the code, not of the model
        ("AttributeError: 'ModelConfig' object has no attribute 'is_hybrid_swa'", "crashed"),
        ("AttributeError: 'Fp8Config' object has no attribute 'weight_block_size'", "crashed"),
        ("AttributeError: 'ServerArgs' object has no attribute 'enable_foo'", "crashed"),
    ],
)
def test_a_field_missing_from_the_models_config_is_an_unsupported_model(
    line: str, reason: str
) -> None:
    lines = [
        "Traceback (most recent call last):",
        '  File "/x/sglang/srt/models/qwen2.py", line 40, in __init__',
        "    self.vocab_size = config.vocab_size",
        line,
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == (reason, 3), fatal


@pytest.mark.parametrize(
    "frame",
    [
        '  File "/x/sglang/srt/managers/template_manager.py", line 80, in load_chat_template',
        '  File "/x/sglang/srt/entrypoints/engine.py", line 700, in _init_tokenizer_manager',
        '  File "/x/sglang/srt/managers/tokenizer_manager.py", line 90, in _apply_chat_template',
    ],
)
def test_a_code_fault_starting_the_tokenizer_manager_or_applying_a_template_is_a_crash(
    frame: str,
) -> None:
    lines = [
        "Traceback (most recent call last):",
        '  File "/x/sglang/srt/entrypoints/engine.py", line 700, in _init_tokenizer_manager',
        frame,
        'TypeError: can only concatenate str (not "dict") to str',
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == ("crashed", 3), fatal


@pytest.mark.parametrize("indent", ["", " ", "  "])
def test_a_traceback_quoted_without_its_indentation_cites_the_exception(indent: str) -> None:
    lines = [
        "Traceback (most recent call last):",
        'File "/app/rollout/engine.py", line 12, in start',
        f"{indent}self._launch(config)",
        f'{indent}File "/app/rollout/engine.py", line 30, in _launch',
        f"{indent}proc = spawn(ServerArgs(**config))",
        "KeyError: 'tp_size'",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.index == 5 and fatal.message == "KeyError: 'tp_size'"


def test_a_frame_without_its_source_line_is_followed_by_the_exception() -> None:
    lines = [
        "Traceback (most recent call last):",
        'File "<string>", line 1, in <module>',
        "RuntimeError: boom",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.index == 2


def test_a_bare_assertion_cites_its_statement_and_a_check_of_the_codes_objects_is_a_crash() -> None:
    lines = [
        SCHED,
        '  File "/x/sglang/srt/managers/scheduler.py", line 300, in __init__',
        "    self.init_cache()",
        '  File "/x/sglang/srt/mem_cache/radix_cache.py", line 50, in __init__',
        "assert isinstance(self.allocator, PagedAllocator)",
        "AssertionError",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == ("crashed", 4), fatal
    assert fatal.message == "AssertionError: assert isinstance(self.allocator, PagedAllocator)"
    # an assertion of a value the config gave, raised before the server serves, is its refusal
    lines[4] = "    assert self.page_size > 0"
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == ("invalid config", 4), fatal


@pytest.mark.parametrize(
    "line",
    [
        "OSError: CUDA_HOME environment variable is not set. Please point it at the toolkit.",
        "RuntimeError: No CUDA installation was found on this host",
        "RuntimeError: Could not find the CUDA toolkit (nvcc not on PATH)",
    ],
)
def test_a_machine_without_cuda_is_no_gpu(line: str) -> None:
    lines = [
        "Traceback (most recent call last):",
        '  File "/x/torch/utils/cpp_extension.py", line 240, in _join_cuda_home',
        "    raise OSError(msg)",
        line,
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == ("no GPU", 3), fatal


GROUP = [
    "[2026-12-03 10:00:00] INFO:     Waiting for application startup.",
    "  + Exception Group Traceback (most recent call last):",
    '  |   File "/x/starlette/routing.py", line 700, in lifespan',
    "  |     async with self.lifespan_context(app) as maybe_state:",
    '  |   File "/x/anyio/_backends/_asyncio.py", line 767, in __aexit__',
    "  |     raise BaseExceptionGroup(",
    "  | ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception)",
    "  +-+---------------- 1 ----------------",
    "    | Traceback (most recent call last):",
    '    |   File "/x/sglang/srt/entrypoints/http_server.py", line 200, in lifespan',
    "    |     await start_engine()",
    '    |   File "/x/sglang/srt/managers/io_struct.py", line 99, in start_engine',
    "    |     raise failure",
    "    | {exception}",
    "    +------------------------------------",
]


@pytest.mark.parametrize(
    ("exception", "reason"),
    [
        ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB", "out of memory"),
        ("OSError: [Errno 98] Address already in use", "port in use"),
        ("KeyError: 'max_position_embeddings'", "crashed"),
    ],
)
def test_an_exception_group_is_read_through_its_gutter_and_names_its_sub_exception(
    exception: str, reason: str
) -> None:
    """Python 3.11's exception groups print each line behind a ``|`` gutter: the sub-exception,
    not the group's own line nor a frame, is the cause."""
    lines = [line.replace("{exception}", exception) for line in GROUP]
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == (reason, 13), fatal
    assert fatal.message == exception
    assert not traceback_complete(lines[:12])


# -- the seventh batch's families: native last words, other accelerators, carried-on messages ---


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("Failed: HIP error /src/csrc/quick_allreduce.hip:88 'invalid argument'", "CUDA error"),
        (
            'CUDA error at /opt/src/gemm_kernels.cu:212 code=1 "cudaMemcpyAsync(d, s, n)"',
            "CUDA error",
        ),
        ("Cuda failure 'peer mapping resources exhausted'", "CUDA error"),
        ("HIP_CHECK failed with status 98 at fused_moe.hip", "CUDA error"),
        (
            "F1203 10:00:01.123456  4242 ipc_buffer.cc:77] Check failed: err == cudaSuccess (1 vs. 0)",
            "CUDA error",
        ),
        ("Failed, NCCL error /x/csrc/pynccl.cc:120 'remote process exited'", "NCCL"),
        ("F1203 10:00:01.123456  4242 scheduler.cc:31] Check failed: queue != nullptr", "crashed"),
        (
            "python3: /src/csrc/moe_align.cpp:64: void align(int): Assertion `experts > 0' failed.",
            "crashed",
        ),
    ],
)
def test_a_native_runtimes_own_fatal_line_is_a_failure_without_an_exception_after_it(
    line: str, reason: str
) -> None:
    """C/C++ code reports a runtime error through its check macro and aborts: no Python
    exception follows, and the record ends in a rank's warnings or nothing at all."""
    lines = [
        "[2026-12-03 10:00:00 TP0] Init nccl begin.",
        "[2026-12-03 10:00:00 TP1] Init nccl begin.",
        line,
        "[rank1]:[W1203 10:00:01.2 CudaIPCTypes.cpp:16] Producer process has been terminated",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == (reason, 2), fatal


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (
            "RuntimeError: InitializeResource: NPU function error: aclrtSetDevice(device_id), "
            "error code is 507033",
            "CUDA error",
        ),
        (
            "RuntimeError: call aclnnGroupedMatmul failed, detail: EZ9999: Inner Error!",
            "CUDA error",
        ),
        (
            "Memory access fault by GPU node-2 (Agent handle: 0x55d3) on address 0x7f00. "
            "Reason: Page not present or supervisor privilege.",
            "CUDA error",
        ),
        (
            "RuntimeError: level_zero backend failed with error: 20 (UR_RESULT_ERROR_DEVICE_LOST)",
            "CUDA error",
        ),
        ("RuntimeError: MUSA error: invalid device function", "CUDA error"),
        ("torch.OutOfMemoryError: NPU out of memory. Tried to allocate 1.50 GiB", "out of memory"),
        ("RuntimeError: XPU out of memory. Tried to allocate 2.00 GiB", "out of memory"),
        ("RuntimeError: HCCL error in: /x/ProcessGroupHCCL.cpp:1210, remote rank lost", "NCCL"),
        ("RuntimeError: HcclCommInitRootInfo failed, error code 5", "NCCL"),
        ("RuntimeError: No NPU devices are available on this host", "no GPU"),
        (
            "RuntimeError: HIP error: hipErrorNoDevice (no ROCm-capable device is detected)",
            "no GPU",
        ),
        (
            "RuntimeError: hipErrorInsufficientDriver: the HIP driver is older than the runtime",
            "driver too old",
        ),
    ],
)
def test_other_accelerators_own_errors_are_named_as_cudas_are(line: str, reason: str) -> None:
    """Ascend, ROCm, Intel XPU and MUSA report the same failures as CUDA in their runtimes' own
    words: a device error is the CUDA error family, an allocation failure out of memory, their
    collective libraries NCCL."""
    lines = [
        "[2026-12-03 10:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/x/sglang/srt/model_executor/model_runner.py", line 1508, in init_memory_pool',
        "    self.max_total_num_tokens = self.profile_max_num_token(total_gpu_memory)",
        line,
        "",
        "[2026-12-03 10:00:01] Received sigquit from a child process. It usually means the child failed.",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == (reason, 3), fatal


@pytest.mark.parametrize(
    "line",
    [
        "        [Compile][Op] op compile failed for MatMulV3, see the plog for details",
        "RuntimeError: Initialize operator compiler failed: the TBE process pool did not start",
        "RuntimeError: KernelCompileProcessor start failed",
        "RuntimeError: NVRTC_ERROR_COMPILATION: fused.cu(12): error: identifier is undefined",
        "hiprtc: error: cannot compile the fused rotary kernel",
    ],
)
def test_an_accelerators_kernel_compiler_failing_is_a_jit_compile_failure(line: str) -> None:
    """An operator compiler that cannot start or build (CANN's, NVRTC's, hipRTC's) is the JIT
    compile failing, as a C compiler's error is, even when the runtime indents its own lines."""
    lines = [
        "[2026-12-03 10:00:00 TP0] Load weight end. type=Qwen2ForCausalLM, avail mem=57.01 GB",
        line,
        "",
        "[2026-12-03 10:00:01] Received sigquit from a child process. It usually means the child failed.",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == ("JIT compile failed", 1), fatal


def test_an_indented_line_is_a_frame_only_inside_a_traceback() -> None:
    """A native runtime indents its error lines under its headline: outside a traceback they
    are read; a traceback's source line quoting the same words is still a frame."""
    stray = [
        "[2026-12-03 10:00:00 TP0] Load weight end. avail mem=57.01 GB",
        "    ACL stream synchronize failed, NPU function error: EZ9999",
    ]
    fatal = find_fatal(stray)
    assert fatal is not None and (fatal.reason, fatal.index) == ("CUDA error", 1), fatal
    inside = [
        "[2026-12-03 10:00:00 TP0] Load weight begin. avail mem=70.00 GB",
        "Traceback (most recent call last):",
        '  File "/x/sglang/srt/models/qwen2.py", line 400, in load_weights',
        '    log("NPU function error: retrying")',
        "KeyError: 'model.layers.0.mlp.gate.weight'",
    ]
    fatal = find_fatal(inside)
    assert fatal is not None and (fatal.reason, fatal.index) == ("model loading", 4), fatal


@pytest.mark.parametrize(
    ("message", "reason", "cited"),
    [
        (
            [
                "ImportError: ",
                "[libfoo] could not load libfoo_ops.so for this GPU",
                "reinstall libfoo",
            ],
            "broken install",
            1,
        ),
        (
            [
                "RuntimeError:",
                "while starting the pool:",
                "CUDA error: an illegal memory access was encountered",
            ],
            "CUDA error",
            2,
        ),
        (
            ["OSError: ", "No space left on device while unpacking the shards"],
            "no space left",
            1,
        ),
    ],
)
def test_an_exception_whose_message_is_on_the_next_lines_cites_them(
    message: list[str], reason: str, cited: int
) -> None:
    """``raise ImportError(msg)`` with ``msg`` starting on a new line prints the type alone: the
    line that names the cause (the rule's own match, else the first) is cited, and the one-line
    reason carries it."""
    lines = [
        "Traceback (most recent call last):",
        '  File "/x/libfoo/load_utils.py", line 188, in _load_ops',
        "    raise err(error_msg)",
        *message,
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == (reason, 3 + cited), fatal
    assert fatal.line == message[cited]
    assert message[cited] in fatal.summary and "\n" not in fatal.summary
    assert fatal.summary.startswith(f"{reason}: {message[0].strip()} ")


@pytest.mark.parametrize(
    "line",
    [
        "ValueError: No memory left for the KV cache after loading weights; raise --mem-fraction-static (now 0.7).",
        "RuntimeError: Insufficient GPU memory for the KV cache pool with --mem-fraction-static 0.5",
        "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization`.",
        "ValueError: 12.0 GiB KV cache is needed, which is larger than the available KV cache memory (3.1 GiB).",
        "RuntimeError: KV cache size is negative (-2.4 GB): --mem-fraction-static=0.6 is too low",
    ],
)
def test_no_room_for_the_kv_cache_is_out_of_memory_even_when_it_names_the_flag(line: str) -> None:
    """The fix is more memory for the cache (a larger static fraction, fewer weights per GPU),
    as SGLang's own ``Not enough memory. Please try to increase --mem-fraction-static`` says; a
    value the flag cannot take is still a refused value."""
    lines = [
        "[2026-12-03 10:00:00 TP0] Load weight end. avail mem=12.25 GB, mem usage=125.65 GB.",
        SCHED,
        '  File "/x/sglang/srt/model_executor/model_runner.py", line 131, in profile_max_num_token',
        "    raise ValueError(",
        line,
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == ("out of memory", 4), fatal
    lines[-1] = "ValueError: --mem-fraction-static must be in (0, 1), got 1.5"
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.reason == "invalid config", fatal


@pytest.mark.parametrize(
    "line",
    [
        "ValueError: Could not find a multimodal processor for model type siglip_vision_model",
        "RuntimeError: No processor registered for architecture FooVLForConditionalGeneration",
        "ValueError: Unrecognized image processor in /models/x. Should have an `image_processor_type` key",
        "NotImplementedError: Unable to find an implementation for the model type bar_vl",
        "KeyError: 'Processor for model type `foo_audio` is not registered'",
    ],
)
def test_no_processor_or_implementation_for_the_models_type_is_an_unsupported_model(
    line: str,
) -> None:
    """The multimodal processor (or the model class) is looked up by the model's type when the
    tokenizer manager starts: none registered means the model is one this SGLang cannot serve,
    not a value refused nor a tokenizer fault."""
    lines = [
        "Traceback (most recent call last):",
        '  File "/x/sglang/srt/managers/tokenizer_manager.py", line 233, in __init__',
        "    self.mm_processor = get_mm_processor(",
        '  File "/x/sglang/srt/managers/multimodal_processor.py", line 48, in get_mm_processor',
        "    raise ValueError(",
        line,
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == ("unsupported model", 5), fatal


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (
            "OSError: Repo id must use alphanumeric chars or '-', '_', '.': 'gs://bucket/llama'",
            "model not found",
        ),
        (
            "ValueError: Invalid repository ID or local directory specified: '/data/models/gone'",
            "model not found",
        ),
        ("ValueError: '../weights/llama-8b' is not a valid repository id", "model not found"),
        (
            "FileNotFoundError: [Errno 2] No such file or directory: 'oss://bucket/qwen/vocab.json'",
            "model not found",
        ),
        (
            "OSError: We couldn't connect to 'https://huggingface.co' to load this file, couldn't "
            "find it in the cached files and it looks like /models/qwen is not the path to a "
            "directory containing a file named config.json.",
            "model not found",
        ),
        (
            "OSError: We couldn't connect to 'https://huggingface.co' to load this file, couldn't "
            "find it in the cached files and it looks like Qwen/Qwen2-7B is not the path to a "
            "directory containing a file named config.json.",
            "network",
        ),
    ],
)
def test_a_path_taken_for_a_hub_repo_id_is_model_not_found(line: str, reason: str) -> None:
    """A remote path (``gs://``, ``oss://``) or a local path that is not there, handed to a
    loader that only knows the Hub, is refused as a repo id: no model is where the path points.
    A repo id the Hub could not be reached for is the network."""
    lines = [
        "Traceback (most recent call last):",
        '  File "/x/sglang/srt/utils/hf_transformers_utils.py", line 171, in get_tokenizer',
        "    tokenizer = AutoTokenizer.from_pretrained(",
        line,
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == (reason, 3), fatal


@pytest.mark.parametrize(
    "line",
    [
        "ValueError: Unknown quantization method: mxfp3",
        "NotImplementedError: quant_method 'w2a16' is not supported",
        "ValueError: Unsupported quant type int3 in this checkpoint",
        "AssertionError: this kernel only supports 4-bit or 8-bit quantized weights",
    ],
)
def test_a_quantization_the_loader_refuses_is_an_invalid_config(line: str) -> None:
    """SGLang resolves the quantization inside weight loading: a refusal that says it is about
    the quantization is the config (the README's rule), whatever the loading frames say."""
    lines = [
        "[2026-12-03 10:00:00 TP0] Load weight begin. avail mem=77.65 GB",
        SCHED,
        '  File "/x/sglang/srt/model_loader/weight_utils.py", line 233, in get_quant_config',
        "    raise ValueError(",
        line,
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == ("invalid config", 4), fatal


def test_a_native_runtimes_indented_last_words_before_a_summary_are_cited() -> None:
    """An indented line outside a traceback that no rule names is still the last thing the
    process said before its parent's summary: it, not the summary, is cited."""
    lines = [
        "[2026-12-03 10:00:00 TP0] Load weight end. avail mem=57.01 GB",
        "        [Runtime] stream 3 aborted: device reported status 0x2f",
        "",
        "[2026-12-03 10:00:01] Received sigquit from a child process. It usually means the child failed.",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == ("crashed", 1), fatal


# -- the eighth batch's families: bare exceptions, model implementations, readiness waits, GPUs --
# -- asked for, paths not implemented, kernel libraries' APIs ------------------------------------


@pytest.mark.parametrize(
    ("statement", "marks", "exception"),
    [
        ("    assert isinstance(node.data, Pointwise)", [], "AssertionError"),
        ("assert isinstance(node.data, Pointwise)", [], "AssertionError:"),
        (" assert isinstance(node.data, Pointwise)", [], "AssertionError: "),
        ("        assert isinstance(node.data, Pointwise)", [], "AssertionError"),
        (
            "    assert isinstance(node.data, Pointwise)",
            ["           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^"],
            "AssertionError",
        ),
        ("    assert isinstance(", ["        node.data, Pointwise", "    )"], "AssertionError:"),
    ],
)
def test_a_bare_assertion_cites_the_assert_it_failed_whatever_the_indentation(
    statement: str, marks: list[str], exception: str
) -> None:
    """Python prints a failed ``assert`` with no message as the type alone (with or without a
    colon): the statement above it, however the report indented it, under Python 3.11's carets
    or spread over the lines Python 3.13 prints, is what says what was checked."""
    lines = [
        "[2026-12-03 10:00:00 TP0] Capture cuda graph begin. This can take up to several minutes.",
        SCHED,
        '  File "/x/torch/_inductor/lowering.py", line 120, in reduce_op',
        statement,
        *marks,
        exception,
        "",
        "[2026-12-03 10:00:01] Received sigquit from a child process. It usually means the child failed.",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.index == 3, fatal
    assert fatal.line == statement
    assert fatal.message.startswith("AssertionError: assert ")
    # a check of the code's own objects, in capture: the phase names it; the line is the assert
    assert fatal.reason == "CUDA graph capture"


def test_an_assertion_with_a_message_is_cited_as_it_is() -> None:
    lines = [
        SCHED,
        '  File "/x/sglang/srt/server_args.py", line 900, in check',
        "    assert self.page_size > 0, 'page size must be positive'",
        "AssertionError: page size must be positive",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.index == 3 and fatal.reason == "invalid config", fatal


@pytest.mark.parametrize(
    "line",
    [
        "ValueError: MiniMaxM3ForCausalLM has no SGLang implementation",
        "ValueError: FooForConditionalGeneration has no vLLM implementation and the Transformers "
        "implementation is not compatible with vLLM.",
        "NotImplementedError: Model architecture BazVLForConditionalGeneration is not implemented "
        "in SGLang yet",
        "RuntimeError: OlmoHybridModel is not supported by sglang",
        "ValueError: SGLang does not support this model (model_type=quux_moe)",
        "RuntimeError: No SGLang implementation found for architecture Zed3ForCausalLM",
        "ValueError: model type nemotron_h_vl is not supported by SGLang",
        "ValueError: The Transformers implementation of Hunyuan9ForCausalLM is not compatible "
        "with SGLang",
    ],
)
def test_a_runtime_without_an_implementation_of_the_architecture_is_an_unsupported_model(
    line: str,
) -> None:
    """Whatever the runtime's wording (SGLang's, vLLM's same sentence), an architecture it has
    no implementation of is a model it cannot serve, not a weight-loading fault."""
    lines = [
        "[2026-12-03 10:00:00 TP0] Load weight begin. avail mem=70.00 GB",
        SCHED,
        '  File "/x/sglang/srt/model_loader/utils.py", line 76, in resolve_transformers_arch',
        "    raise ValueError(",
        line,
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == ("unsupported model", 4), fatal


@pytest.mark.parametrize(
    "line",
    [
        "ValueError: --enable-foo is not supported by SGLang",
        "ValueError: SGLang does not support this model with LoRA adapters",
        "ValueError: the torch_native backend is not supported by SGLang on NPU",
        "ValueError: this backend does not support the model's sliding window; use fa3",
    ],
)
def test_a_setting_sglang_does_not_support_is_not_an_unsupported_model(line: str) -> None:
    lines = [
        SCHED,
        '  File "/x/sglang/srt/server_args.py", line 900, in check',
        "    raise ValueError(msg)",
        line,
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == ("invalid config", 3), fatal


@pytest.mark.parametrize(
    "line",
    [
        'RuntimeError: Timeout 600s waiting for workers ["http://10.0.0.1:30001", '
        '"http://10.0.0.2:30001"] to become healthy. Please raise the startup timeout',
        "TimeoutError: timed out after 900 s waiting on 2 decode workers to become ready",
        "RuntimeError: Workers did not become healthy within 300 seconds",
        "TimeoutError: Server failed to start within the timeout period.",
        "RuntimeError: engine replicas still not ready after 1200 s",
        "RuntimeError: gave up waiting for the prefill servers to come up after 10 minutes",
    ],
)
def test_a_launcher_giving_up_on_its_workers_readiness_is_the_warmup_failing(line: str) -> None:
    """A router, launcher or harness that stops waiting for its workers to become ready or
    healthy says the start did not become ready in the time allowed (the README's convention:
    *warmup failed*), not whatever phase its workers were last seen in."""
    lines = [
        "[2026-12-03 10:00:00 TP0] Load weight begin. avail mem=78.42 GB",
        "Traceback (most recent call last):",
        '  File "/x/sglang_router/launch_router.py", line 219, in launch_router',
        "    router.start()",
        line,
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == ("warmup failed", 4), fatal


@pytest.mark.parametrize(
    "line",
    [
        "Worker http://127.0.0.1:31000 health check is pending with error: connection refused",
        "Waiting for workers to become healthy (timeout 300s)",
        "Waiting for 2 workers to become healthy, elapsed 30s, timeout 300s",
        "Server did not become ready yet, retrying in 5 s",
        "Metrics worker failed to start in the background; serving without it",
    ],
)
def test_a_launcher_still_waiting_for_its_workers_is_not_a_failure(line: str) -> None:
    assert find_fatal([f"[2026-12-03 10:00:00] {line}"]) is None


def test_a_wait_given_up_after_a_workers_failure_is_that_failures_aftermath() -> None:
    lines = [
        "[2026-12-03 10:00:00 TP0] Load weight begin. avail mem=70.00 GB",
        SCHED,
        '  File "/x/sglang/srt/models/qwen2.py", line 400, in load_weights',
        "    param = params_dict[name]",
        "KeyError: 'model.layers.0.mlp.experts.w13_weight'",
        "",
        "Traceback (most recent call last):",
        '  File "/x/sglang_router/router.py", line 88, in start',
        "    self._router.start()",
        "RuntimeError: Timeout 300s waiting for workers to become healthy",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == ("model loading", 4), fatal


@pytest.mark.parametrize(
    ("line", "dump", "named"),
    [
        ("RuntimeError: CUDA error: invalid device ordinal", "tp_size=8, base_gpu_id=4", True),
        ("RuntimeError: HIP error: invalid device ordinal", "tp_size=16, nnodes=1", True),
        ("RuntimeError: hipErrorInvalidDevice while setting device 9", "tp_size=16", True),
        ("RuntimeError: CUDA_ERROR_INVALID_DEVICE (the context's device is gone)", "", False),
        (
            "RuntimeError: Attempting to deserialize object on CUDA device 3 but "
            "torch.cuda.device_count() is 2. Please use torch.load with map_location",
            "pp_size=4",
            True,
        ),
        ("ValueError: tp_size (8) is larger than the number of available GPUs (4)", "", False),
        ("RuntimeError: requested 8 GPUs but only 4 are visible to this process", "", False),
        ("AssertionError: not enough GPUs on this node for 16 ranks", "", False),
        ("RuntimeError: the number of visible GPUs (4) is smaller than tp_size (8)", "", False),
    ],
)
def test_more_gpus_asked_for_than_the_machine_has_is_an_invalid_config(
    line: str, dump: str, named: bool
) -> None:
    """A GPU index past the ones the machine shows is the config asking for more GPUs than
    there are (parallel sizes, ``--base-gpu-id``, the node count, ``CUDA_VISIBLE_DEVICES``):
    an invalid config naming the sizes it logged, not a host without GPUs."""
    lines = [
        f"[2026-12-03 10:00:00] server_args=ServerArgs(model_path='/m', {dump})"
        if dump
        else "[2026-12-03 10:00:00] Init torch distributed begin.",
        "[2026-12-03 10:00:01 TP9] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/x/sglang/srt/model_executor/model_runner.py", line 226, in init_torch_distributed',
        "    torch.get_device_module(self.device).set_device(self.gpu_id)",
        line,
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == ("invalid config", 4), fatal
    assert (
        "more GPUs asked for than the machine shows: " + dump.split(",")[0] in fatal.message
    ) is named


def test_two_ranks_on_one_gpu_is_an_invalid_config_and_a_bad_kernel_image_a_cuda_error() -> None:
    lines = [
        "node1:1234:1300 [1] init.cc:870 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 "
        "both on CUDA device 1a000",
        "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1970, invalid usage, NCCL version 2.21.5",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == ("invalid config", 0), fatal
    fatal = find_fatal(["RuntimeError: CUDA error: invalid device function"])
    assert fatal is not None and fatal.reason == "CUDA error", fatal


NOT_IMPLEMENTED = [
    "[2026-12-03 10:00:00 TP0] Init torch distributed ends. mem usage=0.61 GB",
    "Traceback (most recent call last):",
    '  File "/x/sglang/bench_one_batch.py", line 165, in load_model',
    "    model_runner = ModelRunner(",
    '  File "/x/sglang/srt/model_executor/model_runner.py", line 274, in initialize',
    "    self.init_lora_manager()",
    '  File "/x/sglang/srt/lora/backend/base_backend.py", line 60, in run_lora_a_sgemm',
    "    raise NotImplementedError",
    "NotImplementedError",
]


@pytest.mark.parametrize(
    ("frame", "where"),
    [
        (
            '  File "/x/sglang/srt/lora/backend/base_backend.py", line 60, in run_lora_a_sgemm',
            "run_lora_a_sgemm, backend/base_backend.py",
        ),
        (
            '  File "/x/sglang/srt/constrained/base_grammar_backend.py", line 90, in init_ebnf',
            "init_ebnf, constrained/base_grammar_backend.py",
        ),
        (
            '  File "/x/sglang/srt/model_loader/loader.py", line 1500, in get_model_loader',
            "get_model_loader, model_loader/loader.py",
        ),
    ],
)
def test_a_bare_not_implemented_path_is_the_setting_that_chose_it(frame: str, where: str) -> None:
    """A path the settings chose that SGLang does not implement (a LoRA backend, a grammar
    backend, a load format) is an invalid config, placed by the frame that raised it: a caller
    named ``load_model`` that built the whole model runner says nothing of the step that
    failed. Its message says where it was raised, all there is to go on."""
    lines = list(NOT_IMPLEMENTED)
    lines[6] = frame
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == ("invalid config", 8), fatal
    assert fatal.message == f"NotImplementedError (raised in {where})"


def test_a_bare_not_implemented_in_the_models_own_module_is_an_unsupported_model() -> None:
    lines = list(NOT_IMPLEMENTED)
    lines[6] = '  File "/x/sglang/srt/models/foo_vl.py", line 812, in get_embed_and_head'
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == ("unsupported model", 8), fatal
    # said with a message, it is a refusal of what the start asked (a setting with this model)
    lines[8] = "NotImplementedError: FooVL does not support EAGLE3 draft capture"
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.reason == "invalid config", fatal


def test_a_path_not_implemented_while_serving_is_not_a_setting() -> None:
    lines = [
        "[2026-12-03 10:00:00] The server is fired up and ready to roll!",
        *NOT_IMPLEMENTED[1:],
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and fatal.reason == "crashed", fatal


@pytest.mark.parametrize(
    "frames",
    [
        # raised inside the library's own code
        [
            '  File "/x/sglang/srt/layers/attention/flashinfer_backend.py", line 900, in call_begin',
            "    wrapper.plan(qo_indptr, kv_indptr, kv_indices, kv_last_page_len)",
            '  File "/usr/lib/python3/dist-packages/flashinfer/decode.py", line 800, in plan',
            "    self._cached_module.plan(self._float_workspace_buffer, indptr)",
            "TypeError: plan() missing 2 required positional arguments: 'num_qo_heads' and "
            "'head_dim'",
        ],
        # SGLang's call on the library's object
        [
            '  File "/x/sglang/srt/model_executor/forward_batch_info.py", line 300, in init',
            "    model_runner.flashinfer_decode_wrapper.begin_forward(",
            "TypeError: BatchDecodeWithPagedKVCacheWrapper.begin_forward() got an unexpected "
            "keyword argument 'pos_encoding_mode'",
        ],
        # SGLang's call on a library's operator, through torch's dispatch
        [
            '  File "/x/sglang/srt/layers/layernorm.py", line 80, in forward_cuda',
            "    torch.ops.sgl_kernel.gemma_rmsnorm(out, x, self.weight, eps, enable_pdl)",
            '  File "/x/torch/_ops.py", line 1158, in __call__',
            "    return self._op(*args, **(kwargs or {}))",
            "TypeError: gemma_rmsnorm() takes 4 positional arguments but 5 were given",
        ],
        # a grammar library's call
        [
            '  File "/x/sglang/srt/constrained/xgrammar_backend.py", line 150, in dispatch_json',
            "    ctx = self.grammar_compiler.compile_json_schema(schema, any_whitespace=False)",
            '  File "/x/site-packages/xgrammar/compiler.py", line 120, in compile_json_schema',
            "    return CompiledGrammar._create_from_handle(self._handle.compile_json_schema(",
            "TypeError: compile_json_schema(): incompatible function arguments. The following "
            "argument types are supported:",
        ],
        # an attribute the library's object no longer has
        [
            '  File "/x/sglang/srt/layers/attention/flashinfer_backend.py", line 410, in init',
            "    self.flashinfer_prefill_wrapper_ragged.begin_forward(qo_indptr, kv_indptr)",
            "AttributeError: 'BatchPrefillWithRaggedKVCacheWrapper' object has no attribute "
            "'begin_forward'",
        ],
    ],
)
def test_a_call_into_a_kernel_library_that_no_longer_fits_is_a_broken_install(
    frames: list[str],
) -> None:
    """A kernel library's API that changed under SGLang (a missing or unexpected argument, a
    method gone) is the installed release not matching this SGLang: a version mismatch, fixed
    by installing the versions SGLang pins, not by reading SGLang's code."""
    lines = [SCHED, *frames]
    fatal = find_fatal(lines)
    assert fatal is not None, lines
    assert (fatal.reason, fatal.index) == ("broken install", len(lines) - 1), fatal


@pytest.mark.parametrize(
    "line",
    [
        "RuntimeError: sgl_kernel::fused_add_rmsnorm() is missing value for argument 'enable_pdl'."
        " Declaration: sgl_kernel::fused_add_rmsnorm(Tensor(a!) input, Tensor weight) -> ()",
        "RuntimeError: Unknown keyword argument 'eps' for operator '_C::rms_norm'. Schema: "
        "_C::rms_norm(Tensor(a!) result, Tensor input) -> ()",
        "RuntimeError: Expected at most 5 argument(s) for operator 'moe_align_block_size', but "
        "received 6 argument(s). Declaration: sgl_kernel::moe_align_block_size(Tensor x) -> ()",
        "NotImplementedError: Could not run 'sgl_kernel::top_p_renorm_probs' with arguments from "
        "the 'CUDA' backend. This could be because the operator doesn't exist for this backend",
    ],
)
def test_a_kernel_librarys_operator_that_does_not_fit_its_call_is_a_broken_install(
    line: str,
) -> None:
    lines = [
        SCHED,
        '  File "/x/torch/_ops.py", line 1158, in __call__',
        "    return self._op(*args, **(kwargs or {}))",
        line,
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == ("broken install", 3), fatal


@pytest.mark.parametrize(
    ("frames", "reason"),
    [
        # SGLang's own function called with a missing argument: a fault of its code
        (
            [
                '  File "/x/sglang/srt/layers/attention/fa3_backend.py", line 318, in __init__',
                "    self.n = resolve_tokens_per_req(server_args=server_args)",
                "TypeError: resolve_tokens_per_req() got an unexpected keyword argument 'server_args'",
            ],
            "crashed",
        ),
        # SGLang's own Triton kernel launched without an argument (Triton's launcher binds it)
        (
            [
                '  File "/x/sglang/srt/layers/moe/ep_moe/kernels.py", line 88, in post_reorder',
                "    post_reorder_triton_kernel[(n,)](down_output, output, src2dst)",
                '  File "/x/triton/runtime/jit.py", line 576, in run',
                "    bound_args, specialization, options = binder(*args, **kwargs)",
                "TypeError: dynamic_func() missing 1 required positional argument: 'topk'",
            ],
            "crashed",
        ),
        # SGLang's own operator's schema
        (
            [
                '  File "/x/torch/_ops.py", line 1158, in __call__',
                "    return self._op(*args, **(kwargs or {}))",
                "RuntimeError: sglang::unified_attention() is missing value for argument 'layer'",
            ],
            "crashed",
        ),
    ],
)
def test_a_call_into_sglangs_own_code_that_does_not_fit_stays_a_crash(
    frames: list[str], reason: str
) -> None:
    lines = ["[2026-12-03 10:00:00] The server is fired up and ready to roll!", SCHED, *frames]
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == (reason, len(lines) - 1), fatal


def test_a_callers_load_model_that_builds_the_whole_runner_does_not_place_a_failure() -> None:
    """A benchmark's or another stack's ``load_model`` builds the whole model runner (its
    attention backend, memory pool, graphs): only the runner's and the loaders' own
    ``load_model`` place a failure in weight loading."""
    lines = [
        "[2026-12-03 10:00:00 TP0] Init torch distributed ends. mem usage=0.61 GB",
        "Traceback (most recent call last):",
        '  File "/x/sglang/bench_one_batch.py", line 165, in load_model',
        "    model_runner = ModelRunner(",
        '  File "/x/sglang/srt/model_executor/model_runner.py", line 733, in initialize',
        "    self.init_attention_backend()",
        '  File "/x/sglang/srt/layers/attention/aiter_backend.py", line 90, in __init__',
        "    self.kv_indptr = buffers[self.layer_id]",
        "KeyError: 7",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == ("crashed", 8), fatal
    lines[4:6] = [
        '  File "/x/sglang/srt/model_executor/model_runner.py", line 880, in load_model',
        "    self.model = get_model(",
    ]
    fatal = find_fatal(lines)
    assert fatal is not None and (fatal.reason, fatal.index) == ("model loading", 8), fatal
