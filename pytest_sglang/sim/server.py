"""The simulator's HTTP API: SGLang's endpoints, shapes and readiness (sglang-facts.md 4 and 5).

Why these exact shapes: the plugin, the load generator and third-party clients (the ``openai``
package, bench_serving) talk to the simulator exactly as to SGLang. Streaming chunks are built
from pre-rendered string templates (the generated text is plain ASCII words), so a token costs a
string concatenation rather than a JSON encoding; that keeps the simulator off the bottleneck.

Layout: :class:`ServerState` is what the routes share with the process (status, scheduler,
capacity); :class:`SimServer` has one method per route and lists them in :meth:`SimServer.routes`;
:func:`build_app` wraps them in the aiohttp application with the access-log middleware. The
response shapes that need no state are module functions below.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import random
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from .arrival import ArrivalClock
from .disagg import Disagg
from .info import (
    embedding_plan,
    metrics_meta_info,
    resolved_server_args,
    retraction_backup,
    weight_versions,
)
from .logs import access_log, log
from .quality import QualityModel
from .scheduler import Request, Scheduler
from .startup import StartupReport
from .tokenizer import (
    chat_prompt_ids,
    chat_prompt_tokens,
    count_tokens,
    prompt_seed,
    text_ids,
    token_text,
)

__all__ = ["ServerState", "SimServer", "build_app"]

FLUSH_OK = (
    "Cache flushed.\nPlease check backend logs for more details. (When there are running or "
    "waiting requests, the operation will not be performed.)\n"
)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class ServerState:
    """What the HTTP layer needs: args, status, scheduler and the capacity figures.

    ``startup`` is the scheduler's start-up report (phase times, graph memory) that /server_info
    answers with; ``launch_command`` the command-line arguments as given (0.5.23's
    ``server_args.launch_command``). ``random_seed`` is drawn once when the flag leaves it unset,
    as 0.5.23's ServerArgs resolution does, so that /server_info reports the seed in use.
    """

    def __init__(
        self,
        args: dict[str, Any],
        version: str,
        scheduler: Scheduler,
        max_total_num_tokens: int,
        context_len: int,
        startup: StartupReport,
        launch_command: str = "",
    ) -> None:
        self.args = args
        self.version = version
        self.scheduler = scheduler
        self.max_total_num_tokens = max_total_num_tokens
        self.context_len = context_len
        self.startup = startup
        self.launch_command = launch_command
        seed = args.get("random_seed")
        self.random_seed = int(seed) if seed is not None else random.randint(0, 1 << 30)
        self.status = "Starting"
        self.shutting_down = False
        #: Its part in PD disaggregation (``--disaggregation-mode``), None for a plain server.
        self.disagg: Disagg | None = None
        self.created = int(time.time())
        self.served = str(args.get("served_model_name") or args["model_path"])
        self.background: list[asyncio.Task[None]] = []  # keeps warmup etc. referenced


def _error(status: int, message: str) -> web.Response:
    body = {
        "object": "error",
        "message": message,
        "type": "BadRequestError",
        "param": None,
        "code": status,
    }
    return web.json_response(body, status=status)


#: ``request[ARRIVED]``: ``time.monotonic()`` when the request was received (the timetable's
#: origin; not ``loop.time()``, which uvloop caches per loop turn in whole milliseconds).
ARRIVED = "sglang_sim_arrived"


#: The application's :class:`ArrivalClock`. Served without the simulator's stamping protocol
#: (tests' TestServer) it has no stamps, and ``take`` answers "now".
ARRIVAL_CLOCK = web.AppKey("sglang_sim_arrival_clock", ArrivalClock)


@web.middleware
async def _access(request: web.Request, handler: Handler) -> web.StreamResponse:
    clock, transport = request.app[ARRIVAL_CLOCK], request.transport
    request[ARRIVED] = clock.take(transport)
    try:
        return await _logged(request, handler)
    finally:
        clock.forget(transport)


async def _logged(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        response = await handler(request)
    except web.HTTPException as exc:
        _log_access(request, exc.status)
        raise
    _log_access(request, response.status)
    return response


def _log_access(request: web.Request, status: int) -> None:
    peer = request.transport.get_extra_info("peername") if request.transport else None
    where = f"{peer[0]}:{peer[1]}" if peer else "127.0.0.1:0"
    access_log(where, request.method, request.path_qs, status)


#: ``--api-key`` (empty: none). Paths SGLang serves without it, so that probes and Prometheus
#: need no secret (``decide_request_auth`` in sglang/srt/utils/auth.py, 0.5.23).
API_KEY = web.AppKey("sglang_sim_api_key", str)
OPEN_PREFIXES = ("/health", "/ready", "/metrics")


@web.middleware
async def _auth(request: web.Request, handler: Handler) -> web.StreamResponse:
    """With ``--api-key``, as SGLang: every request but OPTIONS and the probes carries
    ``Authorization: Bearer <key>``, else 401 ``{"error": "Unauthorized"}``. A client that
    forgets the key fails here as it would against the real server."""
    key = request.app[API_KEY]
    if key and request.method != "OPTIONS" and not request.path.startswith(OPEN_PREFIXES):
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(token.encode(), key.encode()):
            return web.json_response({"error": "Unauthorized"}, status=401)
    return await handler(request)


def build_app(state: ServerState) -> web.Application:
    """The aiohttp application with every simulated route."""
    app = web.Application(middlewares=[_access, _auth], client_max_size=64 * 1024 * 1024)
    app[ARRIVAL_CLOCK] = ArrivalClock()
    app[API_KEY] = str(state.args.get("api_key") or "")
    app.router.add_routes(SimServer(state).routes())
    return app


# -- request reading and response shapes that need no state ----------------------------------


def _sampling(body: dict[str, Any], max_key: str, default_max: int) -> tuple[int, float, bool]:
    raw_max = body.get(max_key)
    if raw_max is None and max_key == "max_tokens":
        raw_max = body.get("max_completion_tokens")
    max_new = default_max if raw_max is None else int(raw_max)
    if max_new < 0:
        raise ValueError(f"{max_key} must be >= 0, got {max_new}")
    raw_temp = body.get("temperature")
    temperature = 1.0 if raw_temp is None else float(raw_temp)
    return max_new, temperature, bool(body.get("ignore_eos", False))


async def _read_json(request: web.Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"request body is not valid JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise ValueError("request body must be a JSON object")
    return body


#: A prompt as read: (token count, token ids or None when no prefix cache needs them, the
#: sampling seed text).
Prompt = tuple[int, list[int] | None, str]


def _text_prompt(text: str, ids: bool) -> Prompt:
    if ids:
        token_ids = text_ids(text)
        return len(token_ids), token_ids, text
    return count_tokens(text), None, text


def _completion_prompt(body: dict[str, Any], ids: bool) -> Prompt:
    """/v1/completions' prompt; its token ids only if ``ids``."""
    prompt_raw = body.get("prompt")
    if isinstance(prompt_raw, list) and prompt_raw and isinstance(prompt_raw[0], int):
        return len(prompt_raw), list(prompt_raw), json.dumps(prompt_raw)
    if isinstance(prompt_raw, list) and len(prompt_raw) == 1:
        return _text_prompt(str(prompt_raw[0]), ids)
    if isinstance(prompt_raw, str):
        return _text_prompt(prompt_raw, ids)
    raise ValueError("prompt must be a string, one string in a list, or token ids")


