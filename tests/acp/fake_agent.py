"""A scripted ACP agent on stdio (newline-delimited JSON-RPC), replaying recorded messages.

``python fake_agent.py LOG`` appends every message it receives to LOG (one JSON a line). Its
prompt streams a chunk, the plan, a Bash call and asks permission for it; the answer decides the
end (each prompt reports the recorded usage, its cost a running total as the adapter's is): allowed → the call completes, refused → failed, cancelled (or a ``session/cancel``) → the
prompt answers ``cancelled``. It starts a child (``sleep``) to show that a stop reaches children.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import recorded

log = open(sys.argv[1], "a", buffering=1)  # noqa: SIM115
child = subprocess.Popen(["sleep", "300"])
lock = threading.Lock()
waiting: dict[int, threading.Event] = {}
answers: dict[int, object] = {}
cancelled = threading.Event()
prompts = [0]
PROMPT_USAGE = {
    "inputTokens": 10,
    "outputTokens": 5,
    "cachedReadTokens": 100,
    "cachedWriteTokens": 20,
}


def send(message: dict) -> None:
    with lock:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def notify(body: dict) -> None:
    send({"jsonrpc": "2.0", "method": "session/update", "params": recorded.update(body)})


def prompt(number: int) -> None:
    for chunk in recorded.CHUNKS:
        notify(chunk)
    notify(recorded.PLAN)
    notify(recorded.BASH_PENDING)
    notify(recorded.BASH_INPUT)
    asked = threading.Event()
    waiting[900] = asked
    send(
        {
            "jsonrpc": "2.0",
            "id": 900,
            "method": "session/request_permission",
            "params": recorded.BASH_PERMISSION,
        }
    )
    asked.wait()
    outcome = (answers.get(900) or {}).get("outcome", {})  # type: ignore[union-attr]
    if outcome.get("outcome") == "cancelled" or cancelled.is_set():
        notify(recorded.BASH_REFUSED)
        send({"jsonrpc": "2.0", "id": number, "result": {"stopReason": "cancelled"}})
        return
    if outcome.get("optionId") == "allow":
        notify({**recorded.BASH_INPUT, "status": "in_progress"})
        notify(recorded.BASH_DONE)
        notify(recorded.PLAN_DONE)
    else:
        notify(recorded.BASH_REFUSED)
    notify(
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "All done."}}
    )
    prompts[0] += 1
    cost = {"amount": recorded.USAGE["cost"]["amount"] * prompts[0], "currency": "USD"}
    notify({**recorded.USAGE, "cost": cost})
    result = {"stopReason": "end_turn", "usage": {**PROMPT_USAGE, "totalTokens": 135}}
    send({"jsonrpc": "2.0", "id": number, "result": result})


for line in sys.stdin:
    message = json.loads(line)
    log.write(json.dumps(message) + "\n")
    method = message.get("method")
    if method == "initialize":
        send(
            {
                "jsonrpc": "2.0",
                "id": message["id"],
                "result": {"protocolVersion": 1, "agentCapabilities": {}},
            }
        )
    elif method == "session/new":
        send({"jsonrpc": "2.0", "id": message["id"], "result": {"sessionId": recorded.SESSION}})
    elif method == "session/prompt":
        threading.Thread(target=prompt, args=(message["id"],), daemon=True).start()
    elif method == "session/cancel":
        cancelled.set()
    elif "id" in message and method is None:
        answers[message["id"]] = message.get("result")
        event = waiting.pop(message["id"], None)
        if event is not None:
            event.set()
child.wait()
