"""Plan mode for one request: read first, one decision, then the plan's steps.

A request in a chat whose mode is ``"plan"`` has two phases, and the model is offered a fixed
tool list in each (so the prompt cache holds within a phase, and the rule is enforced by what
the model can call, not by what the prompt says):

- **planning**: only tools that change nothing (read-only, no approval needed) and the
  conversation tools, plus ``propose_plan``. Any other call is refused with a sentence telling
  the model to propose a plan.
- **running** (after the person approved): every tool, plus ``plan_step``, which the model calls
  after each step; "Step 2 of 4 done: …" is heard as ``progress.updated`` with the step count.

The plan is ONE ``awaiting.confirmation``; its ``extra_context.plan`` carries the summary, the
steps, the Markdown file the person may edit (:mod:`.plan`) and the four choices with the reply
each one is (:data:`CHOICES`). A plain ``accept`` from any subscriber is the first choice; ``accept``
with ``modified_action {"plan_choice": "ask_each_step"}`` the second; ``reject`` with a
``decision_rationale`` is "keep planning" (the rationale is the comment the model receives);
a bare ``reject`` (or silence) rejects the plan. The choice holds for this request only: the
next request plans again.

A step that fails (the model says so) stops and asks the person whether to fix it or stop; a
stopped plan goes back to the planning tools. The session's last words say which steps ran.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal

from ..aaep.events import AwaitingConfirmation, Progress, ProgressUpdated, Summary
from ..aaep.ids import new_reply_token
from ..aaep.redaction import mask_secrets
from ..errors import ToolError
from ..words import plural
from ._loop_text import was_declined
from .plan import MAX_STEPS, Plan, PlanFiles, plan_changes
from .tools import ToolContext, ToolSpec, make_tool

if TYPE_CHECKING:
    from ..aaep.broker import Outcome, PendingRequest, ReplyBroker
    from ..aaep.session import Session
    from .approval import ApprovalPolicy
    from .chat_context import ChatContext

log = logging.getLogger(__name__)

PlanChoice = Literal["run", "ask_each_step", "keep_planning", "reject"]
CHOICES: tuple[dict[str, Any], ...] = (
    {
        "value": "run",
        "label": "Run it, asking only for code the risk scan flags",
        "reply": {"decision": "accept"},
    },
    {
        "value": "ask_each_step",
        "label": "Run it, asking before each step",
        "reply": {"decision": "accept", "modified_action": {"plan_choice": "ask_each_step"}},
    },
    {
        "value": "keep_planning",
        "label": "Keep planning, with a comment",
        "reply": {"decision": "reject", "decision_rationale": "(your comment)"},
    },
    {"value": "reject", "label": "Reject the plan", "reply": {"decision": "reject"}},
)
"""The plan card's choices, each with the AAEP reply that makes it (sent in ``extra_context``)."""

PLAN_TOOLS = ("propose_plan", "plan_step")
REFUSED = (
    "Not run: this chat is in plan mode and no plan is approved yet, so only tools that change "
    "nothing can be used. Read what you need, then call propose_plan with a summary and the "
    "steps; the person approves the plan before anything is changed or run."
)
PLANNING_NOTE = (
    "Plan mode: until the person approves a plan you can only read (the notebook, files, "
    "variables, figures). Find out what you need, then call propose_plan once with a short "
    "summary and the steps; name the cells each step touches by their number."
)
_CELL_ID = re.compile(r"(?<![\w-])[\w-]{2,64}(?![\w-])")

Wait = Callable[["PendingRequest"], Awaitable["Outcome"]]
Ask = Callable[..., Awaitable[Any]]


