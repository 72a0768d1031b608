"""What a server answers, reduced to what must match between the simulator and the real server:
each endpoint's status and JSON shape, streamed chunk shapes, Prometheus metric names, and the
startup log's milestones in order.

A *shape* keeps a JSON document's structure and value types and drops its values: ``{"id":
"str", "usage": {"prompt_tokens": "int"}}``. Lists take the shape of their elements (every
distinct one). :func:`differences` compares two shapes and names each field that differs with
both sides' shape and the real value, so that a failing comparison says what to fix.
"""

from __future__ import annotations

import json
import re
from typing import Any

import requests

__all__ = [
    "CPU_MILESTONES",
    "CPU_ONLY",
    "ENDPOINTS",
    "MILESTONES",
    "SCRAPED",
    "TIMED",
    "allowed",
    "capture",
    "differences",
    "merge",
    "metric_names",
    "milestones",
    "shape",
]

PROMPT = "the model of the server is"
_GENERATE = {"text": PROMPT, "sampling_params": {"max_new_tokens": 8, "temperature": 0}}
_CHAT = {
    "model": "default",
    "messages": [{"role": "user", "content": PROMPT}],
    "max_tokens": 8,
    "temperature": 0,
}
_COMPLETIONS = {"model": "default", "prompt": PROMPT, "max_tokens": 8, "temperature": 0}
#: What a streamed OpenAI request adds: the usage chunk the load generator reads.
_OPENAI_STREAM = {"stream": True, "stream_options": {"include_usage": True}}
#: (name, method, path, JSON body or None, streamed); each POST also streamed, as "<name>_stream".
ENDPOINTS: tuple[tuple[str, str, str, dict[str, Any] | None, bool], ...] = (
    ("health", "GET", "/health", None, False),
    ("health_generate", "GET", "/health_generate", None, False),
    ("models", "GET", "/v1/models", None, False),
    ("model_info", "GET", "/get_model_info", None, False),
    ("server_info", "GET", "/get_server_info", None, False),
    *(
        entry
        for name, path, body, streaming in (
            ("generate", "/generate", _GENERATE, {"stream": True}),
            ("chat", "/v1/chat/completions", _CHAT, _OPENAI_STREAM),
            ("completions", "/v1/completions", _COMPLETIONS, _OPENAI_STREAM),
        )
        for entry in (
            (name, "POST", path, body, False),
            (f"{name}_stream", "POST", path, {**body, **streaming}, True),
        )
    ),
)


