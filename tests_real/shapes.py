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
from collections.abc import Iterator
from typing import Any

import requests

__all__ = ["ENDPOINTS", "capture", "differences", "metric_names", "shape"]

PROMPT = "the model of the server is"
#: (name, method, path, JSON body or None, streamed).
ENDPOINTS: tuple[tuple[str, str, str, dict[str, Any] | None, bool], ...] = (
    ("health", "GET", "/health", None, False),
    ("health_generate", "GET", "/health_generate", None, False),
    ("models", "GET", "/v1/models", None, False),
    ("model_info", "GET", "/get_model_info", None, False),
    ("server_info", "GET", "/get_server_info", None, False),
    (
        "generate",
        "POST",
        "/generate",
        {"text": PROMPT, "sampling_params": {"max_new_tokens": 8, "temperature": 0}},
        False,
    ),
    (
        "generate_stream",
        "POST",
        "/generate",
        {
            "text": PROMPT,
            "sampling_params": {"max_new_tokens": 8, "temperature": 0},
            "stream": True,
        },
        True,
    ),
    (
        "chat",
        "POST",
        "/v1/chat/completions",
        {
            "model": "default",
            "messages": [{"role": "user", "content": PROMPT}],
            "max_tokens": 8,
            "temperature": 0,
        },
        False,
    ),
    (
        "chat_stream",
        "POST",
        "/v1/chat/completions",
        {
            "model": "default",
            "messages": [{"role": "user", "content": PROMPT}],
            "max_tokens": 8,
            "temperature": 0,
            "stream": True,
            "stream_options": {"include_usage": True},
        },
        True,
    ),
    (
        "completions",
        "POST",
        "/v1/completions",
        {"model": "default", "prompt": PROMPT, "max_tokens": 8, "temperature": 0},
        False,
    ),
    (
        "completions_stream",
        "POST",
        "/v1/completions",
        {
            "model": "default",
            "prompt": PROMPT,
            "max_tokens": 8,
            "temperature": 0,
            "stream": True,
            "stream_options": {"include_usage": True},
        },
        True,
    ),
)


def shape(value: Any) -> Any:
    """The structure and value types of a JSON value (``int`` and ``float`` kept apart)."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in sorted(value.items())}
    if isinstance(value, list):
        distinct: list[Any] = []
        for item in value:
            s = shape(item)
            if s not in distinct:
                distinct.append(s)
        return distinct
    if value is None:
        return "null"
    return type(value).__name__


def _sse(response: requests.Response) -> Iterator[Any]:
    """The JSON documents of a ``data:`` event stream (``[DONE]`` as the string)."""
    for raw in response.iter_lines():
        line = raw.decode("utf-8", "replace")
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        yield data if data == "[DONE]" else json.loads(data)


def capture(base_url: str, headers: dict[str, str] | None = None) -> dict[str, dict[str, Any]]:
    """Every endpoint of :data:`ENDPOINTS`: ``{name: {"status", "body"}}``; a streamed body is
    the list of its events."""
    out: dict[str, dict[str, Any]] = {}
    for name, method, path, body, streamed in ENDPOINTS:
        response = requests.request(
            method, base_url + path, json=body, headers=headers, timeout=60, stream=streamed
        )
        if streamed:
            payload: Any = list(_sse(response))
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


def differences(real: Any, sim: Any, path: str = "") -> list[str]:
    """Each place where the simulator's shape differs from the real one: ``path: real X, sim
    Y``; a field only one side has is named with that side."""
    if isinstance(real, dict) and isinstance(sim, dict):
        out = []
        for key in sorted(set(real) | set(sim)):
            where = f"{path}.{key}" if path else key
            if key not in sim:
                out.append(f"{where}: real {_short(real[key])}, sim has no such field")
            elif key not in real:
                out.append(f"{where}: sim {_short(sim[key])}, real has no such field")
            else:
                out.extend(differences(real[key], sim[key], where))
        return out
    if isinstance(real, list) and isinstance(sim, list):
        extra = [s for s in sim if s not in real]
        missing = [r for r in real if r not in sim]
        if not extra and not missing:
            return []
        if len(real) == 1 and len(sim) == 1:
            return differences(real[0], sim[0], f"{path}[]")
        return [f"{path}[]: real {_short(missing)}, sim {_short(extra)}"]
    if real != sim:
        return [f"{path}: real {_short(real)}, sim {_short(sim)}"]
    return []


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 160 else text[:157] + "..."
