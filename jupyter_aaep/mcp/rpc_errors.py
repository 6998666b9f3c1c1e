"""JSON-RPC mistakes answered in sentences a client's model can act on.

The SDK answers a malformed message with its parser's words ("Validation error: 4 validation
errors for union[JSONRPCRequest, …]" and a page of pydantic output). A model reading that cannot
tell what to fix. So the endpoint checks the shape of a POSTed message first (one JSON object,
``"jsonrpc": "2.0"``, a method this server offers, an id that is a string or an integer, params
that are an object) and says what is wrong in one sentence; the SDK's own HTTP-level errors
(a missing session, a wrong Accept header) are reworded the same way.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["check_message", "reword"]

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
OFFERED = ("initialize", "ping", "tools/list", "tools/call")
"""The requests this server answers; notifications (``notifications/…``) are accepted as sent."""
SHAPE = (
    'Send one JSON-RPC 2.0 message per request: a JSON object with "jsonrpc": "2.0", a "method" '
    'string, an "id" (a string or an integer) when it expects an answer, and "params" as an object.'
)


def check_message(body: bytes) -> tuple[int, dict[str, Any]] | None:
    """``(HTTP status, JSON-RPC error)`` for a POST body the server cannot take, else ``None``."""
    try:
        message = json.loads(body)
    except RecursionError:
        return 400, _error(None, PARSE_ERROR, f"The request is nested too deeply to read. {SHAPE}")
    except (ValueError, UnicodeDecodeError) as error:
        where = (
            f" ({error.msg} at character {error.pos})"
            if isinstance(error, json.JSONDecodeError)
            else ""
        )
        return 400, _error(None, PARSE_ERROR, f"The request body is not JSON{where}. {SHAPE}")
    if isinstance(message, list):
        return 400, _error(
            None,
            INVALID_REQUEST,
            "Batches (a JSON array of messages) are not supported by MCP's Streamable HTTP: send "
            "each message in a request of its own.",
        )
    if not isinstance(message, dict):
        return 400, _error(
            None,
            INVALID_REQUEST,
            f"The request is {_a('JSON ' + _kind(message))}, not an object. {SHAPE}",
        )
    request_id = message.get("id")
    has_id = "id" in message
    if has_id and (
        isinstance(request_id, bool)
        or not isinstance(request_id, (str, int))
        or _too_big(request_id)
    ):
        return 400, _error(
            None,
            INVALID_REQUEST,
            f'The message\'s "id" is {_a(_kind(request_id))}; it must be a string or an integer '
            "(at most 18 digits).",
        )
    answer_to = request_id if has_id else None
    if message.get("jsonrpc") != "2.0":
        return 400, _error(
            answer_to,
            INVALID_REQUEST,
            f'The message needs "jsonrpc": "2.0" (it has {_shown(message.get("jsonrpc"))}). {SHAPE}',
        )
    method = message.get("method")
    if "method" not in message:
        if "result" in message or "error" in message:
            return None  # a client's answer to the server (the SDK checks it)
        return 400, _error(
            answer_to,
            INVALID_REQUEST,
            'The message has no "method": name what to do, e.g. "tools/list" or "tools/call".',
        )
    if not isinstance(method, str):
        return 400, _error(
            answer_to,
            INVALID_REQUEST,
            f'The message\'s "method" is {_a(_kind(method))}, not a string.',
        )
    params = message.get("params")
    if "params" in message and not isinstance(params, dict):
        return 400, _error(
            answer_to,
            INVALID_PARAMS,
            f'The message\'s "params" is {_a(_kind(params))}; it must be an object.',
        )
    if not has_id:
        return None  # a notification: nothing is answered, unknown ones are ignored
    if method not in OFFERED:
        return 200, _error(
            answer_to,
            METHOD_NOT_FOUND,
            f"This server does not offer {method[:100]!r}; it answers {', '.join(OFFERED)}.",
        )
    if method == "tools/call":
        return _check_call(answer_to, params or {})
    if method == "initialize":
        return _check_initialize(answer_to, params or {})
    if method == "tools/list" and not isinstance((params or {}).get("cursor", ""), str):
        return 200, _error(
            answer_to,
            INVALID_PARAMS,
            'The "cursor" of tools/list must be the string a previous answer gave as nextCursor.',
        )
    return None


def _check_initialize(request_id: Any, params: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
    """The SDK answers a bad initialize with "Invalid request parameters" alone; say which."""
    client = params.get("clientInfo")
    wrong = []
    if not isinstance(params.get("protocolVersion"), str):
        wrong.append(f'"protocolVersion" is {_shown(params.get("protocolVersion"))}')
    if not isinstance(params.get("capabilities"), dict):
        wrong.append(f'"capabilities" is {_shown(params.get("capabilities"))}')
    if not (
        isinstance(client, dict)
        and isinstance(client.get("name"), str)
        and isinstance(client.get("version"), str)
    ):
        wrong.append(f'"clientInfo" is {_shown(client)}')
    if not wrong:
        return None
    return 200, _error(
        request_id,
        INVALID_PARAMS,
        'An initialize request needs "params" with "protocolVersion" (a string such as '
        '"2025-06-18"), "capabilities" (an object) and "clientInfo" (an object with a "name" '
        f'and a "version" string); here {" and ".join(wrong)}.',
    )


def _check_call(request_id: Any, params: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
    name, arguments = params.get("name"), params.get("arguments")
    if not isinstance(name, str):
        return 200, _error(
            request_id,
            INVALID_PARAMS,
            f'A tools/call request needs "params": {{"name": a tool\'s name, "arguments": an object}}; its '
            f'"name" is {_shown(name)}. tools/list gives the names.',
        )
    if arguments is not None and not isinstance(arguments, dict):
        return 200, _error(
            request_id,
            INVALID_PARAMS,
            f"The arguments of {name[:100]!r} are {_a(_kind(arguments))}; they must be an object, "
            'e.g. {"notebook_path": "analysis.ipynb"}.',
        )
    return None


_SDK_WORDS = {
    "Parse error": f"The request body is not JSON. {SHAPE}",
    "Validation error": f"The message is not a valid MCP message. {SHAPE}",
    "Not Acceptable": "Send the header Accept: application/json, text/event-stream (MCP's Streamable HTTP).",
    "Unsupported Media Type": "Send the body with the header Content-Type: application/json.",
    "Bad Request: Missing session ID": "This request needs the mcp-session-id header from the "
    "server's answer to initialize; initialize first.",
    "Not Found": "This MCP session has ended or is unknown to the server; initialize a new one.",
    "Method Not Allowed": "Use POST to send messages, GET to listen and DELETE to end the session.",
    "Conflict": "This session already has a listening stream (GET); use that one.",
}


def reword(text: str) -> str:
    """The SDK's words for an HTTP-level error, as a sentence a model can act on."""
    for prefix, sentence in _SDK_WORDS.items():
        if text.startswith(prefix):
            return sentence
    text = " ".join(text.split())[:300] or "The server could not take this request."
    return text if text.endswith((".", "?", ")")) else text + "."


def _error(request_id: Any, code: int, text: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": text}}


def _too_big(value: Any) -> bool:
    return (
        isinstance(value, int)
        and abs(value) >= 10**18
        or isinstance(value, str)
        and len(value) > 1000
    )


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer that is too large" if _too_big(value) else "integer"
    if isinstance(value, str):
        return "string that is too long" if _too_big(value) else "string"
    return {dict: "object", list: "array", float: "number", type(None): "null"}.get(
        type(value), "value"
    )


def _shown(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, str) and len(value) <= 40:
        return json.dumps(value)
    return _a(_kind(value))


def _a(kind: str) -> str:
    return f"{'an' if kind[:1] in 'aeiou' else 'a'} {kind}"