class PlanGate:
    """One request's plan: its phase, the approved steps and which of them are done."""

    def __init__(
        self, session: Session, broker: ReplyBroker, chat: ChatContext, *, wait: Wait, ask: Ask
    ) -> None:
        self.session = session
        self.broker = broker
        self.chat = chat
        self._wait = wait
        self._ask = ask
        self.phase: Literal["planning", "running"] = "planning"
        self.plan: Plan | None = None
        self.ask_each_step = False
        self.rejected = False
        self.stopped_at: int | None = None
        self.done: set[int] = set()
        self.failed: set[int] = set()
        self.file_name: str | None = None
        self._tools = {
            "propose_plan": make_tool(
                self.propose_plan, conversational=True, label="propose a plan"
            ),
            "plan_step": make_tool(self.plan_step, conversational=True, label="report a step"),
        }

    # -- what the model is offered and may call ------------------------------------------------
    def tool(self, name: str) -> ToolSpec | None:
        """The plan tool of this phase by that name (the other one does not exist now)."""
        wanted = "propose_plan" if self.phase == "planning" else "plan_step"
        return self._tools[name] if name == wanted else None

    def allows(self, spec: ToolSpec) -> bool:
        if self.phase == "running" or spec.name in PLAN_TOOLS or spec.conversational:
            return True
        return spec.read_only and not spec.require_confirmation and not spec.irreversible

    def model_tools(self, specs: Iterable[ToolSpec], *, cache: bool) -> list[dict[str, Any]]:
        """The ``tools`` parameter of this phase: the same list for every request of a phase."""
        offered = [spec for spec in specs if spec.name not in PLAN_TOOLS and self.allows(spec)]
        plan_tool = self.tool("propose_plan" if self.phase == "planning" else "plan_step")
        assert plan_tool is not None
        tools = [spec.model_schema() for spec in (*offered, plan_tool)]
        if cache:
            tools[-1] = {**tools[-1], "cache_control": {"type": "ephemeral"}}
        return tools

    def note(self) -> str:
        """What the request's system prompt adds in this phase (nothing once it runs)."""
        return PLANNING_NOTE if self.phase == "planning" else ""

    def policy(self, chat_policy: ApprovalPolicy) -> ApprovalPolicy:
        """The approval rules of this request: the person's choice once the plan runs."""
        if self.phase != "running":
            return chat_policy
        return replace(chat_policy, mode="ask_all" if self.ask_each_step else "auto")

    # -- the plan tools ---------------------------------------------------------------------
    async def propose_plan(self, ctx: ToolContext, summary: str, steps: list[str]) -> str:
        """Propose your plan to the person and wait for their decision.

        This chat is in plan mode: nothing can be changed or run until the person approves a
        plan. Call this once you know what to do. The person may approve it, approve it asking
        before each step, ask you to keep planning (you receive their comment), or reject it;
        they may also edit the steps, and you are told what they changed.

        Parameters
        ----------
        summary : str
            What the plan achieves, in one short sentence (the title the person hears).
        steps : list of str
            The steps in order, one action each, naming the cells they touch by number, e.g.
            "Run cell 4 (the training loop)" or "Add a cell after cell 2 that plots the losses".
        """
        steps = [" ".join(step.split()) for step in steps if step and step.strip()]
        if not summary.strip() or not steps:
            raise ToolError("A plan needs a summary and at least one step.")
        if len(steps) > MAX_STEPS:
            raise ToolError(f"A plan has at most {MAX_STEPS} steps; group them and try again.")
        plan = Plan(" ".join(summary.split()), tuple(await self._cells_by_number(steps)))
        outcome = await self._confirm(plan)
        choice = _choice(outcome)
        saved = self._saved(plan)
        changes = plan_changes(plan, saved) if saved is not None else []
        if saved is not None:
            plan = saved
        edited = f" The person edited the plan: {' '.join(changes)}" if changes else ""
        if choice in ("run", "ask_each_step") and not plan.steps:
            choice, outcome_comment = "keep_planning", "The saved plan has no steps."
        else:
            outcome_comment = outcome.rationale or ""
        self.plan = plan
        if choice in ("run", "ask_each_step"):
            self.phase, self.ask_each_step = "running", choice == "ask_each_step"
            self.done, self.failed, self.stopped_at = set(), set(), None
            self._after(_approved_words(plan, self.ask_each_step, bool(changes)), "Plan approved.")
            how = (
                " The person will approve each change and run before it happens."
                if self.ask_each_step
                else " Code the risk scan flags still asks the person."
            )
            return (
                f"The person approved the plan.{how}{edited} Follow exactly these steps, in "
                f"order:\n{plan.numbered()}\nAfter each step call plan_step with its number and "
                'status "done"; if a step fails or cannot be done as written, call plan_step with '
                'status "failed" and say why, and do not go on until the person answers. Do only '
                "what the plan says."
            )
        if choice == "keep_planning":
            self._after("You asked for changes; the agent keeps planning.", "Keep planning.")
            return (
                f"The person wants changes before anything runs. Their comment: {outcome_comment}"
                f"{edited} Revise the plan (you can still only read) and call propose_plan again."
            )
        self.rejected = True
        why = {
            "timeout": "No answer in time, so the plan was rejected",
            "unsubscribed": "Nobody was connected to answer, so the plan was rejected",
            "cancelled": "The plan was withdrawn",
        }.get(outcome.resolution, "You rejected the plan")
        self._after(f"{why}: nothing will change.", "Plan rejected.")
        return (
            "The person did not approve the plan (rejected, or no answer). Nothing may be changed "
            "or run in this request. Say in one sentence that nothing was done, and stop."
        )

    async def plan_step(
        self, ctx: ToolContext, step: int, status: Literal["done", "failed"], note: str = ""
    ) -> str:
        """Report a step of the approved plan: done, or failed (then wait for the person).

        Parameters
        ----------
        step : int
            The step's number in the approved plan (1 for the first).
        status : str
            "done" when the step worked; "failed" when it failed or cannot be done as written.
        note : str, optional
            For a failed step, what went wrong, in one sentence.
        """
        plan = self.plan
        if plan is None or self.phase != "running":
            raise ToolError("No plan is running; propose one first.")
        total = len(plan.steps)
        if not 1 <= step <= total:
            raise ToolError(f"The plan has steps 1 to {total}; step {step} is not one of them.")
        text = plan.steps[step - 1]
        if status == "done":
            self.done.add(step)
            self.failed.discard(step)
            said = f"Step {step} of {total} done: {_sentence(text)}"
            self._progress(step, total, said)
            left = [n for n in range(1, total + 1) if n not in self.done]
            nxt = (
                f" Next: step {left[0]}."
                if left
                else " All steps are done: tell the person briefly what was done."
            )
            return f"Noted: step {step} of {total} is done.{nxt}"
        self.failed.add(step)
        why = mask_secrets(" ".join(note.split()))[:500] or "no reason given"
        answer = await self._ask(
            f"Step {step} of {total} failed: {_sentence(why)} Should the agent try to fix it and go "
            "on, or stop the plan here?",
            choices=["Fix it and go on", "Stop the plan here"],
            context=f"The step was: {text}",
            default=None,
        )
        if answer is None or str(answer).strip().lower().startswith("stop"):
            self.phase, self.stopped_at = "planning", step
            return (
                f"The person stopped the plan at step {step}. Do not change or run anything more; "
                "tell them in a sentence or two what ran and what did not."
            )
        return (
            f"The person answered: {answer}. Fix step {step} and go on with the plan; call "
            "plan_step when it is done."
        )

    async def after_call(self, spec: ToolSpec | None, result: dict[str, Any] | None) -> None:
        """A change or run of the running plan that failed stops the plan and asks the person,
        whether or not the model reports it: the answer is added to that call's result."""
        if self.phase != "running" or spec is None or result is None or not result.get("is_error"):
            return
        if spec.read_only or spec.conversational or was_declined(result.get("content"), spec.name):
            return
        plan = self.plan
        assert plan is not None
        total = len(plan.steps)
        step = next((n for n in range(1, total + 1) if n not in self.done), total)
        self.failed.add(step)
        answer = await self._ask(
            f"A step of the plan failed: {spec.human_label()} did not work (step {step} of "
            f"{total}: {_sentence(plan.steps[step - 1])}) Should the agent try to fix it and go "
            "on, or stop the plan here?",
            choices=["Fix it and go on", "Stop the plan here"],
            context=None,
            default=None,
        )
        if answer is None or str(answer).strip().lower().startswith("stop"):
            self.phase, self.stopped_at = "planning", step
            note = (
                f"This failed, and the person stopped the plan at step {step}. Do not change or "
                "run anything more; tell them in a sentence or two what ran and what did not."
            )
        else:
            note = f"This failed; the person answered: {answer}. Fix it and go on with the plan."
        content = result.get("content")
        blocks = (
            [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
        )
        result["content"] = [*blocks, {"type": "text", "text": note}]

    # -- the one confirmation -----------------------------------------------------------------
    async def _confirm(self, plan: Plan) -> Outcome:
        session, policy = self.session, self.chat.approval
        path = self._write(plan)
        total = plural(len(plan.steps), "step")
        listed = " ".join(f"{n}. {_sentence(s)}" for n, s in enumerate(plan.steps, 1))
        timeout = policy.timeout_for("high")
        session.change_state(
            "awaiting_input",
            Summary(
                normal=f"Waiting for your decision on the plan: {plan.summary}", terse="Plan ready."
            ),
        )
        choices = "run it asking only for code the risk scan flags, run it asking before each step, keep planning with a comment, or reject it"
        event = session.emit(
            AwaitingConfirmation(
                action=f"Follow this plan, {total}: {_sentence(plan.summary)} {listed}",
                consequence="Nothing has changed yet. Approving lets the agent make these changes "
                "and run this code for this request only; code the risk scan flags still asks.",
                reply_token=new_reply_token(),
                timeout_seconds=timeout,
                default_decision="reject",
                risk_level="medium",
                irreversible=False,
                reversibility="reversible_with_effort",
                allowed_replies=("accept", "reject"),
                extra_context={
                    "plan": {
                        "summary": plan.summary,
                        "steps": list(plan.steps),
                        "file": path,
                        "choices": [dict(choice) for choice in CHOICES],
                    }
                },
                summary=Summary(
                    normal=f"The agent proposes a plan, {total}: {_sentence(plan.summary)} {listed} "
                    f"Choose: {choices}.",
                    terse=f"Plan, {total}: {plan.summary}",
                    detailed=f"The agent proposes a plan, {total}: {_sentence(plan.summary)} {listed} "
                    f"Choose: {choices}. If nobody answers, it is rejected.",
                ),
            )
        )
        request = self.broker.open_confirmation(
            event, modifications={"plan_choice": frozenset({"ask_each_step"})}
        )
        return await self._wait(request)

    def _after(self, normal: str, terse: str) -> None:
        self.session.change_state("thinking", Summary(normal=normal, terse=terse))

    def _progress(self, step: int, total: int, said: str) -> None:
        self.session.emit(
            ProgressUpdated(
                progress=Progress(
                    percent=round(100 * len(self.done) / total, 1),
                    step=step,
                    total_steps=total,
                    description=said[:1000],
                ),
                urgency="normal",
                summary=Summary(normal=said, terse=f"Step {step} of {total} done."),
            )
        )

    # -- the plan's file ----------------------------------------------------------------------
    def _files(self) -> PlanFiles | None:
        files = self.chat.services.plans
        return files if isinstance(files, PlanFiles) else None

    def _write(self, plan: Plan) -> str | None:
        files = self._files()
        if files is None:
            return None
        self.file_name = self.file_name or files.new_name()
        try:
            return files.write(self.file_name, plan)
        except OSError:
            log.warning("the plan could not be written to its file", exc_info=True)
            return None

    def _saved(self, proposed: Plan) -> Plan | None:
        """The plan as the person saved it, or ``None`` when there is no file to read."""
        files = self._files()
        if files is None or self.file_name is None:
            return None
        text = files.read(self.file_name)
        if text is None:
            return None
        return Plan.from_markdown(text, fallback_summary=proposed.summary)

    async def _cells_by_number(self, steps: list[str]) -> list[str]:
        """Cell ids the model wrote become "cell N", as the person knows the cells."""
        numbers_of = self.chat.services.cell_numbers
        if numbers_of is None or not self.chat.notebook_path:
            return steps
        try:
            numbers = await numbers_of(self.chat.notebook_path)
        except Exception:  # noqa: BLE001 - ids stay as written; the plan still goes out
            return steps
        if not numbers:
            return steps

        def named(match: re.Match[str]) -> str:
            number = numbers.get(match.group(0))
            return f"cell {number}" if number else match.group(0)

        return [re.sub(r"\bcell (cell \d+)", r"\1", _CELL_ID.sub(named, s)) for s in steps]

    # -- the last words -----------------------------------------------------------------------
    def closing_note(self) -> str | None:
        """Which steps ran, for the session's last words; ``None`` when no plan was proposed."""
        plan = self.plan
        if plan is None:
            return None
        if self.rejected and not self.done:
            return "The plan was not approved; nothing was changed."
        total = len(plan.steps)
        if len(self.done) == total:
            return f"All {plural(total, 'step')} of the plan ran."
        if not self.done and self.phase == "planning" and self.stopped_at is None:
            return None  # still planning (keep planning, then the model stopped)
        missing = _numbers([n for n in range(1, total + 1) if n not in self.done])
        said = f"Of the plan's {plural(total, 'step')}, " + (
            f"{_numbers(sorted(self.done))} ran; {missing} did not." if self.done else "none ran."
        )
        if self.failed:
            said += f" {_numbers(sorted(self.failed)).capitalize()} failed."
        return said


def _choice(outcome: Outcome) -> PlanChoice:
    if outcome.resolution != "reply":
        return "reject"
    if outcome.accepted:
        modified = outcome.modified or {}
        return "ask_each_step" if modified.get("plan_choice") == "ask_each_step" else "run"
    return "keep_planning" if (outcome.rationale or "").strip() else "reject"


def _approved_words(plan: Plan, each: bool, edited: bool) -> str:
    how = "asking you before each step" if each else "asking only for code the risk scan flags"
    yours = " It follows your edited plan." if edited else ""
    return f"Plan approved: the agent runs its {plural(len(plan.steps), 'step')}, {how}.{yours}"


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text.endswith((".", "!", "?", ":")) else f"{text}."


def _numbers(steps: list[int]) -> str:
    """[1, 2, 4] -> "steps 1, 2 and 4"; [3] -> "step 3"."""
    if len(steps) == 1:
        return f"step {steps[0]}"
    return "steps " + ", ".join(map(str, steps[:-1])) + f" and {steps[-1]}"
