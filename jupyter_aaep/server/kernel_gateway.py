"""What a notebook's own kernel may do through ``aaep/v1/kernel/...``, apart from HTTP.

:class:`KernelGateway` checks who is calling (a kernel's signed request, see
:mod:`.kernel_handlers` for the scheme), finds that kernel's notebook and chat, and acts: its
status, its ``@aaep_tool`` tools, a request, a subscription, a message or a reply, with the rules
for answers from kernel code (``kernel_replies``, never in auto mode or while the agent's own code
runs, only for a request this kernel's stream delivered).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tornado import web

from ..errors import AAEPError, RequestError
from .base import ServiceSource
from .kernel_credentials import KernelCredentials
from .messages import REPLY_TYPES, Response
from .notebook_approval import AWAITING_KINDS

if TYPE_CHECKING:
    from ..agent.tools import ToolSpec
    from ..chats.chat import Chat
    from ..tools.kernel_tools import KernelToolRegistry
    from .service import AAEPService

KERNEL_HEADER = "X-AAEP-Kernel-Id"
TIME_HEADER = "X-AAEP-Kernel-Time"
NONCE_HEADER = "X-AAEP-Kernel-Nonce"
SIGNATURE_HEADER = "X-AAEP-Kernel-Signature"
MAX_CONTEXT_ITEMS = 20
MAX_CONTEXT_CHARS = 8_000
"""Characters of one ``{name}`` description given to the model."""
_NOT_A_NOTEBOOK = (
    "This kernel is not attached to a notebook; open the notebook in JupyterLab (or start the "
    "kernel from a notebook) and run the cell again."
)


@dataclass(frozen=True)
class KernelCaller:
    """A verified caller: the kernel, and the notebook whose session runs it."""

    kernel_id: str
    notebook_path: str
    chat_id: str | None = None
    """The chat the request names (``?chat_id=``), if any; checked by :meth:`KernelGateway.chat`."""


class KernelGateway:
    """What the kernel endpoints do, apart from HTTP: identify the kernel, find its chat, act.

    The extension (its secret, kernel manager and model credentials) is bound on the first
    request, so the routes can be built before the server runs.
    """

    def __init__(self, service: ServiceSource) -> None:
        self._service_source = service
        self.extension: Any = None
        self.shown: dict[str, set[str]] = {}
        """Reply tokens each kernel's event stream delivered (what its view can have shown)."""

    @property
    def service(self) -> AAEPService:
        return self._service_source()

    @property
    def runner(self) -> Any:
        return self.service.runner

    @property
    def kernel_tools(self) -> KernelToolRegistry:
        tools = self.service.toolbox.kernel_tools
        if tools is None:
            raise RequestError(
                409,
                "Kernel tools are not available: the server's notebook layer did not load "
                "(is jupyter-collaboration installed and enabled?). See the server log.",
            )
        return tools

    # -- who is calling -----------------------------------------------------------------------------
    @property
    def credentials(self) -> KernelCredentials:
        found = getattr(self.extension, "kernel_credentials", None)
        if found is None:
            raise RequestError(403, "This server issues no kernel credentials; restart JupyterLab.")
        return found  # type: ignore[no-any-return]

    async def caller(self, method: str, path: str, headers: Any, body: bytes) -> KernelCaller:
        """The verified kernel and its notebook; RequestError 403 / 409 otherwise."""
        kernel_id = headers.get(KERNEL_HEADER) or ""
        kernels = self.extension.serverapp.kernel_manager
        if not kernel_id or kernel_id not in kernels:
            raise RequestError(
                403,
                f"The {KERNEL_HEADER} header does not name a kernel of this server. Use %aaep "
                "or jupyter_aaep.kernel.client in a kernel started by this Jupyter server.",
            )
        why = self.credentials.check(
            kernel_id,
            method,
            path,
            body,
            stamp=headers.get(TIME_HEADER) or "",
            nonce=headers.get(NONCE_HEADER) or "",
            given=headers.get(SIGNATURE_HEADER) or "",
        )
        if why is not None:
            raise RequestError(
                403,
                f"This request is refused: {why}. Each request must be signed once, at the "
                "time it is sent, with the credential the server gave this kernel (a kernel "
                "may only act on its own notebook).",
            )
        sessions = self.extension.serverapp.session_manager
        try:
            session = await sessions.get_session(kernel_id=kernel_id)
        except web.HTTPError:
            session = None
        path_ = (session or {}).get("path")
        if not path_:
            raise RequestError(409, _NOT_A_NOTEBOOK)
        return KernelCaller(kernel_id, str(path_))

    # -- the notebook's chat -------------------------------------------------------------------------
    def chat(self, caller: KernelCaller, *, create: bool) -> Chat | None:
        """The chat the request names (403 unless it is the notebook's own); else the notebook's
        newest chat (as the panel opens it), or a new one when it has none and *create*."""
        if caller.chat_id:
            try:
                named = self.runner.get(caller.chat_id)
            except AAEPError:
                named = None
            if named is None or named.notebook_path != caller.notebook_path:
                raise RequestError(
                    403,
                    "That chat is not one of this notebook's chats; a kernel may only act on "
                    "its own notebook.",
                )
            return named  # type: ignore[no-any-return]
        chats, _ = self.runner.page(caller.notebook_path, limit=1)
        if chats:
            return self.runner.get(chats[0].chat_id)  # type: ignore[no-any-return]
        if not create:
            return None
        created = self.service.create_chat({"notebook_path": caller.notebook_path})
        return self.runner.get(created.body["chat_id"])  # type: ignore[no-any-return,index]

    def status(self, caller: KernelCaller) -> dict[str, Any]:
        chat = self.chat(caller, create=False)
        credentials = getattr(getattr(self.extension, "clients", None), "credentials", None)
        configured = bool(credentials is not None and credentials.configured())
        pending: list[dict[str, Any]] = []
        state = "idle"
        if chat is not None:
            pending = self.service.open_requests(chat)
            if chat.paused:
                state = "paused"
            elif (
                chat.running and chat.session is not None and chat.session.state == "awaiting_input"
            ):
                state = "awaiting"
            elif chat.running:
                state = "running"
        tools = self.service.toolbox.kernel_tools
        return {
            "notebook_path": caller.notebook_path,
            "kernel_id": caller.kernel_id,
            "chat_id": chat.chat_id if chat is not None else None,
            "status": state,
            "model_configured": configured,
            "model_problem": None
            if configured
            else (
                "The Jupyter server has no Anthropic API key: export ANTHROPIC_API_KEY before starting Jupyter "
                "(or start it with scripts/start --offline for the offline demo model)."
            ),
            "tools": [t.name for t in tools.of_kernel(caller.kernel_id)]
            if tools is not None
            else [],
            "pending": pending,
            "confirm_here": bool(getattr(self.extension, "kernel_replies", False)),
        }

    def tools(self, caller: KernelCaller) -> dict[str, Any]:
        return {"tools": [describe_tool(t) for t in self.kernel_tools.of_kernel(caller.kernel_id)]}

    def put_tool(self, caller: KernelCaller, name: str, body: dict[str, Any]) -> dict[str, Any]:
        tool = self.kernel_tools.put(caller.kernel_id, caller.notebook_path, name, body)
        return {"name": tool.name, "registered": True, "tool": describe_tool(tool)}

    def delete_tool(self, caller: KernelCaller, name: str) -> dict[str, Any]:
        if not self.kernel_tools.remove(caller.kernel_id, name):
            raise RequestError(
                404, f"This kernel has no tool named {name!r}; %aaep tools lists them."
            )
        return {"name": name, "removed": True}

    def request(self, caller: KernelCaller, body: dict[str, Any]) -> Response:
        """Start a session (or steer the running one) like the panel's ``user_input``."""
        unknown = set(body) - {"text", "context"}
        if unknown:
            raise RequestError(
                400, f'Unknown field(s) {sorted(unknown)}; send {{"text": ..., "context": [...]}}.'
            )
        text = body.get("text")
        if not isinstance(text, str) or not text.strip():
            raise RequestError(
                400, "text must be the request, a non-empty string (e.g. %aaep plot {df})."
            )
        attachment = context_block(body.get("context") or [])
        chat = self.chat(caller, create=True)
        assert chat is not None
        if chat.working:  # as the panel: a message while the agent works steers it
            steer = f"{text}\n\n{attachment}" if attachment else text
            item, _, session_id = self.runner.guide(chat.chat_id, steer)
            return Response(
                202,
                {
                    "chat_id": chat.chat_id,
                    "input_id": item.guidance_id,
                    "session_id": session_id,
                    "status": "guidance",
                },
            )
        session_id = self.runner.submit(chat.chat_id, text, attachment=attachment or None)
        return Response(
            202,
            {
                "chat_id": chat.chat_id,
                "input_id": session_id,
                "session_id": session_id,
                "status": "started",
            },
        )

    def subscribe(self, caller: KernelCaller, body: dict[str, Any]) -> Response:
        """The Level 3 handshake for the kernel's chat; Location is the kernel's own event stream."""
        chat = self.chat(caller, create=True)
        assert chat is not None
        response = self.service.subscribe(body, chat.chat_id)
        subscription = (response.body or {}).get("subscription_id")
        if response.status == 201 and subscription:
            location = self.service.url_for("kernel/events") + f"?subscription_id={subscription}"
            response = Response(201, response.body, {**response.headers, "Location": location})
        return response

    async def message(self, caller: KernelCaller, body: dict[str, Any]) -> Response:
        from .message_kinds import classify  # with the first message (issue 31)

        if classify(body) in REPLY_TYPES:
            return self.reply(caller, body)
        chat = self.chat(caller, create=True)
        assert chat is not None
        return await self.service.handle(body, chat_id=chat.chat_id)

    def reply(self, caller: KernelCaller, body: dict[str, Any]) -> Response:
        """A reply from the notebook: to the chat whose session asked, if it is this notebook's,
        and only as far as answers from kernel code may approve anything (see the module).
        Answers to questions (clarifications) approve nothing and are taken from the widget."""
        from ..aaep.broker import ReplyOrigin
        from .message_kinds import classify

        confirmation = classify(body) == "confirmation.reply"
        if confirmation and not getattr(self.extension, "kernel_replies", False):
            raise RequestError(
                403,
                "Answers from the notebook are turned off on this server: code in a notebook "
                "could send them as if you had clicked. Answer in the side panel "
                "(c.AAEPExtension.kernel_replies turns them on).",
            )
        token = body.get("reply_token")
        request = next((r for r in self.runner.broker.pending() if r.token == token), None)
        chat = (
            None
            if request is None
            else next(
                (
                    c
                    for c in self.runner.chats()
                    if c.session is not None and c.session.id == request.session_id
                ),
                None,
            )
        )
        if (
            chat is None
        ):  # §6.3.4: an unknown or used token is ignored, and the sender is not told why
            return Response(204)
        if chat.notebook_path != caller.notebook_path:
            raise RequestError(
                403,
                "That request belongs to another notebook's chat; a kernel may only answer "
                "its own notebook's requests.",
            )
        if confirmation and chat.approval.mode == "auto":
            raise RequestError(
                403,
                "This chat approves automatically, so answers from the notebook's code are "
                "refused: what the setting does not approve, only you can, in the side panel.",
            )
        if self._agent_code_running(caller.kernel_id):
            # Widget clicks arrive while the agent waits, never while its own code runs; a reply
            # sent from the kernel then is that code answering the agent's request itself.
            raise RequestError(
                409,
                "An answer cannot come from the notebook's kernel while the agent's own code "
                "runs in it. Answer in the side panel, or wait for the code to finish.",
            )
        if token not in self.shown.get(caller.kernel_id, set()):
            raise RequestError(
                403,
                "This request was not shown in this notebook's %aaep view, so it cannot be "
                "answered from here. Answer in the side panel.",
            )
        self.runner.reply(
            chat.chat_id, self.service._attributed(body, chat), origin=ReplyOrigin("notebook")
        )
        return Response(204)

    def showed(self, kernel_id: str, event: dict[str, Any]) -> None:
        """The kernel's event stream delivered *event*: its reply token may be answered from there."""
        token = event.get("reply_token")
        if isinstance(token, str) and event.get("type") in AWAITING_KINDS:
            shown = self.shown.setdefault(kernel_id, set())
            if len(shown) > 1000:
                shown.clear()
            shown.add(token)

    def _agent_code_running(self, kernel_id: str) -> bool:
        notebooks = self.service.toolbox.notebooks
        return notebooks is not None and notebooks.executor.is_running_code(kernel_id)


