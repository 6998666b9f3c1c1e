"""Reading a flooded IOPub channel: what has arrived, in one go, with stream messages joined.

A tqdm bar at full speed sends tens of thousands of stream messages. Awaiting them one at a
time costs an asyncio poll and a future per message, and handing each to the shared cell and
the progress reader costs a document transaction and a parse per message; the kernel's
``status: idle`` then waits behind minutes of that. :class:`IopubBacklog` takes every message
already received without waiting (a plain view of the same ZMQ socket), and :func:`joined`
turns a run of consecutive stream messages into one, whose text is their concatenation:
what the cell shows in the end is the same.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import zmq

__all__ = ["IopubBacklog", "joined"]


class IopubBacklog:
    """The IOPub messages a kernel client has received and nobody has read yet."""

    limit = 5000
    """Messages taken in one go (then the event loop's other tasks get their turn)."""

    def __init__(self, client: Any) -> None:
        self._session = client.session
        self._socket: zmq.Socket[bytes] = zmq.Socket.shadow(client.iopub_channel.socket.underlying)

    def take(self) -> list[dict[str, Any]]:
        """The messages that have already arrived (signatures checked), without waiting."""
        taken: list[dict[str, Any]] = []
        while len(taken) < self.limit:
            try:
                frames = self._socket.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                break
            _, message = self._session.feed_identities(frames)
            taken.append(self._session.deserialize(message))
        return taken


def joined(messages: Iterable[dict[str, Any]], msg_id: str) -> Iterator[dict[str, Any]]:
    """*messages* in order, each run of consecutive stream messages of request *msg_id* on one
    stream joined into one."""
    texts: list[str] = []
    first: dict[str, Any] | None = None
    for msg in messages:
        content = msg.get("content", {})
        ours = msg.get("parent_header", {}).get("msg_id") == msg_id
        if msg.get("msg_type") == "stream" and ours:
            if first is not None and first["content"].get("name") == content.get("name"):
                texts.append(str(content.get("text", "")))
                continue
            if first is not None:
                yield _with_text(first, texts)
            first, texts = msg, [str(content.get("text", ""))]
            continue
        if first is not None:
            yield _with_text(first, texts)
            first, texts = None, []
        yield msg
    if first is not None:
        yield _with_text(first, texts)


def _with_text(msg: dict[str, Any], texts: list[str]) -> dict[str, Any]:
    if len(texts) == 1:
        return msg
    return {**msg, "content": {**msg["content"], "text": "".join(texts)}}
