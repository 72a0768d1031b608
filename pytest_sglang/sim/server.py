"""The simulator's HTTP API: SGLang's endpoints, shapes and readiness (sglang-facts.md 4 and 5).

Why these exact shapes: the plugin, the load generator and third-party clients (the ``openai``
package, bench_serving) talk to the simulator exactly as to SGLang. Streaming chunks are built
from pre-rendered string templates (the generated text is plain ASCII words), so a token costs a
string concatenation rather than a JSON encoding; that keeps the simulator off the bottleneck.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from .arrival import ArrivalClock
from .logs import access_log
from .scheduler import Request, Scheduler
from .tokenizer import chat_prompt_tokens, count_tokens, prompt_seed, token_text

__all__ = ["ServerState", "build_app"]

FLUSH_OK = (
    "Cache flushed.\nPlease check backend logs for more details. (When there are running or "
    "waiting requests, the operation will not be performed.)\n"
)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class ServerState:
    """What the HTTP layer needs: args, status, scheduler and the capacity figures."""

    def __init__(
        self,
        args: dict[str, Any],
        version: str,
        scheduler: Scheduler,
        max_total_num_tokens: int,
        context_len: int,
        startup_time: float,
    ) -> None:
        self.args = args
        self.version = version
        self.scheduler = scheduler
        self.max_total_num_tokens = max_total_num_tokens
        self.context_len = context_len
        self.startup_time = startup_time
        self.status = "Starting"
        self.shutting_down = False
        self.created = int(time.time())
        self.served = str(args.get("served_model_name") or args["model_path"])
        self.background: list[asyncio.Task[None]] = []  # keeps warmup etc. referenced

    @property
    def new_ids(self) -> bool:
        """0.5.18+ prefixes response ids (``chatcmpl-``/``cmpl-``); 0.5.5 used a bare hex."""
        return True


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


def build_app(state: ServerState) -> web.Application:
    """The aiohttp application with every simulated route."""
    app = web.Application(middlewares=[_access], client_max_size=64 * 1024 * 1024)
    app[ARRIVAL_CLOCK] = ArrivalClock()
    sched = state.scheduler

    def model_card() -> dict[str, Any]:
        return {
            "id": state.served,
            "object": "model",
            "created": state.created,
            "owned_by": "sglang",
            "root": state.served,
            "parent": None,
            "max_model_len": state.context_len,
        }

    async def models(_: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [model_card()]})

    async def model_by_name(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name != state.served:
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
        return web.json_response(model_card())

    def model_info(full: bool) -> dict[str, Any]:
        info: dict[str, Any] = {
            "model_path": state.args["model_path"],
            "tokenizer_path": state.args.get("tokenizer_path") or state.args["model_path"],
            "is_generation": True,
            "preferred_sampling_params": state.args.get("preferred_sampling_params"),
            "weight_version": state.args.get("weight_version") or "default",
        }
        if full:
            info.update(
                served_model_name=state.served,
                load_format=state.args.get("load_format"),
                reasoning_parser=state.args.get("reasoning_parser"),
                tool_call_parser=state.args.get("tool_call_parser"),
                has_image_understanding=False,
                has_audio_understanding=False,
                model_type="qwen3_5_moe"
                if "qwen3.5" in state.args["model_path"].lower()
                else "llama",
                architectures=[sched.resolved.model.architecture],
            )
        return info

    async def get_model_info(_: web.Request) -> web.Response:
        return web.json_response(model_info(full=False))

    async def model_info_route(_: web.Request) -> web.Response:
        return web.json_response(model_info(full=True))

    def server_info() -> dict[str, Any]:
        memory = {
            "weight": round(sched.resolved.model.weights_gb / sched.tp, 2),
            "kvcache": 0.0,
            "startup_available": 0.0,
            "token_capacity": state.max_total_num_tokens,
            "token_capacity_swa": 0,
            "graph": {"decode": 0.2},
        }
        internal: dict[str, Any] = dict(state.args)
        internal["last_gen_throughput"] = sched.last_gen_throughput
        internal["memory_usage"] = memory
        accept = sched.avg_spec_accept_length
        if accept is not None:
            internal["avg_spec_accept_length"] = accept
        body: dict[str, Any] = dict(state.args)
        body.update(
            status="ready",
            max_total_num_tokens=state.max_total_num_tokens,
            max_req_input_len=state.context_len - 1,
            startup_time=state.startup_time,
            internal_states=[internal],
            version=state.version,
        )
        return body

    async def server_info_route(_: web.Request) -> web.Response:
        return web.json_response(server_info(), dumps=lambda o: json.dumps(o, default=str))

    async def ping(_: web.Request) -> web.Response:
        return web.Response(status=200)

    async def health(_: web.Request) -> web.Response:
        if state.shutting_down or state.status != "Up":
            return web.Response(status=503)
        return web.Response(status=200)

    async def flush_cache(_: web.Request) -> web.Response:
        from .logs import log

        if sched.busy:
            log(
                "Cache not flushed because there are pending requests. #queue-req: "
                f"{len(sched.waiting)}, #running-req: {sched.num_running}"
            )
            return web.Response(status=400, text=FLUSH_OK)
        log("Cache flushed successfully!")
        return web.Response(status=200, text=FLUSH_OK)

    async def metrics(_: web.Request) -> web.Response:
        labels = f'engine_type="unified",model_name="{state.served}",pp_rank="0",tp_rank="0"'
        lines: list[str] = []

        def metric(name: str, kind: str, value: float) -> None:
            lines.append(f"# HELP sglang:{name} {name.replace('_', ' ')}.")
            lines.append(f"# TYPE sglang:{name} {kind}")
            lines.append(f"sglang:{name}{{{labels}}} {float(value)}")

        used = sched._used_tokens()
        metric("num_running_reqs", "gauge", sched.num_running)
        metric("num_used_tokens", "gauge", used)
        metric("token_usage", "gauge", used / max(1, state.max_total_num_tokens))
        metric("gen_throughput", "gauge", sched.last_gen_throughput)
        metric("num_queue_reqs", "gauge", len(sched.waiting))
        metric("cache_hit_rate", "gauge", 0.0)
        if sched.resolved.spec.algorithm is not None:
            metric("spec_accept_length", "gauge", sched.last_accept_len)
            metric("spec_num_steps", "gauge", sched.resolved.spec.num_steps)
            metric("spec_num_draft_tokens", "gauge", sched.resolved.spec.draft_tokens)
            metric("spec_verify_calls_total", "counter", sched.spec_verify_ct)
        metric("prompt_tokens_total", "counter", sched.prompt_tokens_total)
        metric("generation_tokens_total", "counter", sched.generation_tokens_total)
        metric("num_requests_total", "counter", sched.requests_total)
        for name, total in (
            ("time_to_first_token_seconds", sched.ttft_sum),
            ("e2e_request_latency_seconds", sched.e2e_sum),
        ):
            lines.append(f"# TYPE sglang:{name} histogram")
            lines.append(f'sglang:{name}_bucket{{{labels},le="+Inf"}} {sched.finished_requests}')
            lines.append(f"sglang:{name}_sum{{{labels}}} {total}")
            lines.append(f"sglang:{name}_count{{{labels}}} {sched.finished_requests}")
        return web.Response(
            text="\n".join(lines) + "\n", content_type="text/plain", charset="utf-8"
        )

    async def read_json(request: web.Request) -> dict[str, Any]:
        try:
            body = await request.json()
        except (ValueError, UnicodeDecodeError) as exc:
            raise ValueError(f"request body is not valid JSON: {exc}") from exc
        if not isinstance(body, dict):
            raise ValueError("request body must be a JSON object")
        return body

    def new_request(
        prompt_tokens: int,
        max_new: int,
        temperature: float,
        ignore_eos: bool,
        seed_text: str,
        seed: Any = None,
        warmup: bool = False,
        arrived: float | None = None,
    ) -> Request:
        base = prompt_seed(seed_text)
        if temperature > 0:
            base ^= prompt_seed(str(seed) if seed is not None else uuid.uuid4().hex)
        req = Request(
            prompt_tokens, max_new, ignore_eos, temperature, base, is_warmup=warmup, arrived=arrived
        )
        sched.submit(req)
        return req

    async def wait_done(req: Request) -> None:
        while not req.finished:
            req.event.clear()
            await req.event.wait()

    def usage(req: Request) -> dict[str, Any]:
        return {
            "prompt_tokens": req.prompt_tokens,
            "total_tokens": req.prompt_tokens + req.completion_tokens,
            "completion_tokens": req.completion_tokens,
            "prompt_tokens_details": None,
            "reasoning_tokens": 0,
        }

    def oai_finish(req: Request) -> tuple[str | None, Any]:
        reason = req.finish_reason or {}
        if reason.get("type") == "length":
            return "length", None
        if reason.get("type") == "stop":
            return "stop", reason.get("matched")
        return None, None

    def text_of(ids: list[int]) -> str:
        return "".join(token_text(i) for i in ids)

    async def stream_oai(
        request: web.Request, req: Request, chat: bool, model: str, include_usage: bool
    ) -> web.StreamResponse:
        resp = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await resp.prepare(request)
        rid = ("chatcmpl-" if chat else "cmpl-") + req.rid
        model_js = json.dumps(model)
        obj = "chat.completion.chunk" if chat else "text_completion"
        head = (
            f'data: {{"id":"{rid}","object":"{obj}","created":{int(req.created)},'
            f'"model":{model_js},"choices":[{{"index":0,'
        )
        if chat:
            first = (
                head + '"delta":{"role":"assistant","content":"","reasoning_content":null,'
                '"tool_calls":null},"logprobs":null,"finish_reason":null,'
                '"matched_stop":null}],"usage":null}\n\n'
            )
            await resp.write(first.encode())
            pre = head + '"delta":{"role":null,"content":"'
            post = (
                '","reasoning_content":null,"tool_calls":null},"logprobs":null,'
                '"finish_reason":null,"matched_stop":null}],"usage":null}\n\n'
            )
        else:
            pre = head + '"text":"'
            post = '","logprobs":null,"finish_reason":null,"matched_stop":null}]}\n\n'
        try:
            while True:
                if not req.pending and not req.finished:
                    req.event.clear()
                    await req.event.wait()
                ids = req.take()
                if ids:
                    await resp.write((pre + text_of(ids) + post).encode())
                if req.finished and not req.pending:
                    break
            reason, matched = oai_finish(req)
            if chat:
                tail = '"delta":{"role":null,"content":null,"reasoning_content":null,'
                tail += '"tool_calls":null},"logprobs":null,'
            else:
                tail = '"text":"","logprobs":null,'
            tail += (
                f'"finish_reason":{json.dumps(reason)},'
                f'"matched_stop":{json.dumps(matched)}}}],"usage":null}}\n\n'
            )
            await resp.write((head + tail).encode())
            if include_usage:
                chunk = {
                    "id": rid,
                    "object": obj,
                    "created": int(req.created),
                    "model": model,
                    "choices": [],
                    "usage": usage(req),
                }
                await resp.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            await resp.write(b"data: [DONE]\n\n")
        except (ConnectionResetError, RuntimeError):
            req.aborted = True
            raise
        return resp

    async def chat_completions(request: web.Request) -> web.StreamResponse:
        try:
            body = await read_json(request)
            messages = body.get("messages")
            if not isinstance(messages, list) or not messages:
                raise ValueError("messages must be a non-empty list")
            max_new, temperature, ignore_eos = _sampling(body, "max_tokens", 1 << 30)
            prompt = chat_prompt_tokens(messages)
        except (ValueError, TypeError) as exc:
            return _error(400, str(exc))
        max_new = min(max_new, max(1, state.context_len - prompt))
        seed_text = json.dumps(messages, sort_keys=True, default=str)
        sampling = (max_new, temperature, ignore_eos)
        return await serve_oai(request, body, prompt, seed_text, sampling, chat=True)

    async def serve_oai(
        request: web.Request,
        body: dict[str, Any],
        prompt: int,
        seed_text: str,
        sampling: tuple[int, float, bool],
        *,
        chat: bool,
    ) -> web.StreamResponse:
        """What /v1/chat/completions and /v1/completions share once the prompt is read."""
        max_new, temperature, ignore_eos = sampling
        req = new_request(
            prompt,
            max_new,
            temperature,
            ignore_eos,
            seed_text,
            body.get("seed"),
            arrived=request.get(ARRIVED),
        )
        model = str(body.get("model") or state.served)
        if body.get("stream"):
            return await stream_oai(request, req, chat, model, _include_usage(body))
        await wait_done(req)
        reason, matched = oai_finish(req)
        text = text_of(req.output_ids)
        choice: dict[str, Any] = {"index": 0}
        if chat:
            choice["message"] = {
                "role": "assistant",
                "content": text,
                "reasoning_content": None,
                "tool_calls": None,
            }
        else:
            choice["text"] = text
        choice.update(logprobs=None, finish_reason=reason, matched_stop=matched)
        return web.json_response(
            {
                "id": ("chatcmpl-" if chat else "cmpl-") + req.rid,
                "object": "chat.completion" if chat else "text_completion",
                "created": int(req.created),
                "model": model,
                "choices": [choice],
                "usage": usage(req),
                "metadata": {"weight_version": "default"},
            }
        )

    def _include_usage(body: dict[str, Any]) -> bool:
        """Usage in the stream: asked for per request, or the server default flag (0.5.10+)."""
        options = body.get("stream_options") or {}
        return bool(options.get("include_usage")) or bool(
            state.args.get("stream_response_default_include_usage")
        )

    async def completions(request: web.Request) -> web.StreamResponse:
        try:
            body = await read_json(request)
            prompt_raw = body.get("prompt")
            if isinstance(prompt_raw, list) and prompt_raw and isinstance(prompt_raw[0], int):
                prompt, seed_text = len(prompt_raw), json.dumps(prompt_raw)
            elif isinstance(prompt_raw, list) and len(prompt_raw) == 1:
                prompt, seed_text = count_tokens(str(prompt_raw[0])), str(prompt_raw[0])
            elif isinstance(prompt_raw, str):
                prompt, seed_text = count_tokens(prompt_raw), prompt_raw
            else:
                raise ValueError("prompt must be a string, one string in a list, or token ids")
            max_new, temperature, ignore_eos = _sampling(body, "max_tokens", 16)
        except (ValueError, TypeError) as exc:
            return _error(400, str(exc))
        sampling = (max_new, temperature, ignore_eos)
        return await serve_oai(request, body, prompt, seed_text, sampling, chat=False)

    def meta_info(req: Request, final: bool) -> dict[str, Any]:
        meta: dict[str, Any] = {
            "id": req.rid,
            "finish_reason": req.finish_reason if final else None,
            "prompt_tokens": req.prompt_tokens,
            "weight_version": "default",
            "total_retractions": 0,
            "completion_tokens": req.completion_tokens,
            "cached_tokens": 0,
        }
        if final:
            now = time.time()
            meta["e2e_latency"] = (req.finished_at or now) - req.created
            meta["response_sent_to_client_ts"] = now
            if sched.resolved.spec.algorithm is not None and req.verify_ct:
                spec = sched.resolved.spec
                accept = req.completion_tokens / req.verify_ct
                meta["spec_verify_ct"] = req.verify_ct
                meta["spec_accept_length"] = accept
                meta["spec_accept_rate"] = (accept - 1) / max(1, spec.draft_tokens - 1)
                meta["spec_num_correct_drafts"] = req.accepted
        return meta

    async def generate(request: web.Request) -> web.StreamResponse:
        try:
            body = await read_json(request)
            params = body.get("sampling_params") or {}
            if body.get("input_ids") is not None:
                ids = body["input_ids"]
                if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
                    raise ValueError("input_ids must be a list of token ids")
                prompt, seed_text = len(ids), json.dumps(ids)
            elif isinstance(body.get("text"), str):
                prompt, seed_text = count_tokens(body["text"]), body["text"]
            else:
                raise ValueError("give text (a string) or input_ids")
            max_new, temperature, ignore_eos = _sampling(params, "max_new_tokens", 128)
        except (ValueError, TypeError) as exc:
            return _error(400, str(exc))
        warmup = request.headers.get("X-Sglang-Sim-Warmup") == "1"
        req = new_request(
            prompt,
            max_new,
            temperature,
            ignore_eos,
            seed_text,
            params.get("seed"),
            warmup,
            arrived=request.get(ARRIVED),
        )
        if not body.get("stream"):
            await wait_done(req)
            return web.json_response(
                {
                    "text": text_of(req.output_ids),
                    "output_ids": req.output_ids,
                    "meta_info": meta_info(req, True),
                }
            )
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        text_parts: list[str] = []
        try:
            while True:
                if not req.pending and not req.finished:
                    req.event.clear()
                    await req.event.wait()
                ids = req.take()
                done = req.finished and not req.pending
                if ids or done:
                    text_parts.append(text_of(ids))
                    out = {
                        "text": "".join(text_parts),
                        "output_ids": ids,
                        "meta_info": meta_info(req, done),
                    }
                    await resp.write(b"data: " + json.dumps(out).encode() + b"\n\n")
                if done:
                    break
            await resp.write(b"data: [DONE]\n\n")
        except (ConnectionResetError, RuntimeError):
            req.aborted = True
            raise
        return resp

    router = app.router
    router.add_get("/v1/models", models)
    router.add_get("/v1/models/{name:.+}", model_by_name)
    router.add_get("/get_model_info", get_model_info)
    router.add_get("/model_info", model_info_route)
    router.add_get("/get_server_info", server_info_route)
    router.add_get("/server_info", server_info_route)
    router.add_route("*", "/ping", ping)
    router.add_get("/health", health)
    router.add_get("/health_generate", health)
    router.add_route("*", "/flush_cache", flush_cache)
    if state.args.get("enable_metrics"):
        router.add_get("/metrics", metrics)
    router.add_post("/v1/chat/completions", chat_completions)
    router.add_post("/v1/completions", completions)
    router.add_post("/generate", generate)
    return app
