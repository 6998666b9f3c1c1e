"""The one gate: an ACP agent's ``session/request_permission`` as an AAEP confirmation.

The person answers on the chat's card, as for our own agent. One question per action: calls of
our own notebook tools are allowed here without a question, because our MCP server asks for
them itself (with the code, the risk scan and the approval mode of the chat). A change to a
notebook file made by the agent's own file tools is refused at once: notebooks are open in
JupyterLab, and a write beside the live document loses edits (the agent is told to use the
notebook tools in its first prompt).

"Allow for this session" is a standing permission of the chat (:mod:`jupyter_aaep.agent.grants`,
rule ``acp__<agent>__<kind>``, chat scope): the card offers it, only the person can take it (the
server checks the reply's origin), and it is listed and revocable like every grant; a revoked
one asks again. The agent's own "allow always" is never sent, so the agent never stops asking
us and the grant stays ours to check and take back. A deny grant refuses without asking.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from ..aaep.broker import Outcome, ReplyBroker
from ..aaep.events import AwaitingConfirmation, RiskLevel, Summary
from ..aaep.ids import new_reply_token
from ..aaep.session import Session
from ..agent import grant_gate
from ..agent.chat_context import ChatContext
from ..agent.grants import Grant, Verdict, acp_rule
from ..agent.tools import ActionPreview
from ..words import duration_words
from .narration import Narrator, ToolCall, is_notebook_tool, tool_words

__all__ = ["NOTEBOOK_REFUSAL", "Gate"]

NOTEBOOK_REFUSAL = (
    "Notebooks open in JupyterLab are changed only through the notebook tools "
    "(mcp__notebook__create_cell, edit_cell, run_cell, …), so the person hears and approves each "
    "step; writing the .ipynb file directly is refused."
)

_RISK: dict[str, RiskLevel] = {
    "execute": "high",
    "delete": "high",
    "edit": "medium",
    "move": "medium",
}
_CONSEQUENCE = {
    "execute": "The command runs on this computer with your permissions.",
    "delete": "The file is deleted.",
    "edit": "The file is changed on disk.",
    "move": "The file is moved or renamed.",
    "fetch": "The agent reaches an address on the network.",
}


def _option(options: list[dict[str, Any]], *kinds: str) -> str | None:
    for kind in kinds:
        for option in options:
            if option.get("kind") == kind and isinstance(option.get("optionId"), str):
                return str(option["optionId"])
    return None


def _selected(option_id: str | None) -> dict[str, Any]:
    if option_id is None:
        return {"outcome": {"outcome": "cancelled"}}
    return {"outcome": {"outcome": "selected", "optionId": option_id}}


def _touches_notebook(call: dict[str, Any]) -> bool:
    given = call.get("rawInput")
    raw: dict[str, Any] = given if isinstance(given, dict) else {}
    meta = (call.get("_meta") or {}).get("claudeCode") or {}
    if meta.get("toolName") == "NotebookEdit":
        return True
    if call.get("kind") not in ("edit", "delete", "move"):
        return False
    paths = [str(raw.get(k) or "") for k in ("file_path", "notebook_path", "path")]
    paths += [
        str(loc.get("path") or "") for loc in call.get("locations") or [] if isinstance(loc, dict)
    ]
    return any(p.endswith(".ipynb") for p in paths)


class Gate:
    """Answers the agent's permission requests for one AAEP session.

    Parameters
    ----------
    session, broker
        Where the confirmation is told and where the person's reply arrives.
    narrator
        The session's narrator (its steps, its streamed answer).
    timeout_for
        Seconds a person has to answer, by risk (the chat's approval policy).
    until_running
        Awaited before a question (a pause holds it; our agents' pause does the same).
    chat
        The chat: its standing permissions (``chat.grants``) decide or are offered.
    """

    def __init__(
        self,
        session: Session,
        broker: ReplyBroker,
        narrator: Narrator,
        *,
        timeout_for: Callable[[RiskLevel], int],
        until_running: Callable[[], Awaitable[None]] | None = None,
        chat: ChatContext | None = None,
    ) -> None:
        self.session = session
        self.broker = broker
        self.narrator = narrator
        self.timeout_for = timeout_for
        self.until_running = until_running
        self.chat = chat
        self.questions = 0

    def standing(self, rule: str | None) -> Verdict | None:
        """The chat's standing permission that decides this kind of step, or ``None`` (ask)."""
        book = self.chat.grants if self.chat is not None else None
        if book is None or rule is None:
            return None
        return book.verdict(
            rule,
            {},
            code=None,
            flagged=False,
            chat_id=self.chat.chat_id if self.chat is not None else None,
            notebook_path=self.chat.notebook_path if self.chat is not None else None,
        )

    def _offers(self, token: str, rule: str | None) -> list[dict[str, Any]]:
        """The "allow for this chat" grant the card offers (``extra_context.permission_offers``:
        an ACP agent's kinds of step are granted for one chat only)."""
        chat = self.chat
        if chat is None or chat.grants is None or rule is None:
            return []
        offers = chat.grants.offer(
            token,
            rule,
            {},
            flagged=False,
            chat_id=chat.chat_id,
            notebook_path=chat.notebook_path,
            label=self.narrator.agent,
        )
        return [offer.to_json(chat.notebook_path) for offer in offers]

    async def request(self, params: dict[str, Any]) -> dict[str, Any]:
        """The answer to one ``session/request_permission``."""
        options = [o for o in params.get("options") or [] if isinstance(o, dict)]
        given = params.get("toolCall")
        call_update: dict[str, Any] = given if isinstance(given, dict) else {}
        allow = _option(options, "allow_once", "allow_always")
        reject = _option(options, "reject_once", "reject_always")
        if is_notebook_tool(call_update):
            return _selected(allow)  # our server asks for it: one question per action
        call = self.narrator.call_for(call_update)
        agent = self.narrator.agent
        if _touches_notebook(call_update):
            call.refused = True
            self.narrator.finish_output()
            self.session.change_state(
                "thinking",
                Summary(
                    normal=f"{agent} tried to change a notebook file directly; refused. "
                    "Notebooks are changed through the notebook tools, which you hear and approve.",
                    terse="Refused a direct notebook write.",
                ),
            )
            return _selected(reject)
        doing, _, wants = tool_words(agent, call, self.narrator.cwd)
        rule = acp_rule(agent, call.kind)
        verdict = self.standing(rule)
        if verdict is not None and verdict.denied:
            call.refused = True
            self.narrator.finish_output()
            grant_gate.refuse(
                self.session, verdict.grant, ActionPreview(summary=f"{agent} wanted to {wants}")
            )
            return _selected(reject)
        if self.session.closed:
            return _selected(None)
        grant = verdict.grant if verdict is not None else None
        return await self._ask(call, (doing, wants), allow, reject, rule=rule, grant=grant)

    async def _ask(
        self,
        call: ToolCall,
        words: tuple[str, str],
        allow: str | None,
        reject: str | None,
        *,
        rule: str | None,
        grant: Grant | None,
    ) -> dict[str, Any]:
        """Ask the person; or, when *grant* allows the step, tell the same card as answered by
        it (the record names the grant, as for our own agent's granted steps)."""
        if self.until_running is not None and grant is None:
            await self.until_running()
        agent = self.narrator.agent
        doing, wants = words
        self.narrator.finish_output()
        risk: RiskLevel = _RISK.get(call.kind, "low")
        irreversible = call.kind in ("execute", "delete")
        timeout = self.timeout_for(risk)
        action = f"{agent} wants to {wants}."
        preview = ActionPreview(summary=doing.rstrip("."), terse=wants)
        consequence = _CONSEQUENCE.get(call.kind, "The agent goes on with this step.")
        token = new_reply_token()
        self.session.change_state(
            "awaiting_input",
            Summary(normal="Approving automatically.", terse="Approving.")
            if grant is not None
            else Summary(
                normal=f"{agent} is waiting for your approval to {wants}.", terse="Approval needed."
            ),
        )
        choices: list[dict[str, Any]] = [
            {"value": "accept", "label": "Allow once"},
            {"value": "reject", "label": "Reject"},
        ]
        extra: dict[str, Any] = {"agent": agent, "tool_kind": call.kind, "choices": choices}
        if call.kind == "execute":
            extra.update(code=call.title, language="shell")
        if grant is not None:
            extra.update(auto_approved=True, granted_by=grant_gate.granted_context(grant))
            summary = grant_gate.granted_summary(grant, preview, risk, action)
        else:
            self.questions += 1
            offers = self._offers(token, rule)
            if offers:
                extra["permission_offers"] = offers
            for offer in offers:
                grant_wish = {"rule": offer["rule"], "scope": offer["scope"]}
                choices.append({"value": "accept", "label": offer["label"], "grant": grant_wish})
            summary = Summary(
                normal=f"Approval needed for {agent}, {risk} risk: {action} {consequence} "
                f"If you do not answer within {duration_words(timeout, short=False)}, it will be rejected.",
                terse=f"Approve? {wants}",
            )
        event = self.session.emit(
            AwaitingConfirmation(
                action=action,
                consequence=consequence,
                reply_token=token,
                timeout_seconds=timeout,
                default_decision="reject",
                risk_level=risk,
                irreversible=irreversible,
                reversibility="irreversible" if irreversible else "reversible_with_effort",
                allowed_replies=("accept", "reject"),
                extra_context=extra,
                summary=summary,
            )
        )
        request = self.broker.open_confirmation(event)
        if grant is not None:
            self.broker.resolve(request, "accept", decided_by=f"grant:{grant.id}")
        try:
            outcome: Outcome = await self.broker.wait(request)
        except asyncio.CancelledError:
            return _selected(None)
        finally:
            if self.chat is not None and self.chat.grants is not None:
                self.chat.grants.forget_offer(token)
        if self.session.closed or outcome.resolution == "cancelled":
            return _selected(
                None
            )  # Stop, or the request was withdrawn: the agent hears "cancelled"
        if outcome.accepted and grant is not None:
            grant_gate.granted_record(self.session, grant, token, preview)
            self.narrator.invoke(call)
            return _selected(allow)
        if outcome.accepted:
            self.session.change_state(
                "calling_tool", Summary(normal="Approved.", terse="Approved.")
            )
            self.narrator.invoke(call)
            return _selected(allow)
        call.refused = True
        self.session.change_state(
            "thinking",
            Summary(normal=f"Rejected: {agent} will not {wants}.", terse="Rejected."),
        )
        return _selected(reject)
