"""The live view of ``%aaep``: an ipywidgets view of the agent's session, in the cell's output.

``LiveView(client, request_text, context=...)`` builds the widget; ``start()`` schedules one
asyncio task on the kernel's running event loop and returns at once, so the magic returns and
the kernel is free to run the cells the agent asks for (a kernel busy waiting for the agent,
while the agent waits for the kernel, would be a deadlock). In ipykernel 7 a cell's code runs on
the kernel's asyncio loop in the main thread, and that loop keeps running while the kernel is
idle: the task streams events and updates widgets then, and widget clicks (``comm_msg`` on the
shell channel) are handled on the same thread and loop, so callbacks and the task never race.

The task:

1. does the Level 3 handshake (``client.subscribe``: a ``subscription.request`` that can answer
   confirmations and clarifications);
2. opens the notebook chat's event stream with its own subscription id;
3. then sends the request (``client.start_request``), so no event of its session is missed, and
   follows only that session (the server's ``session_id``; the side panel's sessions in the same
   chat are ignored);
4. renders each event through the pure :class:`~._view_state.ViewState` (tested on its own);
5. answers with its own subscription id (``client.send`` in a worker thread: the client's calls
   block); when a request is answered elsewhere (the side panel), the producer's follow-up shows
   the outcome here and the buttons are disabled. The first valid reply wins (AAEP §6).

Approvals: by default (``kernel_replies`` off on the server) a confirmation card holds an
:class:`~._view_approval.ApprovalWidget`, whose Approve and Reject the labextension draws and
answers from the browser; the kernel never answers a confirmation then. With ``kernel_replies``
on, the card has its own ipywidgets buttons, answered through the kernel (step 5).

Accessibility: buttons are ipywidgets ``Button`` (a real ``<button>``: Tab reaches it, Enter
and Space press it) whose text is its accessible name and says what it does ("Approve running
cell 3"); the answer box is a labelled text field. Nothing here is a live region: the side panel
announces agent events, and the widget is read when the user goes to it.
"""

from __future__ import annotations

import asyncio
import html
import inspect
import logging
import re
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import ipywidgets as widgets  # type: ignore[import-untyped]

from ..aaep.clock import SessionClock
from ._view_approval import ApprovalWidget
from ._view_cards import RequestCard, set_html
from ._view_html import answer_html, header_html, notice_html, step_html
from ._view_items import (
    AnswerItem,
    NoticeItem,
    RequestItem,
    StepItem,
    clarification_reply,
    confirmation_reply,
    core_name,
)
from ._view_state import ViewState

__all__ = ["CAPABILITIES", "RECENT", "LiveView", "subscription_request"]

log = logging.getLogger(__name__)

CAPABILITIES: dict[str, Any] = {
    "supports_confirmation_reply": True,
    "supports_clarification_reply": True,
    "supported_conformance_levels": [1, 2, 3],
    "preferred_verbosity": "normal",
    "coalesce_boundaries": ["sentence", "completion"],
    # Streamed text arrives a sentence at a time; more updates per second only add comm traffic.
    "max_events_per_second": 20,
    "languages": ["en-US"],
}
STREAM_GRACE = 0.2
"""Seconds the event stream gets to connect before the request is sent (a session that runs
meanwhile is replayed from its start anyway; this covers one that would end before that)."""
TICK = 1.0
"""Seconds between countdown updates while a request waits for an answer."""
RECENT: deque[LiveView] = deque(maxlen=20)
"""The kernel's latest views, newest last (``RECENT[-1].describe()`` says what it shows)."""


def subscription_request() -> dict[str, Any]:
    """The view's ``subscription.request`` (AAEP §5): it can answer, at Level 3."""
    return {
        "type": "subscription.request",
        "aaep_version": "1.0.0",
        "subscriber_id": "jupyter-aaep-notebook-widget",
        "subscriber_name": "jupyter-aaep live view in the notebook",
        "capabilities": dict(CAPABILITIES),
    }


