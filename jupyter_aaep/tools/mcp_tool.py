"""One tool of one of the user's MCP servers, as the agent's tool: how a call is described to
the person (and when it is the question whether to trust the server's claims), and how the
server's answer becomes a result (text, images within the figure budget, paced progress).

The server and its session are :class:`~.mcp_tools._Server`'s; a tool only holds it.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from ..aaep.redaction import mask_secrets, redact_arguments
from ..agent.tools import ActionPreview, ToolContext, ToolResult, ToolSpec
from ..errors import ToolError
from ..notebook._figures import ImageBudget, prepare_image
from ..notebook.progress import ProgressReading
from ..notebook.progress_pacing import ProgressPacer, progress_phrase, value_text
from ..words import duration_words, plural
from ._mcp_claims import ALWAYS_FLAG, TRUST_FLAG, trust_consequence, trust_question
from .mcp_trust import trust_key

__all__ = ["MCPTool", "never_called"]

RESULT_CHARS = 20_000
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
MAX_IMAGE_BYTES = 5 * 1024 * 1024


def never_called(**_: Any) -> Any:  # pragma: no cover - MCPTool.call replaces it
    raise ToolError("An MCP tool runs in its server.")


@dataclass
class MCPTool(ToolSpec):
    """One tool of one MCP server; calling it calls the server."""

    server: Any = None
    remote_name: str = ""
    title: str = ""
    open_world: bool = True
    images: ImageBudget = field(default_factory=ImageBudget)
    """How many of a result's images reach the model, and how large (the server's settings)."""
    claims_read_only: bool = False
    """The server says the tool changes nothing: believed only once a person trusts the server."""

    def trust_fingerprint(self) -> str:
        """What a person's approval of the trust question is bound to: this server as configured."""
        return f"mcp-trust:{trust_key(self.server.config)}"

    async def describe(self, ctx: ToolContext, arguments: dict[str, Any]) -> ActionPreview:
        label = self.human_label()
        redacted = redact_arguments(arguments).summary()
        outside = " It reaches outside this machine." if self.open_world else ""
        shown = mask_secrets(json.dumps(arguments, indent=2, ensure_ascii=False))
        name = self.server.config.name
        extra = {"code": shown, "tool_server": name, "open_world": self.open_world}
        if self.claims_read_only and not self.server.trusts_claims():
            # Asked as the trust question; flagged, so no approval mode answers it for a person,
            # and medium risk, so silence rejects it.
            question = trust_question(name, self.title)
            return ActionPreview(
                summary=question,
                terse=f"Trust the {name} server?",
                detail=f"{question} It would run {label}, with {redacted}.{outside}",
                action=question,
                consequence=trust_consequence(name),
                extra_context={**extra, "trust_question": True},
                fingerprint=self.trust_fingerprint(),
                risk_level="medium",
                risk_flags=(TRUST_FLAG,),
                requires_confirmation=True,
                args_summary=redacted,
            )
        always = self.server.config.always_ask
        return ActionPreview(
            summary=f"Using {label}.{outside}",
            terse=f"{label}.",
            detail=f"Using {label}, with {redacted}.{outside}",
            action=f"Use {label}, with the arguments shown.",
            consequence=(
                "What it does is up to that server; the agent cannot undo it."
                if self.irreversible
                else None
            ),
            extra_context=extra,
            # "approval": "always" means a person, in every mode (flagged: auto mode asks too).
            risk_flags=(ALWAYS_FLAG,) if always else (),
            requires_confirmation=True if always else (False if self.claims_read_only else None),
            args_summary=redacted,
        )

    async def call(self, ctx: ToolContext, arguments: dict[str, Any]) -> ToolResult:
        # A server may send progress many times a second; it is paced like a cell's run (at
        # most one event per ``progress_min_gap``, milestones announced), not passed through.
        label = self.human_label()
        pacer = ProgressPacer(time.monotonic(), min_gap=self.server.progress_min_gap)

        def progress(done: float, total: float | None, message: str | None) -> None:
            percent = min(100.0, round(100 * done / total, 1)) if total else None
            reading = ProgressReading(percent=percent, current=done, total=total)
            beat = pacer.tick(time.monotonic(), reading)
            if beat is None:
                return
            told = mask_secrets(message)[:200] if message else ""
            phrase = told or progress_phrase(reading)
            said = (
                f"{label}: {phrase}."
                if phrase
                else f"{label} is still working after {duration_words(beat.elapsed)}."
            )
            integral = total is not None and float(done).is_integer() and float(total).is_integer()
            ctx.report_progress(
                told or value_text(reading, beat.elapsed),
                percent=percent,
                step=max(1, int(done)) if integral and done else None,
                total_steps=max(1, int(total)) if integral and total else None,
                announce=beat.announce,
                summary=said,
            )

        if self.claims_read_only and ctx.approved_fingerprint == self.trust_fingerprint():
            self.server.grant_trust()  # a person answered the trust question with yes
        result = await self.server.call(self.remote_name, arguments, progress, self.title)
        return self._result(result)

    def _result(self, result: Any) -> ToolResult:
        blocks: list[dict[str, Any]] = []
        texts: list[str] = []
        images = dropped = 0
        for item in result.content:
            kind = getattr(item, "type", "")
            if kind == "text":
                texts.append(item.text)
            elif kind == "image":
                size = len(item.data) * 3 // 4
                if (
                    item.mime_type not in IMAGE_TYPES
                    or size > MAX_IMAGE_BYTES
                    or images >= self.images.max_images
                ):
                    dropped += 1
                    continue
                # Checked, and downscaled past the budget, exactly like a notebook's figures.
                block, note, _ = prepare_image(item.mime_type, item.data, self.images)
                if block is None:
                    texts.append(f"[{note}]")
                    continue
                images += 1
                blocks.append(block)
            elif kind == "resource_link":
                texts.append(f"[A link to {item.uri}]")
            elif kind == "resource":
                resource = item.resource
                texts.append(getattr(resource, "text", None) or f"[A resource at {resource.uri}]")
            else:
                texts.append(f"[Content of type {kind} that the agent cannot read.]")
        if not texts and not blocks and result.structured_content is not None:
            texts.append(json.dumps(result.structured_content, ensure_ascii=False))
        text = "\n".join(texts)
        if len(text) > RESULT_CHARS:
            text = text[:RESULT_CHARS] + f"\n[… cut: the result has {len(text):,} characters.]"
        if dropped:
            text += f"\n[{dropped} image(s) left out: too many, too large or of a kind the model cannot read.]"
        label = self.human_label()
        if result.is_error:
            reason = " ".join(text.split())[:300] or "no details"
            return ToolResult(
                content=text or "The tool failed.",
                is_error=True,
                summary=f"{label} failed: {reason}",
                error_message=reason,
            )
        heard = f"Finished: {label}." + (
            f" It returned {plural(images, 'image')}." if images else ""
        )
        content: str | list[dict[str, Any]] = text or "Done."
        if blocks:
            content = ([{"type": "text", "text": text}] if text else []) + blocks
        return ToolResult(content=content, summary=heard)