def _generate_prompt(body: dict[str, Any], ids: bool) -> Prompt:
    """/generate's prompt; its token ids only if ``ids`` (``input_ids`` always)."""
    if body.get("input_ids") is not None:
        token_ids = body["input_ids"]
        if not isinstance(token_ids, list) or not all(isinstance(i, int) for i in token_ids):
            raise ValueError("input_ids must be a list of token ids")
        return len(token_ids), token_ids, json.dumps(token_ids)
    if isinstance(body.get("text"), str):
        return _text_prompt(body["text"], ids)
    raise ValueError("give text (a string) or input_ids")


def _generate_batch(body: dict[str, Any]) -> list[dict[str, Any]] | None:
    """/generate's batch form (``text`` a list of strings, or ``input_ids`` a list of lists):
    one single-prompt body per item; None for a single prompt."""
    if isinstance(body.get("text"), list):
        return [{"text": t} for t in body["text"]]
    ids = body.get("input_ids")
    if isinstance(ids, list) and ids and all(isinstance(i, list) for i in ids):
        return [{"input_ids": i} for i in ids]
    return None


async def _wait_done(req: Request) -> None:
    while not req.finished:
        req.event.clear()
        await req.event.wait()


async def _next_tokens(req: Request) -> tuple[list[int], bool]:
    """The ids produced since the last call (waiting for some), and whether the request is done."""
    if not req.pending and not req.finished:
        req.event.clear()
        await req.event.wait()
    ids = req.take()
    return ids, req.finished and not req.pending


def _text_of(ids: list[int]) -> str:
    return "".join(token_text(i) for i in ids)