def shape(value: Any) -> Any:
    """The structure and value types of a JSON value (``int`` and ``float`` kept apart). A
    list's elements merge into one shape (:func:`merge`): a stream's chunks are one shape whose
    fields are every field any chunk has."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in sorted(value.items())}
    if isinstance(value, list):
        merged: Any = None
        for item in value:
            merged = merge(merged, shape(item))
        return [] if merged is None else [merged]
    if value is None:
        return "null"
    return type(value).__name__


def merge(a: Any, b: Any) -> Any:
    """One shape for two: dicts by the union of their fields, lists by their element, ``null``
    giving way to any other shape (a field empty in one chunk and set in the next), other
    differing shapes as the sorted ``"a|b"`` of their names (``"float|int"``)."""
    if a is None or a == b or a == "null":
        return b
    if b is None or b == "null":
        return a
    if isinstance(a, dict) and isinstance(b, dict):
        return {k: merge(a.get(k), b[k]) if k in b else a[k] for k in sorted({*a, *b})}
    if isinstance(a, list) and isinstance(b, list):
        return [merge(a[0] if a else None, b[0] if b else None)] if (a or b) else []
    names = {*str(_name(a)).split("|"), *str(_name(b)).split("|")}
    return "|".join(sorted(names))


def _name(value: Any) -> str:
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return str(value)


def _sse(response: requests.Response) -> dict[str, Any]:
    """A ``data:`` event stream: ``{"events": [its JSON documents], "done": whether it ended
    with ``[DONE]``}`` (kept apart, so that the chunks merge into one shape)."""
    events: list[Any] = []
    done = False
    for raw in response.iter_lines():
        line = raw.decode("utf-8", "replace")
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            done = True
        else:
            events.append(json.loads(data))
    return {"events": events, "done": done}


def capture(base_url: str, headers: dict[str, str] | None = None) -> dict[str, dict[str, Any]]:
    """Every endpoint of :data:`ENDPOINTS`: ``{name: {"status", "body"}}``; a streamed body is
    the list of its events."""
    out: dict[str, dict[str, Any]] = {}
    for name, method, path, body, streamed in ENDPOINTS:
        response = requests.request(
            method, base_url + path, json=body, headers=headers, timeout=60, stream=streamed
        )
        if streamed:
            payload: Any = _sse(response)
        else:
            try:
                payload = response.json()
            except ValueError:
                payload = response.text
        out[name] = {"status": response.status_code, "body": payload}
    return out


_METRIC = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{| )")


def metric_names(text: str) -> set[str]:
    """The metric family names of a Prometheus text exposition (``_bucket``/``_sum``/... kept)."""
    return {m.group(1) for line in text.splitlines() if (m := _METRIC.match(line))}


#: Fields whose presence depends on timing, not on the server's kind or state, with why: one
#: side having it and the other not is no difference (its type still must match).
TIMED: dict[str, str] = {
    "decode_throughput": "0.5.23 omits it when a request's tokens reach the tokenizer manager in "
    "one batch: the decode interval is then 0 (req_time_stats.get_decode_throughput), which "
    "depends on the machine's speed",
}


def differences(real: Any, sim: Any, path: str = "") -> list[str]:
    """Each place where the simulator's shape differs from the real one: ``path: real X, sim
    Y``; a field only one side has is named with that side. ``null`` on one side matches any
    shape on the other: whether a field is set can depend on the server's state (e.g.
    ``cached_tokens_details`` once a prompt hit the prefix cache), its presence and type not;
    a field of :data:`TIMED` may be absent on either side."""
    if isinstance(real, dict) and isinstance(sim, dict):
        out = []
        for key in sorted(set(real) | set(sim)):
            where = f"{path}.{key}" if path else key
            if key in TIMED and (key not in sim or key not in real):
                continue
            if key not in sim:
                out.append(f"{where}: real {_short(real[key])}, sim has no such field")
            elif key not in real:
                out.append(f"{where}: sim {_short(sim[key])}, real has no such field")
            else:
                out.extend(differences(real[key], sim[key], where))
        return out
    if isinstance(real, list) and isinstance(sim, list):
        if real and sim:
            return differences(real[0], sim[0], f"{path}[]")
        return [] if real == sim else [f"{path}[]: real {_short(real)}, sim {_short(sim)}"]
    if real != sim and "null" not in (real, sim):
        return [f"{path}: real {_short(real)}, sim {_short(sim)}"]
    return []


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 160 else text[:157] + "..."


#: Start-up lines the plugin reads (journal phases, scheduler limits, readiness), in the order
#: SGLang writes them.
MILESTONES = (
    "server_args=",
    "Init parallel begin",
    "Load weight begin",
    "Load weight end",
    "KV Cache is allocated",
    "max_total_num_tokens=",
    "CUDA graph begin",
    "Uvicorn running on",
    "fired up and ready to roll",
)
#: Milestones the recording (0.5.23 on a CPU) does not reach, with why (docs/simulator.md,
#: "Held to the real server").
CPU_MILESTONES = {
    "CUDA graph begin": "no CUDA graphs on a CPU; on a GPU 0.5.23 logs 'Capture target decode "
    "CUDA graph begin.' (cuda_graph_setup.py)",
}


def milestones(lines: list[str]) -> list[str]:
    """The :data:`MILESTONES` in the order the lines reach them (each once)."""
    seen: list[str] = []
    for line in lines:
        for needle in MILESTONES:
            if needle in line and needle not in seen:
                seen.append(needle)
    return seen


#: Fields that differ only because the real server ran on a CPU (docs/simulator.md), by the
#: prefix of the difference (``endpoint.field.path``) and why.
CPU_ONLY: dict[str, str] = {}
#: The metrics the plugin reads from /metrics (pytest_sglang/bench/prometheus.py).
SCRAPED = (
    "sglang:time_to_first_token_seconds_sum",
    "sglang:time_to_first_token_seconds_count",
    "sglang:e2e_request_latency_seconds_sum",
    "sglang:e2e_request_latency_seconds_count",
    "sglang:num_running_reqs",
    "sglang:num_queue_reqs",
    "sglang:token_usage",
    "sglang:prompt_tokens_total",
    "sglang:generation_tokens_total",
)


def allowed(diffs: list[str]) -> list[str]:
    """The differences that :data:`CPU_ONLY` does not explain."""
    return [d for d in diffs if not any(d.startswith(prefix) for prefix in CPU_ONLY)]
