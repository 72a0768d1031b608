"""Parse SGLang's ``server_args`` startup line into a plain dict.

Two formats exist (sglang-facts.md section 1; the ``server_args_dict`` row of
:data:`pytest_sglang.versions.CHANGES`):

* 0.5.19+: ``server_args={'model_path': '...', ...}`` — a dict repr;
* <=0.5.18: ``server_args=ServerArgs(model_path='...', ...)`` — a dataclass repr.

The line is read by its shape, not by the version, so a host whose version is unknown still parses.

Both are Python reprs, so ``ast`` reads them. Values that are not literals (``<object at 0x..>``,
nested reprs such as ``LoRARef(...)``) are kept as their source text, and a line that was cut
short (journald's line limit, a copy-paste) still yields every complete field before the cut.
"""

from __future__ import annotations

import ast
import math
import re
import threading
from typing import Any

__all__ = ["find_server_args", "parse_server_args"]

_MARKER = re.compile(r"server_args=")
_NAMES = {"inf": math.inf, "nan": math.nan, "true": True, "false": False, "null": None}


def find_server_args(lines: list[str]) -> str | None:
    """The last ``server_args=`` line among ``lines`` (a restart logs one per start)."""
    for line in reversed(lines):
        if "server_args=" in line:
            return line
    return None


def parse_server_args(line: str) -> dict[str, Any]:
    """Read a ``server_args`` log line, with any timestamp or prefix, into a dict.

    Raises ValueError when the line holds no ``server_args=`` at all.
    """
    match = _MARKER.search(line)
    if match is None:
        raise ValueError("not a server_args line: no 'server_args=' in it")
    body = line[match.end() :].strip()
    if body.startswith("ServerArgs("):
        return _parse_repr(body)
    if body.startswith("{"):
        return _parse_dict(body)
    raise ValueError(f"unrecognised server_args format: {body[:40]!r}")


def _literal(node: ast.expr, source: str) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        if isinstance(node, ast.Name) and node.id.lower() in _NAMES:
            return _NAMES[node.id.lower()]
        segment = ast.get_source_segment(source, node)
        return segment if segment is not None else ast.unparse(node)


#: CPython 3.11 keeps the AST constructor's recursion depth in per-interpreter state, so two
#: threads parsing at once can fail with ``SystemError: AST constructor recursion depth mismatch``
#: (python/cpython#106905). A topology's parts read their journals in threads of one process.
_AST_LOCK = threading.Lock()


def _parse_expression(text: str) -> ast.Expression:
    """``ast.parse(text, mode="eval")``, one thread at a time (:data:`_AST_LOCK`)."""
    with _AST_LOCK:
        return ast.parse(text, mode="eval")


def _parse_repr(body: str) -> dict[str, Any]:
    try:
        tree = _parse_expression(body)
    except SyntaxError:
        return _parse_pairs(body[len("ServerArgs(") :], keyed_by="=")
    call = tree.body
    if not isinstance(call, ast.Call):
        return _parse_pairs(body[len("ServerArgs(") :], keyed_by="=")
    return {kw.arg: _literal(kw.value, body) for kw in call.keywords if kw.arg is not None}


def _parse_dict(body: str) -> dict[str, Any]:
    try:
        tree = _parse_expression(body)
    except SyntaxError:
        return _parse_pairs(body[1:], keyed_by=":")
    node = tree.body
    if not isinstance(node, ast.Dict):
        return _parse_pairs(body[1:], keyed_by=":")
    result: dict[str, Any] = {}
    for key, value in zip(node.keys, node.values):
        if key is None:
            continue
        name = _literal(key, body)
        result[str(name)] = _literal(value, body)
    return result


def _split_top_level(text: str) -> list[str]:
    """Split on commas outside quotes and brackets; stop at the closing bracket of the call."""
    pieces: list[str] = []
    depth = 0
    quote = ""
    start = 0
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            if depth == 0:
                pieces.append(text[start:i])
                return pieces
            depth -= 1
        elif ch == "," and depth == 0:
            pieces.append(text[start:i])
            start = i + 1
        i += 1
    # Cut short: the trailing piece is incomplete, so it is dropped.
    return pieces


def _parse_pairs(text: str, *, keyed_by: str) -> dict[str, Any]:
    """Tolerant fallback for lines ``ast`` cannot read (cut short, odd values)."""
    result: dict[str, Any] = {}
    for piece in _split_top_level(text):
        key, sep, raw = piece.partition(keyed_by)
        if not sep:
            continue
        key = key.strip().strip("'\"")
        raw = raw.strip()
        try:
            expr = _parse_expression(raw).body
            result[key] = _literal(expr, raw)
        except SyntaxError:
            result[key] = raw
    return result