def _usage(req: Request, cache_report: bool = False) -> dict[str, Any]:
    """0.5.23's ``UsageInfo``: ``prompt_tokens_details`` is ``{"cached_tokens": n}`` only with
    ``--enable-cache-report`` (``UsageProcessor``), else null."""
    return {
        "prompt_tokens": req.prompt_tokens,
        "total_tokens": req.prompt_tokens + req.completion_tokens,
        "completion_tokens": req.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": req.cached_tokens} if cache_report else None,
        "reasoning_tokens": 0,
        # 0.5.23 sets it only when there are reasoning tokens (UsageInfo), so null here
        "completion_tokens_details": None,
    }


def _without_none(value: dict[str, Any]) -> dict[str, Any]:
    """``value`` without its ``None`` fields, at every depth (pydantic's ``exclude_none``)."""
    return {
        k: _without_none(v) if isinstance(v, dict) else v for k, v in value.items() if v is not None
    }


def _oai_finish(req: Request) -> tuple[str | None, Any]:
    reason = req.finish_reason or {}
    if reason.get("type") == "length":
        return "length", None
    if reason.get("type") == "stop":
        return "stop", reason.get("matched")
    return None, None


def _oai_templates(head: str, chat: bool) -> tuple[str, str, str]:
    """(the opening chunk, "" for completions; a token chunk's text before and after the text)."""
    if not chat:
        post = '","logprobs":null,"finish_reason":null,"matched_stop":null}]}\n\n'
        return "", head + '"text":"', post
    first = (
        head + '"delta":{"role":"assistant","content":"","reasoning_content":null},'
        '"logprobs":null,"finish_reason":null,"matched_stop":null}],"usage":null}\n\n'
    )
    pre = head + '"delta":{"role":null,"content":"'
    post = (
        '","reasoning_content":null},"logprobs":null,'
        '"finish_reason":null,"matched_stop":null}],"usage":null}\n\n'
    )
    return first, pre, post


def _with_usage(post: str, req: Request, chat: bool, cache_report: bool) -> str:
    """A token chunk's tail carrying the running usage (``continuous_usage_stats``); only the
    chat chunks report cached tokens there (0.5.23's completions pass none)."""
    usage = json.dumps(_usage(req, cache_report and chat))
    if chat:
        return post.replace('"usage":null}', f'"usage":{usage}}}')
    return post.replace("}]}", f'}}],"usage":{usage}}}')


def _oai_last_chunk(head: str, req: Request, chat: bool) -> str:
    """The streamed chunk with the finish reason and no text."""
    reason, matched = _oai_finish(req)
    if chat:
        tail = '"delta":{"role":null,"content":null,"reasoning_content":null},"logprobs":null,'
    else:
        tail = '"text":"","logprobs":null,'
    tail += (
        f'"finish_reason":{json.dumps(reason)},'
        f'"matched_stop":{json.dumps(matched)}}}],"usage":null}}\n\n'
    )
    return head + tail


def _oai_body(req: Request, chat: bool, model: str, cache_report: bool) -> dict[str, Any]:
    """The whole non-streamed chat or text completion."""
    reason, matched = _oai_finish(req)
    text = _text_of(req.output_ids)
    choice: dict[str, Any] = {"index": 0}
    if chat:
        # ChatMessage drops ``tool_calls`` when there are none, and so do 0.5.23's streamed
        # deltas (recorded: tests/data/real_sglang_answers.json)
        choice["message"] = {"role": "assistant", "content": text, "reasoning_content": None}
    else:
        choice["text"] = text
    choice.update(logprobs=None, finish_reason=reason, matched_stop=matched)
    return {
        "id": ("chatcmpl-" if chat else "cmpl-") + req.rid,
        "object": "chat.completion" if chat else "text_completion",
        "created": int(req.created),
        "model": model,
        "choices": [choice],
        "usage": _usage(req, cache_report),
        "metadata": {
            "weight_version": "default",
            "weight_versions": weight_versions("default", req.completion_tokens),
        },
    }


def _metric(name: str, kind: str, value: float, labels: str) -> list[str]:
    return [
        f"# HELP sglang:{name} {name.replace('_', ' ')}.",
        f"# TYPE sglang:{name} {kind}",
        f"sglang:{name}{{{labels}}} {float(value)}",
    ]


#: 0.5.23's default buckets (srt/observability/metrics_collector.py), seconds
TTFT_BUCKETS = (0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400)
E2E_BUCKETS = (
    *(0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400),
    *(600, 1200, 1800, 2400),
)


