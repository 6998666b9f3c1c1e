"""A stdio MCP bridge to a running Jupyter server's ``aaep/v1/mcp`` endpoint.

For MCP clients that only start stdio servers: it reads JSON-RPC messages, one per line, from
stdin, posts each to the endpoint with the Jupyter token (as Streamable HTTP), and writes every
message of the answer (a JSON body, or each event of an SSE stream: progress, then the result)
to stdout, one per line. Requests run concurrently, so a call that waits for a person's approval
does not hold up a ping or a cancellation. At end of input it closes the MCP session (DELETE),
which ends the outside agent's session in the notebook's chat.

The server is found like ``jupyter server list`` does (the one serving the current folder, else
the first), or given with ``--url``. It signs in with an outside agent's credential from
``AAEP_MCP_CREDENTIAL`` when that is set (recommended: it opens the notebook tools and nothing
else, see docs/security.md), else with ``JUPYTER_TOKEN`` or the found server's token.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import threading
from collections.abc import Iterable
from typing import Any
from urllib.parse import urljoin

import httpx

__all__ = ["Bridge", "find_server", "main"]

ENDPOINT = "aaep/v1/mcp"
CREDENTIAL_ENV = "AAEP_MCP_CREDENTIAL"


def find_server(servers: Iterable[dict[str, Any]], cwd: str) -> dict[str, Any] | None:
    """The running server whose root holds *cwd* (the deepest such root), else the first one."""
    listed = list(servers)
    inside = [s for s in listed if s.get("root_dir") and _contains(str(s["root_dir"]), cwd)]
    if inside:
        return max(inside, key=lambda s: len(str(s["root_dir"])))
    return listed[0] if listed else None


def _contains(root: str, path: str) -> bool:
    root, path = os.path.realpath(root), os.path.realpath(path)
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


class Bridge:
    """Forwards JSON-RPC lines between stdio and the endpoint at *url*."""

    def __init__(
        self, url: str, token: str | None, *, credential: str | None = None, out: Any = None
    ) -> None:
        self.url = url
        self.headers = {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
        }
        if credential:
            self.headers["Authorization"] = f"Bearer {credential}"
        elif token:
            self.headers["Authorization"] = f"token {token}"
        self.refusal = REFUSED_CREDENTIAL if credential else REFUSED
        self.out = out or sys.stdout
        self.session_id: str | None = None
        self.protocol: str | None = None
        self._initialized = asyncio.Event()
        self._stop = asyncio.Event()
        self.refused = False
        """The server refused the token: the bridge ends with a non-zero exit."""
        self._client = httpx.AsyncClient(timeout=httpx.Timeout(30.0, read=None))

    def write(self, message: Any) -> None:
        self.out.write(json.dumps(message, separators=(",", ":")) + "\n")
        self.out.flush()

    async def check(self) -> str | None:
        """Before serving: a sentence saying why the server cannot be used (unreachable, or it
        refuses the token), or ``None``. A GET without a session is refused by Jupyter's login
        (401/403) before the MCP endpoint answers it (400)."""
        try:
            response = await self._client.get(
                self.url, headers={**self.headers, "Accept": "text/event-stream"}
            )
        except httpx.HTTPError as error:
            return f"The bridge cannot reach the Jupyter server at {self.url} ({type(error).__name__}). Is it running?"
        if response.status_code in (401, 403):
            self.refused = True
            return self.refusal
        if response.status_code == 404:
            return (
                f"There is no MCP endpoint at {self.url}: the server does not run jupyter-aaep, or "
                "c.AAEPExtension.mcp_server is False."
            )
        return None

    async def run(self, lines: asyncio.Queue[str | None]) -> None:
        tasks: set[asyncio.Task[None]] = set()
        stop = asyncio.ensure_future(self._stop.wait())
        try:
            while True:
                getting = asyncio.ensure_future(lines.get())
                await asyncio.wait([getting, stop], return_when=asyncio.FIRST_COMPLETED)
                if not getting.done():
                    getting.cancel()
                    break
                line = getting.result()
                if line is None:
                    break
                if not line.strip():
                    continue
                try:
                    message = json.loads(line)
                except ValueError:
                    self.write(
                        _rpc_error(None, -32700, "The bridge received a line that is not JSON.")
                    )
                    continue
                if isinstance(message, dict) and message.get("method") == "initialize":
                    await self.forward(message)  # the session id must be known before anything else
                    self._initialized.set()
                    continue
                task = asyncio.ensure_future(self.forward(message))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
            if tasks and not self._stop.is_set():
                await asyncio.wait(tasks)
        finally:
            stop.cancel()
            for task in tasks:
                task.cancel()
            await self.close()

    async def forward(self, message: Any) -> None:
        headers = dict(self.headers)
        if self.session_id:
            headers["mcp-session-id"] = self.session_id
        if self.protocol:
            headers["mcp-protocol-version"] = self.protocol
        request_id = message.get("id") if isinstance(message, dict) else None
        try:
            async with self._client.stream(
                "POST", self.url, json=message, headers=headers
            ) as response:
                if response.status_code in (401, 403):
                    self.refused = True
                    self._error(request_id, self.refusal)
                    self._stop.set()
                    return
                session = response.headers.get("mcp-session-id")
                if session:
                    self.session_id = session
                kind = response.headers.get("content-type", "")
                if "text/event-stream" in kind:
                    await self._relay_events(response)
                elif response.status_code != 202:
                    body = await response.aread()
                    self._relay_json(body, request_id, response.status_code)
        except httpx.HTTPError as error:
            self._error(
                request_id,
                f"The bridge cannot reach the Jupyter server at {self.url} ({type(error).__name__}).",
            )

    async def _relay_events(self, response: httpx.Response) -> None:
        data: list[str] = []
        async for line in response.aiter_lines():
            if line.startswith("data:"):
                data.append(line[5:].lstrip())
            elif not line and data:
                self._emit_text("\n".join(data))
                data = []
        if data:
            self._emit_text("\n".join(data))

    def _relay_json(self, body: bytes, request_id: Any, status: int) -> None:
        try:
            message = json.loads(body)
        except ValueError:
            self._error(
                request_id, f"The Jupyter server answered HTTP {status} without a JSON body."
            )
            return
        self._note(message)
        if isinstance(message, dict) and "jsonrpc" not in message and request_id is not None:
            text = message.get("message") or f"The Jupyter server answered HTTP {status}."
            self._error(request_id, str(text))
            return
        self.write(message)

    def _emit_text(self, text: str) -> None:
        try:
            message = json.loads(text)
        except ValueError:
            return
        self._note(message)
        self.write(message)

    def _note(self, message: Any) -> None:
        """Remember the protocol version the server chose, for the header of later requests."""
        if isinstance(message, dict) and isinstance(message.get("result"), dict):
            version = message["result"].get("protocolVersion")
            if isinstance(version, str):
                self.protocol = version

    def _error(self, request_id: Any, text: str) -> None:
        if request_id is not None:
            self.write(_rpc_error(request_id, -32000, text))
        else:
            print(f"jupyter_aaep.mcp: {text}", file=sys.stderr)

    async def close(self) -> None:
        if self.session_id:
            headers = {**self.headers, "mcp-session-id": self.session_id}
            try:
                await self._client.delete(self.url, headers=headers)
            except httpx.HTTPError:
                pass
        await self._client.aclose()


REFUSED = (
    "The Jupyter server refused the bridge's token. Set JUPYTER_TOKEN to the server's token "
    "(jupyter server list shows it), then start the bridge again."
)
REFUSED_CREDENTIAL = (
    f"The Jupyter server refused the outside-agent credential in {CREDENTIAL_ENV}: it was revoked "
    "or mistyped. Make a new one in JupyterLab (Connect an outside agent, in the agent panel), "
    "then start the bridge again."
)


def _rpc_error(request_id: Any, code: int, text: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": text}}


def _read_stdin(lines: asyncio.Queue[str | None]) -> None:
    """Lines of stdin into *lines* from a daemon thread (a blocked read never holds up the exit),
    then ``None`` at end of input."""
    loop = asyncio.get_running_loop()

    def read() -> None:
        for line in sys.stdin:
            loop.call_soon_threadsafe(lines.put_nowait, line)
        loop.call_soon_threadsafe(lines.put_nowait, None)

    threading.Thread(target=read, name="mcp-bridge-stdin", daemon=True).start()


def _resolve(args: argparse.Namespace) -> tuple[str, str | None]:
    """The endpoint's URL and the Jupyter token (``None`` when a credential signs in instead)."""
    credential = os.environ.get(CREDENTIAL_ENV)
    token = None if credential else os.environ.get("JUPYTER_TOKEN")
    if args.url:
        base = args.url if args.url.endswith("/") else args.url + "/"
        return (base if base.rstrip("/").endswith(ENDPOINT) else urljoin(base, ENDPOINT)), token
    from jupyter_server.serverapp import list_running_servers

    server = find_server(list_running_servers(), os.getcwd())
    if server is None:
        raise SystemExit(
            "jupyter_aaep.mcp: no running Jupyter server was found. Start JupyterLab first, or pass "
            "--url http://127.0.0.1:8888/ and set JUPYTER_TOKEN."
        )
    if credential:
        return urljoin(str(server["url"]), ENDPOINT), None
    return urljoin(str(server["url"]), ENDPOINT), token or server.get("token") or None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m jupyter_aaep.mcp",
        description="Let a stdio MCP client (Claude Code, Codex, …) work on the notebooks of a running Jupyter "
        "server; every step is announced in the notebook's chat and waits for approval there.",
    )
    parser.add_argument(
        "--url",
        help="The Jupyter server's URL (with its base URL), e.g. http://127.0.0.1:8888/. "
        f"It signs in with the outside-agent credential in {CREDENTIAL_ENV} (made in the agent panel: "
        "Connect an outside agent), else with JUPYTER_TOKEN. Without --url, the running server is found.",
    )
    args = parser.parse_args(argv)
    url, token = _resolve(args)

    async def serve() -> int:
        bridge = Bridge(url, token, credential=os.environ.get(CREDENTIAL_ENV) or None)
        problem = await bridge.check()
        if problem:
            await bridge.close()
            print(f"jupyter_aaep.mcp: {problem}", file=sys.stderr)
            return 1
        lines: asyncio.Queue[str | None] = asyncio.Queue()
        _read_stdin(lines)
        await bridge.run(lines)
        if bridge.refused:
            print(f"jupyter_aaep.mcp: {bridge.refusal}", file=sys.stderr)
            return 1
        return 0

    code = asyncio.run(serve())
    if code:
        raise SystemExit(code)