class LiveView:
    """An ipywidgets view of the session one ``%aaep`` request starts.

    Parameters
    ----------
    client
        A :class:`~jupyter_aaep.kernel.client.KernelClient` (``subscribe``, ``events``,
        ``start_request``, ``send``).
    request_text
        The request, as the user wrote it (shown, and sent).
    context
        The ``{name}`` descriptions sent with the request.
    now
        The clock for countdowns (tests pass their own).
    """

    def __init__(
        self,
        client: Any,
        request_text: str,
        *,
        context: list[dict[str, str]] | None = None,
        now: Callable[[], float] = time.time,
    ) -> None:
        self.client = client
        self.request_text = request_text
        self.context = list(context or [])
        self.state = ViewState(request_text)
        self.subscription_id: str | None = None
        self._now = now
        self._clock = SessionClock()
        self._items: dict[str, widgets.Widget] = {}
        self._cards: dict[str, RequestCard] = {}
        self._task: asyncio.Task[None] | None = None
        self._ticker: asyncio.Task[None] | None = None
        self._stream: Any = None
        self._sending: set[asyncio.Future[Any]] = set()
        self.header = widgets.HTML()
        self.timeline = widgets.VBox()
        self.widget = widgets.VBox([self.header, self.timeline])
        self.widget.add_class("jp-AAEPView")
        self.render()
        RECENT.append(self)

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> asyncio.Task[None]:
        """Schedule the view's task on the kernel's running loop and return at once."""
        if self._task is not None:
            return self._task
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # called outside a running loop (a plain script): use the thread's own
            loop = asyncio.get_event_loop()
        self._task = loop.create_task(self._run())
        return self._task

    async def stop(self) -> None:
        """End the task and the event stream (the session itself goes on: %aaep stop stops it)."""
        for task in (self._task, self._ticker):
            if task is not None and not task.done():
                task.cancel()
                try:
                    await task
                except asyncio.CancelledError:
                    pass

    async def _run(self) -> None:
        try:
            if await self._subscribe():
                await self._follow()
        except asyncio.CancelledError:
            raise
        except Exception as error:
            log.exception("The %aaep live view failed")
            self.state.error(
                f"The live view failed: {type(error).__name__}: {error}.",
                "The agent may still be working: follow it in the side panel, or run %aaep status.",
            )
        finally:
            if self._ticker is not None:
                self._ticker.cancel()
            self.render()

    async def _call(self, method: Callable[..., Any], *args: Any) -> Any:
        """A client call: awaited if it is async, else in a worker thread (they block on HTTP)."""
        if inspect.iscoroutinefunction(method):
            return await method(*args)
        return await asyncio.get_running_loop().run_in_executor(None, method, *args)

    async def _subscribe(self) -> bool:
        status = getattr(self.client, "status", None)
        if status is not None:
            try:
                found = await self._call(status)
            except Exception as error:  # noqa: BLE001 - the subscription below says what is wrong
                log.info("The live view could not read the notebook's status: %s", error)
            else:
                if isinstance(found, dict) and found.get("confirm_here") is False:
                    self.state.confirm_here = False
        answer = await self._call(self.client.subscribe, subscription_request())
        answer = answer if isinstance(answer, dict) else {}
        subscription = answer.get("subscription_id")
        if answer.get("type") != "subscription.accepted" or not isinstance(subscription, str):
            reason = (
                answer.get("reason_message") or "the server did not accept the view's subscription."
            )
            self.state.error(
                f"The live view could not subscribe to the agent's events: {reason}",
                "Your request was not sent. Run the cell again, or ask in the side panel.",
            )
            return False
        self.subscription_id = subscription
        self.state.status = "Starting your request…"
        self.render()
        return True

    async def _follow(self) -> None:
        stream = self.client.events(self.subscription_id)
        self._stream = stream
        queue: asyncio.Queue[Any] = asyncio.Queue()
        reader = asyncio.ensure_future(self._read(stream, queue))
        try:
            await asyncio.sleep(STREAM_GRACE)
            if not await self._send_request():
                return
            while self.state.following:
                message = await queue.get()
                if message is _DONE:
                    if self.state.ended is None:
                        self.state.error(
                            "The connection to the agent's events ended before the request finished.",
                            "The agent may still be working: follow it in the side panel, or run %aaep status.",
                        )
                    else:  # the request ended; a cell it left running had not
                        self.state.error(
                            "The connection to the agent's events ended before the cell the agent left running finished.",
                            "The cell may still run: the side panel says when it ends, or run %aaep status.",
                        )
                    break
                if isinstance(message, BaseException):
                    self.state.error(
                        f"The live view lost the agent's events: {message}",
                        "The agent may still be working: follow it in the side panel, or run %aaep status.",
                    )
                    break
                self.take(message)
        finally:
            reader.cancel()
            try:
                await reader
            except asyncio.CancelledError:
                pass
            close = getattr(stream, "aclose", None)
            if close is not None:
                await close()
            await self._close_subscription()

    async def _read(self, stream: Any, queue: asyncio.Queue[Any]) -> None:
        try:
            async for message in stream:
                queue.put_nowait(message)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # noqa: BLE001 - the follower says it in the widget
            queue.put_nowait(error)
        queue.put_nowait(_DONE)

    async def _send_request(self) -> bool:
        try:
            answer = await self._call(self.client.start_request, self.request_text, self.context)
        except Exception as error:  # noqa: BLE001 - the server's sentence, shown
            self.state.error(
                f"The request was not sent: {error}",
                "Fix what the message says, then run the cell again.",
            )
            self.render()
            return False
        answer = answer if isinstance(answer, dict) else {}
        session = answer.get("session_id")
        chat = answer.get("chat_id")
        if isinstance(chat, str) and chat and hasattr(self.client, "chat_id"):
            self.client.chat_id = (
                chat  # from now on, this view's calls address the chat that took the request
            )
        if answer.get("status") == "guidance":
            self.state.note(
                "The agent was already working on another request, so yours went to it as guidance "
                "(it reads it at its next step). This view follows that request."
            )
        if isinstance(session, str) and session:
            self.state.follow(session)
        self.render()
        return True

    async def _close_subscription(self) -> None:
        """Say goodbye (AAEP §5.9); the session goes on for the side panel."""
        if self.subscription_id is None:
            return
        message = {
            "type": "subscription.close",
            "subscription_id": self.subscription_id,
            "reason_code": "subscriber_done",
            "reason_message": "The request this view followed has ended.",
        }
        try:
            await self._call(self.client.send, message)
        except Exception as error:  # noqa: BLE001 - the server ends it after its grace anyway
            log.info("The live view could not close its subscription: %s", error)

    # -- events and rendering ------------------------------------------------------------------
    def take(self, message: Any) -> None:
        """One message of the stream: AAEP events go to the state; others are ignored here."""
        if isinstance(message, dict) and core_name(message.get("type")) is not None:
            if self.state.apply(message):
                self.render()
                self._tick_while_waiting()
        elif isinstance(message, dict) and message.get("type") == "subscription.close":
            self.state.error(
                "The server closed the live view's subscription "
                f"({message.get('reason_message') or message.get('reason_code') or 'no reason given'}).",
                "Follow the agent in the side panel, or run %aaep status.",
            )
            self.render()

    def render(self) -> None:
        """Bring the widgets up to date with the state (only what changed is sent)."""
        now = self._now()
        set_html(self.header, header_html(self.state))
        children: list[widgets.Widget] = []
        for key, item in self.state.items.items():
            if isinstance(item, RequestItem):
                card = self._cards.get(key)
                if card is None:
                    card = self._cards[key] = RequestCard(self, item)
                card.update(item, now)
                children.append(card.box)
                continue
            html = self._items.get(key)
            if html is None:
                html = self._items[key] = widgets.HTML()
            if isinstance(item, AnswerItem):
                set_html(html, answer_html(item))
            elif isinstance(item, StepItem):
                set_html(html, step_html(item))
            elif isinstance(item, NoticeItem):
                set_html(html, notice_html(item))
            children.append(html)
        if tuple(children) != tuple(self.timeline.children):
            self.timeline.children = tuple(children)

    def _tick_while_waiting(self) -> None:
        """Keep the countdowns current while a request is open (once a second)."""
        idle = self._ticker is None or self._ticker.done()
        if idle and any(isinstance(i, RequestItem) and i.open for i in self.state.items.values()):
            self._ticker = asyncio.ensure_future(self._tick())

    async def _tick(self) -> None:
        while self.state.ended is None and any(
            isinstance(i, RequestItem) and i.open for i in self.state.items.values()
        ):
            await asyncio.sleep(TICK)
            now = self._now()
            for key, card in self._cards.items():
                item = self.state.items.get(key)
                if isinstance(item, RequestItem):
                    card.update(item, now)

    def describe(self) -> dict[str, Any]:
        """What the view shows, as plain data: its text and its buttons (for tests and support)."""
        texts: list[str] = []
        buttons: list[dict[str, Any]] = []
        approvals: list[dict[str, str]] = []
        pending: list[widgets.Widget] = [self.widget]
        while pending:
            widget = pending.pop(0)
            if isinstance(widget, widgets.HTML):
                inline = re.sub(
                    r"<style>.*?</style>|</?(?:strong|em|code)>|<a\s[^>]*>|</a>|<wbr>",
                    "",
                    widget.value,
                    flags=re.DOTALL,
                )
                texts.append(html.unescape(re.sub(r"<[^>]+>", " ", inline)))
            elif isinstance(widget, ApprovalWidget):
                approvals.append({"chat_id": widget.chat_id, "request_id": widget.request_id})
            elif isinstance(widget, widgets.Button):
                buttons.append(
                    {
                        "description": widget.description,
                        "disabled": widget.disabled,
                        "model_id": widget.model_id,
                    }
                )
            pending.extend(getattr(widget, "children", ()))
        return {
            "session_id": self.state.session_id,
            "subscription_id": self.subscription_id,
            "ended": self.state.ended,
            "status": self.state.status,
            "text": " ".join(" ".join(texts).split()),
            "buttons": buttons,
            "approvals": approvals,
        }

    # -- answers ---------------------------------------------------------------------------------
    def reply(self, token: str, value: str) -> None:
        """A button press: send the answer for *token* (``accept``/``reject`` or the answer text)."""
        item = self.state.request(token)
        if item is None or self.subscription_id is None:
            return
        if item.kind == "clarification" and not str(value).strip():
            item.problem = "Type an answer first, or pick one of the choices."
            self.state.version += 1
            self.render()
            return
        item = self.state.mark_sending(token, value)
        if item is None:
            return
        stamp = self._clock.now()
        if item.kind == "confirmation":
            message = confirmation_reply(
                item, value, subscription_id=self.subscription_id, timestamp=stamp
            )
        else:
            message = clarification_reply(
                item, value, subscription_id=self.subscription_id, timestamp=stamp
            )
        self.render()
        future = asyncio.ensure_future(self._send(token, message))
        self._sending.add(future)
        future.add_done_callback(self._sending.discard)

    async def _send(self, token: str, message: dict[str, Any]) -> None:
        try:
            await self._call(self.client.send, message)
        except Exception as error:  # noqa: BLE001 - said in the card; the user can answer again
            self.state.reply_failed(token, str(error))
            self.render()


_DONE = object()
