"""Tools that talk to the user instead of acting: asking a question, handing control back."""

from __future__ import annotations

from .tools import ToolContext, ToolSpec, make_tool


async def ask_user(
    ctx: ToolContext, question: str, choices: list[str] | None = None, context: str | None = None
) -> str:
    """Ask the user a question and wait for the answer.

    Use this when the request is ambiguous or you need a fact only the user knows (which
    column, which file, which of several approaches). Do not use it for permission to run
    code: running code already asks for approval.

    Parameters
    ----------
    question : str
        One clear question, as you would say it aloud.
    choices : list of str, optional
        Two or more short answers the user can pick from; they may also answer freely.
    context : str, optional
        One sentence on why you need to know.
    """
    answer = await ctx.ask(question, choices=choices, context=context)
    if answer is None:
        return "The user did not answer in time. Go on with a sensible assumption and say which, or stop and explain."
    return f"The user answered: {answer}"


async def request_handoff(ctx: ToolContext, reason: str, what_you_need: str | None = None) -> str:
    """Hand control back to the user and end this request.

    Use this when you cannot continue without the user: they must do something themselves
    (enter credentials, install something, decide something only they can), or the task is
    outside what you should do. This request ends after this call.

    Parameters
    ----------
    reason : str
        Why you are stopping, in one sentence.
    what_you_need : str, optional
        What the user should do or tell you before asking again.
    """
    await ctx.request_handoff(reason, needs=what_you_need)
    return "Control was handed back to the user; this request ends here."


def conversation_tools() -> list[ToolSpec]:
    return [
        make_tool(ask_user, conversational=True, label="ask you a question"),
        make_tool(request_handoff, conversational=True, label="hand control back to you"),
    ]
