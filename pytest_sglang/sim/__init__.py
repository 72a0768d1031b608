"""An SGLang simulator: ``python -m pytest_sglang.sim`` behaves like ``sglang.launch_server``.

It exists so the plugin can be developed and tested end to end (systemd unit, journal checks,
readiness, benchmarks, regression gates) on machines without a GPU. For everything the plugin
observes it matches real SGLang: the command line (the target version's real flag set,
argparse abbreviation and errors), the startup log (milestones, warnings, ``server_args=`` line,
``TPn`` prefixes), readiness (port closed while loading; /health 503 until warmup), the HTTP API
and streaming formats, the performance shape (speculative decoding, concurrency, prompt length)
and the way it dies (fatal messages, then SIGKILL of itself).

Simulator-only knobs are environment variables, so a unit file differs from a real one only in
the executable:

- ``SGLANG_SIM_VERSION``: SGLang version to play, ``0.5.23`` (default) or ``0.5.18``
  (also 0.5.19/0.5.20/0.5.22, which share 0.5.23's behaviour here).
- ``SGLANG_SIM_STARTUP_SCALE``: scales startup phases; 1 = as long as the seeds' host
  (about 90-120 s to ready for Qwen3.5-122B-A10B at TP 4), 0 = instant. Default 1.
- ``SGLANG_SIM_TIME_SCALE``: scales prefill/decode time while serving; 1 = realistic speed,
  0 = as fast as possible. Default 1.
- ``SGLANG_SIM_SPEED_FACTOR``: multiplies decode/prefill speed (0.9 = a 10% slower build).
- ``SGLANG_SIM_FAULT``: ``oom`` (Not enough memory at KV allocation), ``cuda-graph`` (capture
  failure), ``crash-after=N`` (scheduler exception when request N+1 arrives), ``hang`` (port open,
  never ready), ``slow-start=SECONDS`` (that much extra, unscaled startup time),
  ``diverge-after=N`` (not fatal: under speculative decoding greedy outputs change from output
  token N on, :mod:`.quality`), ``replay:<file>`` (a real SGLang log, e.g. one of
  tests/data/failures/, written as this server's output, then the process ends as that server
  did; a log that reached the ready line is followed by a normal start). Several faults,
  separated by ``;``, each limited to the servers whose command line has a flag with a value
  (``oom@--node-rank=1;slow-start=600@--node-rank=0``): the first that applies wins.
- ``SGLANG_SIM_IGNORE_FLAG``: a field name (``speculative_num_steps``) or flag
  (``--speculative-num-steps``) that silently keeps its default: a flag that did not take effect.
- ``SGLANG_SIM_TTFT_MS`` / ``SGLANG_SIM_ITL_MS``: fixed time to first token and inter-token
  latency; when set they replace the performance model and are honoured exactly (one token per
  ITL, independent of load), for checking a load generator's measurements.
- ``SGLANG_SIM_CAPACITY``: with TTFT/ITL injection, at most this many requests are served at
  once; the rest queue in arrival order and their wait adds to their TTFT (0: no limit). A
  server with a known saturation point: N / (TTFT + (tokens - 1) x ITL) requests per second.
- ``SGLANG_SIM_GPU_NAME``, ``SGLANG_SIM_GPU_MEMORY_GB``, ``SGLANG_SIM_GPU_BANDWIDTH_TBPS``,
  ``SGLANG_SIM_GPU_TFLOPS``: the simulated GPU (default RTX PRO 6000 Blackwell, 96 GB).
- ``SGLANG_SIM_HELP_DELAY_S``: seconds ``--help`` takes before it answers (real SGLang imports
  torch first: 5-15 s on a GPU host). Default 0.
- ``SGLANG_SIM_SEED``: which built-in task items the quality stand-in (:mod:`.quality`) gets
  wrong (default 0).
- ``SGLANG_SIM_ACCURACY``: the quality stand-in's accuracy before the config's drops (0.85).
- ``SGLANG_SIM_NOISE``: the fraction of prompts that are near ties, whose greedy output varies
  between runs and between servers whose flags differ (:mod:`.quality`; default 0, off with
  ``--enable-deterministic-inference``).

Modules, from the command line to serving:

- :mod:`.__main__` (``python -m pytest_sglang.sim``), :mod:`.cli` (SGLang's parser, rebuilt from
  its catalog), :mod:`.knobs` (the ``SGLANG_SIM_*`` variables);
- :mod:`.post_init` (SGLang's argument resolution), :mod:`.model_rules` (its per-architecture
  overrides), :mod:`.tracebacks` (the frames of its refusals), :mod:`.fields` (the
  ``server_args=`` field order), :mod:`.resolver` (the simulator answering as the host's SGLang);
- :mod:`.startup` (the startup milestones), :mod:`.nodes` (a multi-node server's other nodes
  join the first), :mod:`.disagg` (prefill/decode disaggregation), :mod:`.logs` (SGLang's log
  format), :mod:`.faults` (how SGLang dies, replayed);
- :mod:`.server` (the HTTP API), :mod:`.info` (``/server_info``, ``/model_info``, ``meta_info``),
  :mod:`.arrival` (when a request arrived), :mod:`.tokenizer` (one token per word);
- :mod:`.scheduler` (continuous batching), :mod:`.policy` (``--schedule-policy``),
  :mod:`.radix` and :mod:`.kvcache` (the prefix cache and the KV pool), :mod:`.perf` (the
  performance model), :mod:`.quality` (the stand-in for answer quality);
- :mod:`.launch` (start one as a child process on a loopback port).

Public here (docs/api.md): the performance model a scenario may hold the simulator to,
:class:`SpecConfig` and :func:`decode_tok_per_s`.
"""

from __future__ import annotations

from .knobs import emulated_version
from .perf import SpecConfig, decode_tok_per_s

__all__ = ["SpecConfig", "decode_tok_per_s", "emulated_version"]