def describe_tool(tool: ToolSpec) -> dict[str, Any]:
    """A kernel tool as the kernel endpoints list it."""
    return {"name": tool.name, **tool.declaration()}


def context_block(items: Any) -> str:
    """The ``{name}`` descriptions for the model, each in a data block (masked like every model
    input; a description is what the kernel says about a value, so it is data) ("" when none)."""
    from ..agent.data_blocks import data_block

    if not isinstance(items, list) or len(items) > MAX_CONTEXT_ITEMS:
        raise RequestError(
            400,
            f"context must be a list of at most {MAX_CONTEXT_ITEMS} "
            '{"name": ..., "description": ...} objects.',
        )
    parts = []
    for item in items:
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("name"), str)
            or not isinstance(item.get("description"), str)
        ):
            raise RequestError(400, 'Each context item must be {"name": str, "description": str}.')
        description = item["description"]
        if len(description) > MAX_CONTEXT_CHARS:
            description = description[:MAX_CONTEXT_CHARS] + " [… cut]"
        parts.append(data_block(f"kernel variable {item['name'][:100]}", description))
    if not parts:
        return ""
    return (
        "<kernel_variables>\nThe request names these variables of the notebook's kernel; the kernel "
        "described them (bounded, a few values only):\n"
        + "\n".join(parts)
        + "\n</kernel_variables>"
    )
