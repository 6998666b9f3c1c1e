"""Fuzzing the MCP endpoint (issue 18): no input gets a 5xx, every error is a sentence a client's
model can act on, the notebooks are unchanged and the server keeps serving.

Inputs come from ``hypothesis`` with ``derandomize=True`` (the same inputs on every run), drawn
first and then sent to one server over raw HTTP, as a misbehaving client would send them:

- malformed JSON-RPC: not JSON, invalid UTF-8, the wrong ``jsonrpc`` version, no ``method`` or
  ``id``, batches, huge ids, deep nesting, unknown methods;
- tool calls: unknown tools, every tool's every argument given a value of the wrong JSON type,
  required arguments missing, huge arguments (MB strings);
- ``notebook_path`` outside the root: ``../``, absolute, URL-encoded, NUL bytes, lone
  surrogates, and links in the root that lead out of it;
- unauthenticated requests: no token, a wrong token (401/403, nothing runs).

A person on the notebook's AAEP stream rejects anything that asks for approval, so a call that
slipped through validation cannot run code; the notebooks' cells are compared at the end.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import strategies as st
from kernel_helpers import _private_cwd, new_name, write_notebook  # noqa: F401
from mcp_helpers import is_type, live_server_config, mcp_client, mcp_url, off_loop, reply, text_of
from server_helpers import panel_key
from test_server_fuzz import JSON_VALUES, SURROGATE_TEXT, draw_all

pytestmark = pytest.mark.slow

ACCEPT = "application/json, text/event-stream"
EXAMPLES = 120
"""Drawn per family (JSON-RPC junk, wrong-typed arguments)."""


@pytest.fixture
def jp_server_config(
    fake_model: Any, jp_root_dir: Any, monkeypatch: pytest.MonkeyPatch
) -> dict[str, Any]:
    return live_server_config(fake_model, jp_root_dir, monkeypatch, mcp_idle_seconds=1.0)


@pytest.fixture
def jp_base_url() -> str:
    """A JupyterHub user's server's base URL for a user named "a@b" (the hub escapes the name):
    the MCP endpoint and its errors are the same under ``/user/<name>/`` (issue 21)."""
    return "/user/a%40b/"


class RawClient:
    """JSON-RPC over Streamable HTTP by hand: one MCP session, any bytes in a POST."""

    def __init__(self, http: httpx.AsyncClient, url: str, headers: dict[str, str]) -> None:
        self.http, self.url = http, url
        self.headers = {"Accept": ACCEPT, "Content-Type": "application/json", **headers}
        self.session_id = ""
        self.ids = 0

    async def open(self) -> None:
        status, messages, headers = await self.post(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "fuzzer", "version": "1"},
                },
            }
        )
        assert status == 200, messages
        self.session_id = headers["mcp-session-id"]
        await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    async def post(
        self, message: Any, *, raw: bytes | None = None, headers: dict[str, str] | None = None
    ) -> tuple[int, list[Any], httpx.Headers]:
        """Status, the JSON-RPC messages of the answer (JSON body or SSE events), headers."""
        sent = {**self.headers, **(headers or {})}
        if self.session_id:
            sent["mcp-session-id"] = self.session_id
        body = raw if raw is not None else json.dumps(message).encode("utf-8", "surrogatepass")
        response = await self.http.post(self.url, content=body, headers=sent)
        kind = response.headers.get("content-type", "")
        messages: list[Any] = []
        if "text/event-stream" in kind:
            for line in re.split(r"\r\n|\n|\r", response.text):  # SSE's line ends only
                if line.startswith("data:") and line[5:].strip():
                    messages.append(json.loads(line[5:]))
        elif response.content:
            try:
                messages.append(response.json())
            except ValueError:
                messages.append({"not_json": response.text[:300]})
        return response.status_code, messages, response.headers

    async def call(self, name: Any, arguments: Any) -> tuple[int, list[Any]]:
        self.ids += 1
        message = {
            "jsonrpc": "2.0",
            "id": self.ids,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
        status, messages, _ = await self.post(message)
        return status, messages


def is_sentence(text: Any) -> bool:
    """Words a model can act on: a capitalised statement that ends like one, not a traceback."""
    return (
        isinstance(text, str)
        and len(text.split()) >= 3
        and text[:1].isupper()
        and text.rstrip().endswith((".", ")", "?"))
        and "Traceback" not in text
        and "pydantic" not in text.lower()
    )


def error_text(messages: list[Any]) -> str | None:
    """The sentence of a JSON-RPC error or an ``isError`` tool result, if the answer is one."""
    for message in messages:
        if not isinstance(message, dict):
            continue
        if isinstance(message.get("error"), dict):
            return str(message["error"].get("message"))
        result = message.get("result")
        if isinstance(result, dict) and result.get("isError"):
            return " ".join(str(b.get("text", "")) for b in result.get("content", []))
        if "message" in message and "jsonrpc" not in message:  # Jupyter's own JSON error body
            return str(message["message"])
    return None


def _nest(depth: int, inner: str) -> str:
    return "[" * depth + inner + "]" * depth


def _request(**fields: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 7, "method": "tools/list", **fields}


RPC_JUNK = st.one_of(
    st.binary(max_size=40).map(lambda b: ("bytes", b)),
    st.text(max_size=40).map(lambda t: ("text", t.encode("utf-8", "surrogatepass"))),
    JSON_VALUES.filter(lambda v: not isinstance(v, (dict, list))).map(lambda v: ("json", v)),
    st.sampled_from(["1.0", "3.0", 2, 2.0, None, ""]).map(lambda v: ("json", _request(jsonrpc=v))),
    st.just(("json", {"jsonrpc": "2.0", "id": 7})),  # no method
    st.just(("json", {"jsonrpc": "2.0", "method": "tools/list", "id": None})),
    JSON_VALUES.filter(lambda v: not isinstance(v, str)).map(
        lambda v: ("json", _request(method=v))
    ),
    st.one_of(
        st.integers(min_value=2**63, max_value=10**400),
        st.integers(max_value=-(2**63)),
        st.floats(allow_nan=False),
        st.text(min_size=1000, max_size=5000),
        st.dictionaries(st.text(max_size=4), JSON_VALUES, max_size=3),
        st.lists(JSON_VALUES, max_size=3),
        st.booleans(),
    ).map(lambda v: ("json", _request(id=v))),
    st.lists(st.one_of(st.just(_request()), JSON_VALUES), min_size=0, max_size=4).map(
        lambda batch: ("json", batch)
    ),
    st.from_regex(r"[a-z]{1,12}/[a-zA-Z_]{1,20}", fullmatch=True).map(
        lambda m: ("json", _request(method=m))
    ),
    st.sampled_from(
        ["resources/list", "prompts/get", "sampling/createMessage", "tools/destroy", "initialize"]
    ).map(lambda m: ("json", _request(method=m, params={}))),
    JSON_VALUES.filter(lambda v: not isinstance(v, dict)).map(
        lambda v: ("json", _request(method="tools/call", params=v))
    ),
    st.integers(33, 3000).map(lambda n: ("raw", _nest(n, "1").encode())),
    st.integers(17, 1500).map(
        lambda n: (
            "raw",
            (
                '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":'
                + '{"a":' * n
                + "1"
                + "}" * (n + 1)
            ).encode(),
        )
    ),
)


@st.composite
def wrong_arguments(draw: Any, tools: dict[str, dict[str, Any]], path: str) -> tuple[str, Any, str]:
    """(tool, arguments, what): a valid-looking call with one argument of the wrong JSON type,
    one required argument missing, or arguments that are not an object."""
    name = draw(st.sampled_from(sorted(tools)))
    schema = tools[name]
    properties: dict[str, Any] = schema.get("properties", {})
    base = {"notebook_path": path}
    for required in schema.get("required", []):
        if required != "notebook_path":
            base[required] = _valid_value(properties.get(required, {}))
    how = draw(st.sampled_from(["wrong type", "missing", "not an object", "unknown argument"]))
    if how == "wrong type" and properties:
        field = draw(st.sampled_from(sorted(properties)))
        allowed = json_types_of_schema(properties[field])
        value = draw(
            JSON_VALUES.filter(lambda v: v is not None and type(v).__name__ not in allowed)
        )
        return name, {**base, field: value}, f"{field} = {value!r:.80}"
    if how == "missing" and len(base) > 1:
        field = draw(st.sampled_from(sorted(k for k in base if k != "notebook_path")))
        return name, {k: v for k, v in base.items() if k != field}, f"no {field}"
    if how == "not an object":
        return (
            name,
            draw(JSON_VALUES.filter(lambda v: not isinstance(v, dict) and v is not None)),
            how,
        )
    return name, {**base, "format_disk": True}, "unknown argument"


_PYTHON_TYPES = {
    "string": {"str"},
    "integer": {"int"},
    "number": {"int", "float"},
    "boolean": {"bool"},
    "array": {"list"},
    "object": {"dict"},
}


def json_types_of_schema(schema: dict[str, Any]) -> set[str]:
    """The Python type names a JSON schema accepts (all of them when it does not say)."""
    if "anyOf" in schema:
        return set().union(*(json_types_of_schema(option) for option in schema["anyOf"]))
    kinds = schema.get("type")
    if kinds is None:
        return set().union(*_PYTHON_TYPES.values())
    kinds = kinds if isinstance(kinds, list) else [kinds]
    return set().union(*(_PYTHON_TYPES.get(str(k), set()) for k in kinds))


def _valid_value(schema: dict[str, Any]) -> Any:
    kind = schema.get("type")
    kind = kind[0] if isinstance(kind, list) else kind
    return {"integer": 1, "number": 1.0, "boolean": False, "array": [], "object": {}}.get(
        str(kind), "c1"
    )


OUTSIDE_PATHS = [
    "../outside.ipynb",
    "../../etc/passwd.ipynb",
    "sub/../../outside.ipynb",
    "/etc/x.ipynb",
    "/outside.ipynb",
    "C:/Windows/x.ipynb",
    "..\\outside.ipynb",
    "%2e%2e/outside.ipynb",
    "%2e%2e%2foutside.ipynb",
    "..%2Foutside.ipynb",
    "inside.ipynb\0.txt",
    "\0",
    "in\0side.ipynb",
    "link-out.ipynb",
    "linked-folder/outside.ipynb",
    "./../outside.ipynb",
    "~/outside.ipynb",
    "file:///etc/x.ipynb",
    "",
    " ",
    ".",
    "..",
    "inside.ipynb/..",
    "x" * 5000 + ".ipynb",
]


async def test_fuzzed_mcp_input_never_gets_a_5xx_and_every_error_is_a_sentence(
    jp_serverapp,
    jp_fetch,
    jp_http_port,
    jp_base_url,
    jp_auth_header,
    jp_root_dir,
    api,
    sse,
    extension,
    fake_model,
    capsys,
) -> None:
    url = mcp_url(jp_http_port, jp_base_url)
    root = Path(jp_root_dir)
    path = write_notebook(root, "inside.ipynb", ["x = 1", "print(x)"])
    write_notebook(root.parent, "outside.ipynb", ["secret = 'outside the root'"])
    os.symlink(root.parent / "outside.ipynb", root / "link-out.ipynb")
    os.symlink(root.parent, root / "linked-folder")
    before = _cells(root / path), _cells(root.parent / "outside.ipynb")
    status, created, _ = await api("chats", method="POST", body={"notebook_path": path})
    assert status == 201, created
    chat_id = created["chat_id"]

    failures: list[str] = []
    sent = server_errors = 0

    def expect(ok: bool, what: str, status: int) -> None:
        nonlocal sent, server_errors
        sent += 1
        server_errors += status >= 500
        if not ok or status >= 500:
            failures.append(what)

    async with sse(chat_id) as panel, httpx.AsyncClient(timeout=60) as http:
        key = await panel_key(api, panel, chat_id)  # a person in the panel, not a program
        person = asyncio.ensure_future(_reject_everything(panel, api, chat_id, key))
        client = RawClient(http, url, dict(jp_auth_header))
        await client.open()
        status, listed, _ = await client.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        tools = {t["name"]: t["inputSchema"] for t in listed[0]["result"]["tools"]}

        # 1. malformed JSON-RPC, in the open session
        junk = draw_all(RPC_JUNK, EXAMPLES)
        for kind, value in junk:
            raw = value if kind in ("bytes", "text", "raw") else None
            status, messages, _ = await client.post(value, raw=raw)
            said = error_text(messages)
            accepted = status == 202 and not messages  # a notification: nothing to answer
            answered = (
                status == 200
                and messages
                and all("result" in m for m in messages if isinstance(m, dict))
            )
            expect(
                status < 500 and (accepted or bool(answered) or is_sentence(said)),
                f"junk {kind} {str(value)[:150]!r}: {status} {said or messages}",
                status,
            )

        # 2. unknown tools and wrong arguments for every tool's schema
        for name in ["format_disk", "", "x" * 10_000, "get_notebook_state ", "../run_cell"]:
            status, messages = await client.call(name, {"notebook_path": path})
            said = error_text(messages)
            expect(
                status < 500 and is_sentence(said) and "There is no tool" in str(said),
                f"tool {name[:60]!r}: {status} {said}",
                status,
            )
        for name in (None, 42, ["run_cell"], {"a": 1}):
            status, messages = await client.call(name, {"notebook_path": path})
            expect(
                status < 500 and is_sentence(error_text(messages)),
                f"tool name {name!r}: {status} {messages}",
                status,
            )
        calls = draw_all(wrong_arguments(tools, path), EXAMPLES)
        covered = {(name, what.split(" = ")[0]) for name, _, what in calls}
        for name, arguments, what in calls:
            status, messages = await client.call(name, arguments)
            said = error_text(messages)
            expect(
                status < 500 and is_sentence(said),
                f"{name} with {what}: {status} {said or messages}",
                status,
            )

        # 3. huge arguments
        for name, arguments in [
            ("create_cell", {"notebook_path": path, "source": "a" * (2 << 20)}),
            ("edit_cell", {"notebook_path": path, "cell_id": "c1", "source": "é" * (1 << 20)}),
            ("get_notebook_state", {"notebook_path": "d/" * 300_000 + "x.ipynb"}),
            ("read_file", {"notebook_path": path, "path": "p" * (3 << 20)}),
        ]:
            status, messages = await client.call(name, arguments)
            said = error_text(messages)
            expect(
                status < 500 and is_sentence(said),
                f"huge {name}: {status} {str(said)[:200]}",
                status,
            )

        # 4. notebook_path outside the root, for a read and for an edit
        for outside in [*OUTSIDE_PATHS, *draw_all(SURROGATE_TEXT, 10)]:
            for name, extra in (
                ("get_notebook_state", {}),
                ("create_cell", {"source": "pwned = 1"}),
            ):
                status, messages = await client.call(name, {"notebook_path": outside, **extra})
                said = error_text(messages)
                expect(
                    status < 500 and is_sentence(said) and "secret" not in json.dumps(messages),
                    f"{name} at {outside[:80]!r}: {status} {said or messages}",
                    status,
                )

        # 5. unauthenticated: no token, a wrong token, on every method; nothing answers but 401/403
        #    (a client of its own: the fuzzing client holds the login cookie Jupyter gave its token)
        call = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "create_cell", "arguments": {"notebook_path": path, "source": "x"}},
        }
        async with httpx.AsyncClient(timeout=10) as stranger:
            for headers in (
                {},
                {"Authorization": "token wrong"},
                {"Authorization": "Bearer wrong"},
            ):
                for method in ("POST", "GET", "DELETE"):
                    try:
                        response = await stranger.request(
                            method,
                            url,
                            content=json.dumps(call) if method == "POST" else None,
                            headers={
                                "Accept": ACCEPT,
                                "Content-Type": "application/json",
                                "mcp-session-id": client.session_id,
                                **headers,
                            },
                        )
                        status = response.status_code
                    except httpx.TimeoutException:
                        status = 0  # a stream opened for a stranger
                    stranger.cookies.clear()
                    expect(status in (401, 403), f"{method} {headers}: {status}", status)

        # the server keeps serving: the same raw session, then the SDK's own client
        status, messages = await client.call("get_notebook_state", {"notebook_path": path})
        expect(
            status == 200 and "print(x)" in json.dumps(messages),
            f"after fuzzing: {status} {messages}",
            status,
        )

        await http.delete(url, headers={**client.headers, "mcp-session-id": client.session_id})
        await _until_idle(extension)  # the fuzzer left; its session in the chat has ended

        async def agent() -> str:
            async with mcp_client(url, dict(jp_auth_header)) as sdk:
                return text_of(await sdk.call_tool("get_notebook_state", {"notebook_path": path}))

        said = await off_loop(agent)
        expect("print(x)" in said, f"the SDK's client after fuzzing: {said}", 200)
        person.cancel()
    await _until_idle(extension)
    assert (_cells(root / path), _cells(root.parent / "outside.ipynb")) == before, (
        "a notebook changed"
    )
    assert fake_model.requests == []
    with capsys.disabled():
        print(
            f"\nMCP fuzz: {sent} inputs sent ({len(junk)} malformed JSON-RPC, {len(calls)} wrong-argument "
            f"calls over {len({n for n, _ in covered})} tools and {len(covered)} tool/argument pairs, "
            f"{len(OUTSIDE_PATHS) + 10} outside paths x 2 tools), {server_errors} answered 5xx, "
            f"{len(failures)} unexpected answers"
        )
    assert server_errors == 0 and not failures, "\n".join(
        f.splitlines()[0][:300] for f in failures[:80]
    )


async def _reject_everything(panel: Any, api: Any, chat_id: str, key: str) -> None:
    """A person who rejects every approval request (so a call that slipped through runs nothing)."""
    seen = 0
    while True:
        events = await panel.until(is_type("awaiting.confirmation"), timeout=3600)
        for confirmation in events[seen:]:
            if is_type("awaiting.confirmation")(confirmation):
                await api(
                    "chats",
                    chat_id,
                    "messages",
                    method="POST",
                    body=reply(confirmation, "reject", key),
                )
        seen = len(events)


async def _until_idle(extension: Any) -> None:
    for _ in range(200):
        if not any(chat.running for chat in extension.runner.chats()):
            return
        await asyncio.sleep(0.05)


def _cells(notebook: Path) -> list[tuple[str, str, Any]]:
    cells = json.loads(notebook.read_text())["cells"]
    return [(c["cell_type"], "".join(c["source"]), c.get("outputs")) for c in cells]
