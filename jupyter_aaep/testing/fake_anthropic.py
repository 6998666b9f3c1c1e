"""A scripted fake of the Anthropic Messages API, served over real HTTP on 127.0.0.1.

Tests, the offline demo and benchmarks point the real ``anthropic`` SDK at it
(``AsyncAnthropic(base_url=fake.base_url, api_key=fake.api_key)``), so the SDK's own
SSE parsing, retries and error mapping run exactly as against the service (DESIGN §10).

The server runs on its own daemon threads (``_http``), so it works with any event loop
in the test, or none. ``GET /v1/models`` (the Models API) lists ``models``. Each ``POST /v1/messages`` is

1. recorded in ``requests``;
2. answered 401 ``authentication_error`` unless it carries ``api_key`` (as ``x-api-key``
   or, as the SDK sends it, ``authorization: Bearer``);
3. checked like the service would (``_validation``); problems go to ``problems`` and the
   answer is 400 ``invalid_request_error``;
4. edited by its ``context_management`` parameter, or refused with 400 when the fake plays a
   compatible server without that feature; then its prompt is counted and answered 400
   ``"prompt is too long: N tokens > M maximum"`` above ``context_window``; then the prompt
   cache is read and written (``_prompt`` documents the token estimate, the cache rules and
   the edit);
5. answered from the next script entry (or the responder): a ``Turn`` streams as SSE when
   the request says ``"stream": true`` and comes back as one Message JSON otherwise; an
   ``ErrorReply`` is an error status with the service's error body.

Steps 2 to 4 consume no script entry: a rejected request never reaches the "model".
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from ._http import Aborted, Handler, Server
from ._prompt import (
    CONTEXT_MANAGEMENT_BETA,
    ContextEditError,
    PromptCache,
    PromptUsage,
    apply_context_management,
    prompt_units,
)
from ._validation import validate_request
from ._wire import ErrorReply, Rendered, ToolUse, Turn, build_reply, encode_sse, error_response

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["ErrorReply", "FakeAnthropic", "RecordedRequest", "ToolUse", "Turn"]

_STOP_TIMEOUT = 1.5  # seconds stop() waits for server threads, in total
_POLL = 0.05  # seconds between checks while a stream is stalled


@dataclass
class RecordedRequest:
    """One ``POST /v1/messages`` the fake received.

    Attributes
    ----------
    body : dict
        The parsed JSON body (``{}`` if it was not a JSON object).
    headers : dict
        Request headers with lower-case names.
    path : str
        Request path including any query (``/v1/messages?beta=true``).
    status : int
        Status code answered; 0 until the answer is chosen.
    reply : Turn, ErrorReply or None
        The script entry or responder result used; ``None`` when the fake itself
        rejected the request (bad key, failed validation, exhausted script).
    message : dict or None
        The Message object sent for a ``Turn`` (its final state, when streamed).
    disconnected : bool
        True if the client hung up before a streamed answer finished, e.g. because the
        caller cancelled the stream.
    prompt_tokens : int or None
        The prompt's size by the fake's estimate, after any context editing; ``None`` when
        the request was rejected before it was counted.
    usage : PromptUsage or None
        How the prompt was served: uncached input, cache writes and cache reads.
    applied_edits : list of dict or None
        What context editing did (``None`` when the request did not ask for it).
    """

    body: dict[str, Any]
    headers: dict[str, str]
    path: str
    status: int = 0
    reply: Turn | ErrorReply | None = None
    message: dict[str, Any] | None = None
    disconnected: bool = False
    prompt_tokens: int | None = None
    usage: PromptUsage | None = None
    applied_edits: list[dict[str, Any]] | None = None

    @property
    def images(self) -> list[dict[str, Any]]:
        """Every image block the model received in this request, in order (in user messages
        and inside tool results)."""
        found: list[dict[str, Any]] = []

        def walk(value: Any) -> None:
            if isinstance(value, list):
                for item in value:
                    walk(item)
            elif isinstance(value, dict):
                if value.get("type") == "image":
                    found.append(value)
                elif isinstance(value.get("content"), list):
                    walk(value["content"])

        for message in self.body.get("messages") or []:
            if isinstance(message, dict) and message.get("role") == "user":
                walk(message.get("content"))
        return found

    @property
    def last_user_text(self) -> str:
        """Text of the final user message (its text blocks), for keyword responders."""
        for message in reversed(self.body.get("messages") or []):
            if not isinstance(message, dict) or message.get("role") != "user":
                continue
            content = message.get("content")
            if isinstance(content, str):
                return content
            if not isinstance(content, list):
                return ""
            return "\n".join(
                str(b.get("text", ""))
                for b in content
                if isinstance(b, dict) and b.get("type") == "text"
            )
        return ""


Responder = Callable[[RecordedRequest], "Turn | ErrorReply"]

DEFAULT_MODELS: list[str | tuple[str, str]] = [
    ("claude-opus-4-5", "Claude Opus 4.5"),
    ("claude-sonnet-4-5", "Claude Sonnet 4.5"),
    ("claude-haiku-4-5", "Claude Haiku 4.5"),
]


class FakeAnthropic:
    """Scripted Messages API on ``http://127.0.0.1:<port>``.

    Parameters
    ----------
    script : list of Turn or ErrorReply, optional
        Answers in order, one per accepted request. When it runs out, the request is
        answered 400 ``"fake script exhausted: no turn scripted for request N"`` (N counts
        every recorded request from 1) and a problem is recorded.
    responder : callable, optional
        Called on a server thread with each accepted ``RecordedRequest`` to choose its
        answer, instead of a script (keyword-driven fake models). Exclusive with ``script``.
    api_key : str
        The only key accepted, in ``x-api-key`` or ``authorization: Bearer`` (the SDK
        uses the latter); anything else gets 401 ``authentication_error``.
    model : str, optional
        Model name reported in answers; ``None`` echoes the request's ``model``.
    context_window : int or None
        Most prompt tokens a request may have (200 000 by default, as the Claude models);
        ``None`` for no limit.
    context_management : bool
        Whether the fake offers the Messages API's context editing (the
        ``context_management`` parameter); ``False`` refuses it with the 400 a compatible
        server without the feature gives.
    min_cacheable_tokens : int
        Shortest prefix the prompt cache stores.
    clock : callable
        Seconds, for the cache lifetime (``time.monotonic`` by default; tests pass their own).
    models : list of str or (id, display name), or None
        What ``GET /v1/models`` lists, newest first; ``None`` answers it 404, as a compatible
        server without the Models API does.

    Attributes
    ----------
    requests : list of RecordedRequest
        Every ``POST /v1/messages``, in arrival order, including rejected ones.
    problems : list of str
        What the fake found wrong with requests (``"request N: ..."``); tests assert
        it is empty.

    Examples
    --------
    >>> with FakeAnthropic([Turn(text="Hello")]) as fake:  # doctest: +SKIP
    ...     client = anthropic.Anthropic(base_url=fake.base_url, api_key=fake.api_key)
    ...     client.messages.create(model="m", max_tokens=9, messages=[...])
    """

    def __init__(
        self,
        script: list[Turn | ErrorReply] | None = None,
        *,
        responder: Responder | None = None,
        api_key: str = "sk-ant-fake-key",
        model: str | None = None,
        context_window: int | None = 200_000,
        context_management: bool = True,
        min_cacheable_tokens: int = 1024,
        clock: Callable[[], float] = time.monotonic,
        models: list[str | tuple[str, str]] | None = DEFAULT_MODELS,
    ) -> None:
        if script is not None and responder is not None:
            raise ValueError("pass either a script or a responder, not both")
        self.api_key = api_key
        self.model = model
        self.context_window = context_window
        self.context_management = context_management
        self.cache = PromptCache(min_cacheable_tokens=min_cacheable_tokens, clock=clock)
        self.models = None if models is None else list(models)
        self.model_list_requests = 0
        self.requests: list[RecordedRequest] = []
        self.problems: list[str] = []
        self._script: deque[Turn | ErrorReply] = deque(script or [])
        self._responder = responder
        self._cond = threading.Condition()
        self._release_generation = 0
        self._held = 0  # streams waiting in _stall right now
        self._stopping = threading.Event()
        self._live: dict[threading.Thread, socket.socket] = {}
        self._server: Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>``; only while started."""
        if self._server is None:
            raise RuntimeError("FakeAnthropic is not running")
        return f"http://127.0.0.1:{self._server.port}"

    def start(self) -> Self:
        """Bind a free port on 127.0.0.1 and serve on a daemon thread."""
        if self._server is not None or self._stopping.is_set():
            raise RuntimeError("FakeAnthropic can be started only once")
        self._server = Server(self)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": _POLL},
            name=f"FakeAnthropic:{self._server.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, cut open connections (stalled ones too) and join the threads.

        Idempotent; returns within about 1.5 s even if a handler is stuck.
        """
        server, self._server = self._server, None
        if server is None:
            return
        with self._cond:
            self._stopping.set()
            self._cond.notify_all()
        server.shutdown()
        with self._cond:
            live = list(self._live.items())
        for _, conn in live:
            _shut(conn)  # wakes handlers blocked reading a kept-alive connection
        deadline = time.monotonic() + _STOP_TIMEOUT
        for thread, _ in live:
            thread.join(max(0.0, deadline - time.monotonic()))
        server.server_close()
        if self._thread is not None:
            self._thread.join(max(0.0, deadline - time.monotonic()))

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        return self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        # Off the loop, so clients on this loop can still close their sockets meanwhile.
        await asyncio.to_thread(self.stop)

    # -- script control --------------------------------------------------------------

    def reset(self) -> None:
        """Forget the script, the requests and the problems, as a new fake would, keeping the
        port: a server shared by a module's tests (tests/server/shared_server.py) keeps the
        address it was started with."""
        with self._cond:
            self._script.clear()
            self.requests = []
            self.problems = []
            self.model_list_requests = 0
            self.cache = PromptCache(
                min_cacheable_tokens=self.cache.min_cacheable_tokens, clock=self.cache.clock
            )
            self._release_generation += 1  # frees a stall a test before left behind
            self._cond.notify_all()

    def add(self, *turns: Turn | ErrorReply) -> None:
        """Append answers to the script; safe while requests are being served."""
        if self._responder is not None:
            raise RuntimeError("this FakeAnthropic uses a responder, not a script")
        with self._cond:
            self._script.extend(turns)

    def release(self) -> None:
        """Let every stream already begun (stalled, or on its way to its stall) finish."""
        with self._cond:
            self._release_generation += 1
            self._cond.notify_all()

    def wait_until_held(self, count: int = 1, timeout: float = 30.0) -> None:
        """Block until ``count`` streams wait at their stall point.

        A request may reach the fake well after the event a test watched for (the agent
        imports the SDK at its first request), and a release before the request began frees
        nothing; a test that must release a particular stall waits for it here first.
        """
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._held < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(
                        f"fake model: {self._held} of {count} streams held after {timeout:g} s"
                    )
                self._cond.wait(min(left, _POLL))

    # -- the App side of _http.Server (runs on server threads) -----------------------

    def track(self, handler: Handler) -> None:
        with self._cond:
            self._live[threading.current_thread()] = handler.connection
            if self._stopping.is_set():  # accepted just as stop() took its snapshot
                _shut(handler.connection)

    def untrack(self) -> None:
        with self._cond:
            self._live.pop(threading.current_thread(), None)

    def serve(self, handler: Handler) -> None:
        """Answer one request; a crash in the fake becomes a problem, not a stray traceback."""
        try:
            self._serve(handler)
        except Exception as e:  # noqa: BLE001 - reported through problems
            self._problem(f"fake failed on {handler.command} {handler.path}: {e!r}")
            handler.close_connection = True

    def _serve(self, handler: Handler) -> None:
        """The numbered steps in the module docstring."""
        headers = handler.lower_headers
        raw = handler.read_body()
        route = urlsplit(handler.path).path
        if handler.command == "GET" and (route == "/v1/models" or route.startswith("/v1/models/")):
            self._models(handler, route, headers)
            return
        if handler.command != "POST" or route != "/v1/messages":
            self._problem(f"unexpected request {handler.command} {handler.path}")
            self._send_error(handler, ErrorReply(404, "not_found_error", f"Not found: {route}"))
            return
        try:
            body: object = json.loads(raw)
        except ValueError:
            body = None
        if not isinstance(
            body, dict
        ):  # say what arrived, so a rare malformed request can be traced
            self._problem(
                f"a body that is not a JSON object: {len(raw)} bytes read, "
                f"content-length {headers.get('content-length')!r}, "
                f"transfer-encoding {headers.get('transfer-encoding')!r}, "
                f"content-type {headers.get('content-type')!r}, starts {raw[:120]!r}"
            )
        record = RecordedRequest(
            body=body if isinstance(body, dict) else {}, headers=headers, path=handler.path
        )
        with self._cond:
            self.requests.append(record)
            number = len(self.requests)
            # A stream has begun once a test can see its request: a release from then on frees it.
            generation = self._release_generation
        if _presented_key(headers) != self.api_key:
            record.status = 401
            self._send_error(handler, ErrorReply(401, "authentication_error", "invalid x-api-key"))
            return
        problems = validate_request(body, headers)
        if problems:
            for text in problems:
                self._problem(f"request {number}: {text}")
            record.status = 400
            self._send_error(handler, ErrorReply(400, "invalid_request_error", "; ".join(problems)))
            return
        refusal = self._account(record, headers, number)
        if refusal is not None:
            record.status = refusal.status
            self._send_error(handler, refusal)
            return
        reply = self._choose(record, number)
        if isinstance(reply, ErrorReply):
            record.status = reply.status
            self._send_error(handler, reply)
            return
        usage = record.usage
        rendered = build_reply(
            reply,
            model=self.model or str(record.body["model"]),
            prompt=None
            if usage is None
            else {
                "input_tokens": usage.input_tokens,
                "cache_creation_input_tokens": usage.cache_creation_input_tokens,
                "cache_read_input_tokens": usage.cache_read_input_tokens,
            },
            context_management=None
            if record.applied_edits is None
            else {"applied_edits": record.applied_edits},
        )
        record.message = rendered.message
        record.status = 200
        try:
            if record.body.get("stream") is True:
                self._send_stream(handler, reply, rendered, record, generation)
            else:
                self._wait(reply.delay)
                handler.send_json(200, rendered.message, {})
        except Aborted:
            handler.close_connection = True

    # -- helpers ---------------------------------------------------------------------

    def _models(self, handler: Handler, route: str, headers: dict[str, str]) -> None:
        """``GET /v1/models[/{id}]`` (the Models API): the fake's ``models``, newest first,
        paged by ``limit``/``after_id`` as the service does; 404 when the fake plays a
        compatible server without it (``models=None``)."""
        with self._cond:
            self.model_list_requests += 1
        if _presented_key(headers) != self.api_key:
            self._send_error(handler, ErrorReply(401, "authentication_error", "invalid x-api-key"))
            return
        if self.models is None:
            self._send_error(handler, ErrorReply(404, "not_found_error", f"Not found: {route}"))
            return
        listed = [_model_info(i, m) for i, m in enumerate(self.models)]
        if route != "/v1/models":
            wanted = route.removeprefix("/v1/models/")
            found = next((m for m in listed if m["id"] == wanted), None)
            if found is None:
                self._send_error(handler, ErrorReply(404, "not_found_error", f"model: {wanted}"))
            else:
                handler.send_json(200, found, {})
            return
        query = parse_qs(urlsplit(handler.path).query)
        try:
            limit = min(1000, max(1, int(query.get("limit", ["20"])[0])))
        except ValueError:
            self._send_error(
                handler, ErrorReply(400, "invalid_request_error", "limit: must be an integer")
            )
            return
        after = query.get("after_id", [None])[0]
        start = next((i + 1 for i, m in enumerate(listed) if m["id"] == after), 0) if after else 0
        page = listed[start : start + limit]
        handler.send_json(
            200,
            {
                "data": page,
                "has_more": start + limit < len(listed),
                "first_id": page[0]["id"] if page else None,
                "last_id": page[-1]["id"] if page else None,
            },
            {},
        )

    def _account(
        self, record: RecordedRequest, headers: dict[str, str], number: int
    ) -> ErrorReply | None:
        """Step 4: context editing, the context window and the prompt cache."""
        body = record.body
        if "context_management" in body:
            if not self.context_management:
                return ErrorReply(
                    400,
                    "invalid_request_error",
                    "context_management: Extra inputs are not permitted",
                )
            if CONTEXT_MANAGEMENT_BETA not in headers.get("anthropic-beta", ""):
                text = f"context_management: requires the anthropic-beta header {CONTEXT_MANAGEMENT_BETA}"
                self._problem(f"request {number}: {text}")
                return ErrorReply(400, "invalid_request_error", text)
            try:
                body, record.applied_edits = apply_context_management(body)
            except ContextEditError as error:
                self._problem(f"request {number}: {error}")
                return ErrorReply(400, "invalid_request_error", str(error))
        units = prompt_units(body)
        record.prompt_tokens = sum(unit.tokens for unit in units)
        if self.context_window is not None and record.prompt_tokens > self.context_window:
            return ErrorReply(
                400,
                "invalid_request_error",
                f"prompt is too long: {record.prompt_tokens} tokens > {self.context_window} maximum",
            )
        record.usage = self.cache.account(str(body.get("model")), units)
        return None

    def _problem(self, text: str) -> None:
        with self._cond:
            self.problems.append(text)

    def _send_error(self, handler: Handler, reply: ErrorReply) -> None:
        body, headers = error_response(reply)
        handler.send_json(reply.status, body, headers)

    def _choose(self, record: RecordedRequest, number: int) -> Turn | ErrorReply:
        if self._responder is not None:
            try:
                reply = self._responder(record)
            except Exception as e:  # noqa: BLE001 - a bug in the test's responder, reported
                self._problem(f"request {number}: responder raised {e!r}")
                return _no_retry_error(f"fake responder raised {e!r}")
            if not isinstance(reply, (Turn, ErrorReply)):
                self._problem(f"request {number}: responder returned {reply!r}")
                return _no_retry_error("fake responder returned neither Turn nor ErrorReply")
            record.reply = reply
            return reply
        with self._cond:
            scripted = self._script.popleft() if self._script else None
        if scripted is None:
            text = f"fake script exhausted: no turn scripted for request {number}"
            self._problem(text)
            return ErrorReply(400, "invalid_request_error", text)
        record.reply = scripted
        return scripted

    def _send_stream(
        self,
        handler: Handler,
        turn: Turn,
        rendered: Rendered,
        record: RecordedRequest,
        generation: int,
    ) -> None:
        self._wait(turn.delay)
        try:
            handler.start_stream()
            for i, (name, data) in enumerate(rendered.events):
                if i == rendered.stall_index:
                    self._stall(handler, record, generation)
                if i:
                    self._wait(turn.chunk_delay)
                handler.write_chunk(encode_sse(name, data))
            handler.end_stream()
        except Aborted:
            if not self._stopping.is_set():
                record.disconnected = True
            raise

    def _wait(self, seconds: float) -> None:
        """Sleep, but give up at once if the server stops."""
        if seconds > 0 and self._stopping.wait(seconds):
            raise Aborted

    def _stall(self, handler: Handler, record: RecordedRequest, generation: int) -> None:
        """Hold a stream until a ``release()`` after it began; raise if the client leaves or we stop."""
        with self._cond:
            self._held += 1
            self._cond.notify_all()
        try:
            while True:
                with self._cond:
                    if self._release_generation != generation:
                        return
                    if self._stopping.is_set():
                        raise Aborted
                    self._cond.wait(_POLL)
                if handler.peer_closed():
                    record.disconnected = True
                    raise Aborted
        finally:
            with self._cond:
                self._held -= 1


def _model_info(index: int, model: str | tuple[str, str]) -> dict[str, Any]:
    """One ``ModelInfo`` object; creation dates step back a day per place in the list."""
    model_id, name = model if isinstance(model, tuple) else (model, model)
    day = 28 - min(index, 27)
    return {
        "type": "model",
        "id": model_id,
        "display_name": name,
        "created_at": f"2025-09-{day:02d}T00:00:00Z",
    }


def _presented_key(headers: dict[str, str]) -> str | None:
    """The key a request carries: ``x-api-key``, else an ``authorization: Bearer`` token.

    The SDK sends ``api_key`` as a Bearer token (``_client.py``, ``_api_key_auth``);
    older SDKs and curl examples send ``x-api-key``. The service accepts both.
    """
    if "x-api-key" in headers:
        return headers["x-api-key"]
    scheme, _, token = headers.get("authorization", "").partition(" ")
    return token if scheme.lower() == "bearer" else None


def _shut(conn: socket.socket) -> None:
    try:
        conn.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # already closed by its handler


def _no_retry_error(message: str) -> ErrorReply:
    # A 400 rather than a 500, so the SDK does not retry and call a broken responder again.
    return ErrorReply(400, "invalid_request_error", message)