def _histogram(
    name: str, help_text: str, samples: list[float], buckets: tuple[float, ...], labels: str
) -> list[str]:
    """A Prometheus histogram as prometheus_client renders it: cumulative ``le`` buckets."""
    lines = [f"# HELP sglang:{name} {help_text}", f"# TYPE sglang:{name} histogram"]
    for bound in buckets:
        count = sum(1 for s in samples if s <= bound)
        lines.append(f'sglang:{name}_bucket{{{labels},le="{float(bound)}"}} {float(count)}')
    lines.append(f'sglang:{name}_bucket{{{labels},le="+Inf"}} {float(len(samples))}')
    lines.append(f"sglang:{name}_count{{{labels}}} {float(len(samples))}")
    lines.append(f"sglang:{name}_sum{{{labels}}} {sum(samples)}")
    return lines


# -- the routes -------------------------------------------------------------------------------


class SimServer:
    """SGLang's HTTP routes over one :class:`ServerState`: one method per route."""

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.sched = state.scheduler
        self.quality = QualityModel.of(state.args, state.scheduler.settings)
        self.cache_report = bool(state.args.get("enable_cache_report"))
        #: prompts are turned into token ids only for the prefix cache (a cost per word)
        self.ids = state.scheduler.pool.caching

    def routes(self) -> list[web.RouteDef]:
        """Every route, in registration order; /metrics only with ``--enable-metrics``."""
        routes = [
            web.get("/v1/models", self.models),
            web.get("/v1/models/{name:.+}", self.model_by_name),
            web.get("/get_model_info", self.get_model_info),
            web.get("/model_info", self.model_info),
            web.get("/get_server_info", self.server_info),
            web.get("/server_info", self.server_info),
            web.get("/ping", self.health),  # SageMaker's check: 200 when healthy, else 503
            web.get("/ready", self.health),
            web.get("/health", self.health),
            web.get("/health_generate", self.health),
            web.get("/flush_cache", self.flush_cache),
            web.post("/flush_cache", self.flush_cache),
            web.get("/start_profile", self.start_profile),
            web.post("/start_profile", self.start_profile),
            web.get("/stop_profile", self.stop_profile),
            web.post("/stop_profile", self.stop_profile),
        ]
        if self.state.args.get("enable_metrics"):
            routes.append(web.get("/metrics", self.metrics))
        routes += [
            web.post("/v1/chat/completions", self.chat_completions),
            web.post("/v1/completions", self.completions),
            web.post("/generate", self.generate),
            web.put("/generate", self.generate),
        ]
        return routes

    # -- model and server facts -----------------------------------------------------------

    def _model_card(self) -> dict[str, Any]:
        state = self.state
        return {
            "id": state.served,
            "object": "model",
            "created": state.created,
            "owned_by": "sglang",
            "root": state.served,
            "parent": None,
            "max_model_len": state.context_len,
        }

    async def models(self, _: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [self._model_card()]})

    async def model_by_name(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name != self.state.served:
            return web.json_response(
                {
                    "error": {
                        "message": f"The model '{name}' does not exist",
                        "type": "invalid_request_error",
                        "param": "model",
                        "code": "model_not_found",
                    }
                },
                status=404,
            )
        return web.json_response(self._model_card())

    def _model_type(self) -> str:
        """config.json's ``model_type``; by the directory's name where there is none."""
        identity = self.sched.resolved.model.identity
        if identity is not None and identity.from_config and identity.model_type:
            return identity.model_type
        return "qwen3_5_moe" if "qwen3.5" in self.state.args["model_path"].lower() else "llama"

    def _model_info(self) -> dict[str, Any]:
        """0.5.23's ``/model_info`` (``/get_model_info`` is its deprecated alias, same body)."""
        args = self.state.args
        path = str(args["model_path"])
        return {
            "model_path": path,
            "served_model_name": self.state.served,
            "tokenizer_path": args.get("tokenizer_path") or path,
            "is_generation": True,
            "preferred_sampling_params": args.get("preferred_sampling_params"),
            "weight_version": args.get("weight_version") or "default",
            "load_format": args.get("load_format"),
            "reasoning_parser": args.get("reasoning_parser"),
            "tool_call_parser": args.get("tool_call_parser"),
            "disaggregation_mode": args.get("disaggregation_mode") or "null",
            "has_image_understanding": False,
            "has_audio_understanding": False,
            "model_type": self._model_type(),
            "architectures": [self.sched.resolved.model.architecture],
            # every model config carries an embedding spec ("none" for a causal LM)
            "embedding": embedding_plan(args),
        }

    async def get_model_info(self, _: web.Request) -> web.Response:
        return web.json_response(self._model_info())

    async def model_info(self, _: web.Request) -> web.Response:
        return web.json_response(self._model_info())

    def _scheduler_resolved(self) -> dict[str, Any]:
        """The server_args the scheduler settles once started (managers/scheduler.py,
        mem_cache/kv_cache_builder.py). Only the scheduler's own readback (``internal_states``)
        carries them; the top level of /server_info is the tokenizer's copy, resolved before."""
        args, sched = self.state.args, self.sched
        pp = max(1, int(args.get("pp_size") or 1))
        return {
            "random_seed": self.state.random_seed,
            "pp_max_micro_batch_size": args.get("pp_max_micro_batch_size")
            or max(sched.max_running // pp, 1),
            "disaggregation_decode_retraction_backup": retraction_backup(args),
        }

    def _internal_state(self) -> dict[str, Any]:
        """One DP rank's ``internal_states`` entry (scheduler_components/internal_state.py):
        the scheduler's resolved server_args, topology, memory, the decode graphs and spec
        acceptance."""
        state, sched = self.state, self.sched
        args = state.args
        graph = {k: round(v, 3) for k, v in state.startup.graph_memory_gb.items()}
        internal = resolved_server_args(args, self._scheduler_resolved())
        internal.pop("custom_sigquit_handler", None)  # not serialisable on the real server
        internal.update(
            world_size=int(args.get("dp_size") or 1) * sched.tp * int(args.get("pp_size") or 1),
            startup_time=state.startup.startup_time,
            effective_max_running_requests_per_dp=sched.max_running,
            last_gen_throughput=sched.last_gen_throughput,
            memory_usage={
                "weight": round(sched.resolved.model.weights_gb / sched.tp, 3),
                "kvcache": 0.0,
                "startup_available": 0.0,
                "token_capacity": state.max_total_num_tokens,
                # the simulated models have no sliding-window layers
                "token_capacity_swa": None,
                "graph": graph,
            },
            disaggregation_mode=args.get("disaggregation_mode") or "null",
            decode_cuda_graph_bs=list(sched.resolved.cuda_graph_bs),
            decode_cuda_graph_memory_gb=round(
                sum(graph[p] for p in ("decode", "target_verify", "draft_decode", "draft_extend")),
                3,
            ),
        )
        accept = sched.avg_spec_accept_length
        if accept is not None:
            internal["avg_spec_accept_length"] = accept
        return internal

    async def server_info(self, _: web.Request) -> web.Response:
        """0.5.23's ``/server_info`` (http_server.py ``build_server_info``): resolved
        server_args, the launch command, the scheduler's init info, the KV-event publisher,
        the tokenizer's start-up times, every DP rank's internal state, version and frontend."""
        state = self.state
        server_args = resolved_server_args(state.args, {"random_seed": state.random_seed})
        page = server_args.get("page_size")
        startup = dict(state.startup.startup_time)
        # the tokenizer's own figure runs from launch to ready: the simulator has one process
        startup["tokenizer_e2e"] = startup.get("scheduler_e2e", 0.0)
        body: dict[str, Any] = dict(server_args)
        body.update(
            launch_command=state.launch_command,
            status="ready",
            max_total_num_tokens=state.max_total_num_tokens,
            max_req_input_len=state.context_len - 1,
            hicache_object_layout={
                "enabled": False,
                "backend": None,
                "page_size": page,
                "hicache_object_layout": {"pools": []},
                "reason": "Hierarchical cache is disabled",
            },
            # describe_kv_events_publisher: null unless --kv-events-config publishes
            kv_events=None,
            startup_time=startup,
            internal_states=[self._internal_state()],
            version=state.version,
            frontend="python",
        )
        return web.json_response(body, dumps=lambda o: json.dumps(o, default=str))

    # -- health and maintenance -----------------------------------------------------------

    async def start_profile(self, _: web.Request) -> web.Response:
        """Answered as 0.5.23 answers it; nothing is profiled."""
        return web.Response(status=200, text="Start profiling.\n")

    async def stop_profile(self, _: web.Request) -> web.Response:
        return web.Response(status=200, text="Stop profiling. This will take some time.\n")

    async def health(self, _: web.Request) -> web.Response:
        if self.state.shutting_down or self.state.status != "Up":
            return web.Response(status=503)
        return web.Response(status=200)

    async def flush_cache(self, _: web.Request) -> web.Response:
        sched = self.sched
        if sched.busy:
            log(
                "Cache not flushed because there are pending requests. #queue-req: "
                f"{len(sched.waiting)}, #running-req: {sched.num_running}"
            )
            return web.Response(status=400, text=FLUSH_OK)
        sched.flush_cache()
        log("Cache flushed successfully!")
        return web.Response(status=200, text=FLUSH_OK)

    async def metrics(self, _: web.Request) -> web.Response:
        sched = self.sched
        labels = f'engine_type="unified",model_name="{self.state.served}",pp_rank="0",tp_rank="0"'
        used = sched._used_tokens()
        pool = sched.pool
        values: list[tuple[str, str, float]] = [
            ("num_running_reqs", "gauge", sched.num_running),
            ("num_used_tokens", "gauge", used),
            ("token_usage", "gauge", used / max(1, self.state.max_total_num_tokens)),
            ("gen_throughput", "gauge", sched.last_gen_throughput),
            ("num_queue_reqs", "gauge", len(sched.waiting)),
            # the last prefill batch's cached / (cached + computed) prompt tokens
            ("cache_hit_rate", "gauge", sched.last_cache_hit_rate),
            ("kv_available_tokens", "gauge", max(0, pool.available)),
            ("kv_evictable_tokens", "gauge", pool.evictable),
            ("kv_used_tokens", "gauge", used),
        ]
        if sched.resolved.spec.algorithm is not None:
            values += [
                ("spec_accept_length", "gauge", sched.last_accept_len),
                ("spec_num_steps", "gauge", sched.resolved.spec.num_steps),
                ("spec_num_draft_tokens", "gauge", sched.resolved.spec.draft_tokens),
                ("spec_verify_calls_total", "counter", sched.spec_verify_ct),
            ]
        values += [
            ("prompt_tokens_total", "counter", sched.prompt_tokens_total),
            ("generation_tokens_total", "counter", sched.generation_tokens_total),
            ("num_requests_total", "counter", sched.requests_total),
        ]
        lines = [line for value in values for line in _metric(*value, labels)]
        # finished requests' cached prompt tokens, all from the GPU pool (no host cache)
        lines += _metric(
            "cached_tokens_total",
            "counter",
            sched.cached_tokens_total,
            labels + ',cache_source="device"',
        )
        lines += _metric(
            "prefill_effective_tokens_total",
            "counter",
            sched.prefill_input_tokens,
            labels + ',mode="input"',
        )
        lines.append(
            f'sglang:prefill_effective_tokens_total{{{labels},mode="device_hit"}} '
            f"{float(sched.prefill_hit_tokens)}"
        )
        lines += _histogram(
            "time_to_first_token_seconds",
            "Histogram of time to first token in seconds.",
            sched.ttft_samples,
            TTFT_BUCKETS,
            labels,
        )
        lines += _histogram(
            "e2e_request_latency_seconds",
            "Histogram of End-to-end request latency in seconds",
            sched.e2e_samples,
            E2E_BUCKETS,
            labels,
        )
        return web.Response(
            text="\n".join(lines) + "\n", content_type="text/plain", charset="utf-8"
        )

    # -- generation -----------------------------------------------------------------------

    async def _routed_request(
        self,
        body: dict[str, Any],
        prompt: Prompt,
        sampling: tuple[int, float, bool],
        seed: Any = None,
        warmup: bool = False,
        arrived: float | None = None,
    ) -> Request:
        """A request as this server's PD role serves it (:mod:`.disagg`): a prefill server
        computes the prompt and its first token, then sends the room's KV; a decode server
        first receives it (ValueError when it cannot), then decodes. Without a room (or PD):
        a plain request."""
        pd, room = self.state.disagg, body.get("bootstrap_room")
        if pd is None or room is None:
            return self._new_request(prompt, sampling, seed, warmup, arrived)
        if pd.mode == "prefill":
            req = self._new_request(prompt, (1, sampling[1], True), seed, warmup, arrived)
            task = asyncio.get_running_loop().create_task(self._send_when_done(req, room))
            self.state.background.append(task)
            return req
        await pd.receive(body)
        return self._new_request(prompt, sampling, seed, warmup, arrived, transferred=True)

    async def _send_when_done(self, req: Request, room: Any) -> None:
        await _wait_done(req)
        assert self.state.disagg is not None
        self.state.disagg.sent(room)

    def _new_request(
        self,
        prompt: Prompt,
        sampling: tuple[int, float, bool],
        seed: Any = None,
        warmup: bool = False,
        arrived: float | None = None,
        *,
        transferred: bool = False,
    ) -> Request:
        max_new, temperature, ignore_eos = sampling
        tokens, prompt_ids, seed_text = prompt
        base = prompt_seed(seed_text)
        if temperature > 0:
            base ^= prompt_seed(str(seed) if seed is not None else uuid.uuid4().hex)
        req = Request(
            tokens,
            max_new,
            ignore_eos,
            temperature,
            base,
            is_warmup=warmup,
            arrived=arrived,
            prompt_ids=prompt_ids,
            transferred=transferred,
        )
        self.quality.prepare(req, seed_text)
        self.sched.submit(req)
        return req

    def _include_usage(self, body: dict[str, Any]) -> tuple[bool, bool]:
        """Usage in the stream: (a final usage chunk, usage on every chunk).

        As SGLang's ``should_include_usage``: the final chunk when asked for per request or by
        the server default flag (0.5.10+); every chunk only with
        ``stream_options.continuous_usage_stats``.
        """
        options = body.get("stream_options") or {}
        default = bool(self.state.args.get("stream_response_default_include_usage"))
        if not isinstance(options, dict) or not options:
            return default, False
        return bool(options.get("include_usage")) or default, bool(
            options.get("continuous_usage_stats")
        )

    async def chat_completions(self, request: web.Request) -> web.StreamResponse:
        try:
            body = await _read_json(request)
            messages = body.get("messages")
            if not isinstance(messages, list) or not messages:
                raise ValueError("messages must be a non-empty list")
            max_new, temperature, ignore_eos = _sampling(body, "max_tokens", 1 << 30)
            ids = chat_prompt_ids(messages) if self.ids else None
            tokens = len(ids) if ids is not None else chat_prompt_tokens(messages)
        except (ValueError, TypeError) as exc:
            return _error(400, str(exc))
        max_new = min(max_new, max(1, self.state.context_len - tokens))
        prompt = (tokens, ids, json.dumps(messages, sort_keys=True, default=str))
        sampling = (max_new, temperature, ignore_eos)
        return await self._serve_oai(request, body, prompt, sampling, chat=True)

    async def completions(self, request: web.Request) -> web.StreamResponse:
        try:
            body = await _read_json(request)
            prompt = _completion_prompt(body, self.ids)
            sampling = _sampling(body, "max_tokens", 16)
        except (ValueError, TypeError) as exc:
            return _error(400, str(exc))
        return await self._serve_oai(request, body, prompt, sampling, chat=False)

    async def _serve_oai(
        self,
        request: web.Request,
        body: dict[str, Any],
        prompt: Prompt,
        sampling: tuple[int, float, bool],
        *,
        chat: bool,
    ) -> web.StreamResponse:
        """What /v1/chat/completions and /v1/completions share once the prompt is read."""
        try:
            req = await self._routed_request(
                body, prompt, sampling, body.get("seed"), arrived=request.get(ARRIVED)
            )
        except ValueError as exc:
            return _error(500, str(exc))
        model = str(body.get("model") or self.state.served)
        if body.get("stream"):
            return await self._stream_oai(request, req, chat, model, self._include_usage(body))
        await _wait_done(req)
        return web.json_response(_oai_body(req, chat, model, self.cache_report))

    async def _stream_oai(
        self,
        request: web.Request,
        req: Request,
        chat: bool,
        model: str,
        usage_flags: tuple[bool, bool],
    ) -> web.StreamResponse:
        resp = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await resp.prepare(request)
        rid = ("chatcmpl-" if chat else "cmpl-") + req.rid
        obj = "chat.completion.chunk" if chat else "text_completion"
        head = (
            f'data: {{"id":"{rid}","object":"{obj}","created":{int(req.created)},'
            f'"model":{json.dumps(model)},"choices":[{{"index":0,'
        )
        first, pre, post = _oai_templates(head, chat)
        include_usage, continuous = usage_flags
        if first:
            await resp.write(first.encode())
        try:
            while True:
                ids, done = await _next_tokens(req)
                if ids:
                    tail = _with_usage(post, req, chat, self.cache_report) if continuous else post
                    await resp.write((pre + _text_of(ids) + tail).encode())
                if done:
                    break
            await resp.write(_oai_last_chunk(head, req, chat).encode())
            if include_usage:
                chunk = {
                    "id": rid,
                    "object": obj,
                    "created": int(req.created),
                    "model": model,
                    "choices": [],
                    "usage": _usage(req, self.cache_report),
                }
                if not chat:
                    # 0.5.23 writes the completions usage chunk with exclude_none=True
                    # (serving_completions.py); the chat one keeps its nulls
                    chunk = _without_none(chunk)
                await resp.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            await resp.write(b"data: [DONE]\n\n")
        except (ConnectionResetError, RuntimeError):
            req.aborted = True
            raise
        return resp

    def _meta_info(self, req: Request, final: bool) -> dict[str, Any]:
        """``meta_info`` as 0.5.23's TokenizerManager builds it (``_handle_batch_output``): the
        timing fields only with ``--enable-metrics``, ``dp_rank`` null (one DP rank),
        ``cached_tokens_details`` ``{"device": n, "host": 0}`` once a prefix was cached, else
        null (``get_cached_tokens_details`` without a host cache)."""
        meta: dict[str, Any] = {
            "id": req.rid,
            "finish_reason": req.finish_reason if final else None,
            "prompt_tokens": req.prompt_tokens,
            "weight_version": "default",
            "num_retractions": 0,
        }
        metrics = bool(self.state.args.get("enable_metrics"))
        now = time.time()
        if metrics:
            meta.update(metrics_meta_info(req, final=False, now=now))
        meta.update(
            reasoning_tokens=0,
            completion_tokens=req.completion_tokens,
            cached_tokens=req.cached_tokens,
            weight_versions=weight_versions("default", req.completion_tokens),
            cached_tokens_details=(
                {"device": req.cached_tokens, "host": 0} if req.cached_tokens else None
            ),
            dp_rank=None,
        )
        if final:
            meta["e2e_latency"] = (req.finished_at or now) - req.created
            if metrics:
                meta.update(metrics_meta_info(req, final=True, now=now))
            spec = self.sched.resolved.spec
            if spec.algorithm is not None and req.verify_ct:
                accept = req.completion_tokens / req.verify_ct
                meta["spec_verify_ct"] = req.verify_ct
                meta["spec_accept_length"] = accept
                meta["spec_accept_rate"] = (accept - 1) / max(1, spec.draft_tokens - 1)
                meta["spec_num_correct_drafts"] = req.accepted
        return meta

    async def generate(self, request: web.Request) -> web.StreamResponse:
        try:
            body = await _read_json(request)
            batch = _generate_batch(body)
        except (ValueError, TypeError) as exc:
            return _error(400, str(exc))
        if batch is not None:
            return await self._generate_batch(request, body, batch)
        try:
            params = body.get("sampling_params") or {}
            prompt = _generate_prompt(body, self.ids)
            sampling = _sampling(params, "max_new_tokens", 128)
        except (ValueError, TypeError) as exc:
            return _error(400, str(exc))
        warmup = request.headers.get("X-Sglang-Sim-Warmup") == "1"
        try:
            req = await self._routed_request(
                body, prompt, sampling, params.get("seed"), warmup, arrived=request.get(ARRIVED)
            )
        except ValueError as exc:
            return _error(500, str(exc))
        if body.get("stream"):
            return await self._stream_generate(request, req)
        await _wait_done(req)
        return web.json_response(
            {
                "text": _text_of(req.output_ids),
                "output_ids": req.output_ids,
                "meta_info": self._meta_info(req, True),
            }
        )

    async def _generate_batch(
        self, request: web.Request, body: dict[str, Any], items: list[dict[str, Any]]
    ) -> web.StreamResponse:
        """A list of prompts: one request each, answered together as a list, in order."""
        if body.get("stream"):
            return _error(400, "the simulator streams single prompts only")
        params = body.get("sampling_params") or {}
        try:
            sampling = _sampling(params, "max_new_tokens", 128)
            prompts = [_generate_prompt(item, self.ids) for item in items]
        except (ValueError, TypeError) as exc:
            return _error(400, str(exc))
        reqs = [
            self._new_request(prompt, sampling, params.get("seed"), arrived=request.get(ARRIVED))
            for prompt in prompts
        ]
        for req in reqs:
            await _wait_done(req)
        return web.json_response(
            [
                {
                    "text": _text_of(req.output_ids),
                    "output_ids": req.output_ids,
                    "meta_info": self._meta_info(req, True),
                }
                for req in reqs
            ]
        )

    async def _stream_generate(self, request: web.Request, req: Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        text_parts: list[str] = []
        try:
            while True:
                ids, done = await _next_tokens(req)
                if ids or done:
                    text_parts.append(_text_of(ids))
                    out = {
                        "text": "".join(text_parts),
                        "output_ids": ids,
                        "meta_info": self._meta_info(req, done),
                    }
                    await resp.write(b"data: " + json.dumps(out).encode() + b"\n\n")
                if done:
                    break
            await resp.write(b"data: [DONE]\n\n")
        except (ConnectionResetError, RuntimeError):
            req.aborted = True
            raise
        return resp
