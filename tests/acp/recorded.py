"""ACP messages recorded from ``@zed-industries/claude-agent-acp`` 0.23.1 (Claude Code 2.1.83)
against the scripted Messages API (DESIGN §16), trimmed to what the client reads; and a small
scripted agent that replays them over stdio, for tests that need a process without npm."""

from __future__ import annotations

from typing import Any

SESSION = "852326bc-bd1b-4de4-b50e-72c997a85cc7"
BASH = "toolu_01lbSL0nerlfzueiOWutzoOT"
WRITE = "toolu_01Wr1teNotesXyZ"


def update(body: dict[str, Any]) -> dict[str, Any]:
    return {"sessionId": SESSION, "update": body}


CHUNKS = [
    {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": ""}},
    {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Planni"}},
    {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "ng."}},
]
PLAN = {
    "sessionUpdate": "plan",
    "entries": [
        {"content": "Look", "status": "completed", "priority": "medium"},
        {"content": "Run", "status": "in_progress", "priority": "medium"},
    ],
}
PLAN_DONE = {
    "sessionUpdate": "plan",
    "entries": [
        {"content": "Look", "status": "completed", "priority": "medium"},
        {"content": "Run", "status": "completed", "priority": "medium"},
    ],
}
BASH_PENDING = {
    "_meta": {"claudeCode": {"toolName": "Bash"}},
    "toolCallId": BASH,
    "sessionUpdate": "tool_call",
    "rawInput": {},
    "status": "pending",
    "title": "Terminal",
    "kind": "execute",
    "content": [],
}
BASH_INPUT = {
    "_meta": {"claudeCode": {"toolName": "Bash"}},
    "toolCallId": BASH,
    "sessionUpdate": "tool_call_update",
    "rawInput": {"command": "touch made.txt", "description": "Make a file"},
    "title": "touch made.txt",
    "kind": "execute",
    "content": [{"type": "content", "content": {"type": "text", "text": "Make a file"}}],
}
BASH_PERMISSION = {
    "options": [
        {"kind": "allow_always", "name": "Always Allow", "optionId": "allow_always"},
        {"kind": "allow_once", "name": "Allow", "optionId": "allow"},
        {"kind": "reject_once", "name": "Reject", "optionId": "reject"},
    ],
    "sessionId": SESSION,
    "toolCall": {
        "toolCallId": BASH,
        "rawInput": {"command": "touch made.txt", "description": "Make a file"},
        "title": "touch made.txt",
        "kind": "execute",
        "content": [{"type": "content", "content": {"type": "text", "text": "Make a file"}}],
    },
}
BASH_REFUSED = {
    "_meta": {"claudeCode": {"toolName": "Bash"}},
    "toolCallId": BASH,
    "sessionUpdate": "tool_call_update",
    "status": "failed",
    "rawOutput": "User refused permission to run tool",
    "content": [
        {
            "type": "content",
            "content": {"type": "text", "text": "```\nUser refused permission to run tool\n```"},
        }
    ],
}
BASH_DONE = {
    "_meta": {"claudeCode": {"toolName": "Bash"}},
    "toolCallId": BASH,
    "sessionUpdate": "tool_call_update",
    "status": "completed",
    "rawOutput": "",
}
WRITE_NOTEBOOK_PERMISSION = {
    "options": BASH_PERMISSION["options"],
    "sessionId": SESSION,
    "toolCall": {
        "_meta": {"claudeCode": {"toolName": "Write"}},
        "toolCallId": WRITE,
        "rawInput": {"file_path": "/srv/work/analysis.ipynb", "content": "{}"},
        "title": "Write /srv/work/analysis.ipynb",
        "kind": "edit",
    },
}
NOTEBOOK_TOOL_PERMISSION = {
    "options": BASH_PERMISSION["options"],
    "sessionId": SESSION,
    "toolCall": {
        "_meta": {"claudeCode": {"toolName": "mcp__notebook__run_cell"}},
        "toolCallId": "toolu_01RunCellAbc",
        "rawInput": {"notebook_path": "a.ipynb", "cell_id": "c1"},
        "title": "mcp__notebook__run_cell",
        "kind": "other",
    },
}
USAGE = {
    "sessionUpdate": "usage_update",
    "used": 23528,
    "size": 200000,
    "cost": {"amount": 0.10326225, "currency": "USD"},
}
