"""``%aaep`` without a server: plain IPython, ``{name}`` references, the status text, the view hand-off.

The magic in real kernels of a real server is tested in ``live/test_live_magic.py``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import Any

import pytest

from jupyter_aaep.kernel import magic, runtime


def ipython(code: str, **env: str) -> str:
    """Run *code* in a plain ``ipython`` (no kernel, no server); what it printed, both streams
    in the order a terminal shows them."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("AAEP_")}
    environ.update(env)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "IPython",
            "--quick",
            "--no-banner",
            "--colors=nocolor",
            "--HistoryManager.enabled=False",
            "-c",
            code,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=environ,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout
    return done.stdout


def test_import_is_light() -> None:
    probe = (
        "import sys, jupyter_aaep; print(sorted(m for m in "
        "('IPython', 'tornado', 'jupyter_server', 'ipywidgets', 'pandas') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"


def test_plain_ipython_says_what_is_missing() -> None:
    # One IPython (a start costs 2-4 s) for the cases without the variables; each case's
    # output is read between markers, so each check sees only its own lines.
    printed = ipython(
        "%load_ext jupyter_aaep\nprint('=1=')\n%aaep status\n%aaep plot it\nprint('=2=')\n"
        "%aaep --help\nprint('=3=')\n"
        # A request may start with a command's word: only the word alone is the command.
        "%aaep stop the {timer} flickering\n%aaep tools for {cleaning}\n"
    )
    assert "Traceback" not in printed
    _, not_set, helped, words = re.split(r"=[123]=\n", printed)
    assert not_set.count("AAEP_SERVER_URL and AAEP_KERNEL_SECRET are not set") == 2
    assert "%aaep tools --remove NAME" in helped
    assert (
        "There is no variable named 'timer'" in words
        and "There is no variable named 'cleaning'" in words
    )
    printed = ipython(
        "%load_ext jupyter_aaep\n%aaep status\n",
        AAEP_SERVER_URL="http://127.0.0.1:1/",
        AAEP_KERNEL_SECRET="x",
    )
    assert "%aaep works in a Jupyter kernel, and this is plain IPython" in printed


def test_aaep_tool_in_plain_ipython_stays_usable() -> None:
    code = (
        "%load_ext jupyter_aaep\nfrom jupyter_aaep import aaep_tool\n"
        "@aaep_tool\ndef twice(x: int) -> int:\n    '''Double x.'''\n    return 2 * x\n\nprint(twice(21))\n"
        "from jupyter_aaep.kernel import runtime\nprint(runtime.call_tool_json('twice', '{\"x\": 4}'))\n"
        "%unload_ext jupyter_aaep\n"
        "@aaep_tool\ndef later() -> None:\n    '''Later.'''\n\nprint(sorted(t.name for t in runtime.registered()))\n"
    )
    printed = ipython(code)
    assert "twice is defined, but the agent cannot call it: %aaep cannot reach" in printed
    assert "42" in printed and '{"ok": true, "result": 8, "summary": null}' in printed
    assert "['twice']" in printed  # after %unload_ext, tools are no longer picked up


def test_references() -> None:
    assert magic.references("Compare {df_2024} with {df.columns} and {df_2024}") == [
        "df_2024",
        "df.columns",
    ]
    assert magic.references("a dict literal {{'k': 1}} and {x}") == ["x"]
    assert magic.references("no {1bad} {a b} refs") == []


def test_build_context() -> None:
    context = magic.build_context("Plot {sales} by {months}", {"sales": [1, 2, 3], "months": "JFM"})
    assert context == [
        {"name": "sales", "description": "list with 3 items: [1, 2, 3]"},
        {"name": "months", "description": "str of 3 characters: 'JFM'"},
    ]
    with pytest.raises(ValueError, match=r"\{nope\}: There is no variable named 'nope'.*not sent"):
        magic.build_context("Plot {nope}", {})
    many = " ".join(f"{{v{i}}}" for i in range(9))
    with pytest.raises(ValueError, match="refers to 9 variables; at most 8"):
        magic.build_context(many, {f"v{i}": i for i in range(9)})


def test_status_text() -> None:
    text = magic._status_text(
        {
            "notebook_path": "sales.ipynb",
            "chat_id": "chat_1",
            "status": "awaiting",
            "model_configured": False,
            "model_problem": "No ANTHROPIC_API_KEY is set.",
            "tools": ["load_sales"],
            "pending": [{"type": "aaep:agent.awaiting.confirmation", "summary": "Run cell 3?"}],
        }
    )
    assert text.splitlines() == [
        "Notebook: sales.ipynb.",
        "Chat: chat_1.",
        "The agent is waiting for your answer.",
        "The model is not ready: No ANTHROPIC_API_KEY is set.",
        "Kernel tools: load_sales.",
        "Waiting for your answer (1):",
        "  Run cell 3?",
    ]


class ViewWithContext:
    def __init__(self, client: Any, request_text: str, *, context: Any = None) -> None:
        self.args = (client, request_text, context)


class ViewWithout:
    def __init__(self, client: Any, request_text: str) -> None:
        self.args = (client, request_text)


def test_the_view_gets_the_context_or_the_magic_sends_it() -> None:
    context = [{"name": "df", "description": "a frame"}]
    assert magic._make_view(ViewWithContext, "client", "ask", context).args == (
        "client",
        "ask",
        context,
    )
    assert magic._make_view(ViewWithout, "client", "ask", []).args == ("client", "ask")
    assert (
        magic._make_view(ViewWithout, "client", "ask", context) is None
    )  # the magic sends it itself


def test_package_tools_are_not_kernel_tools() -> None:
    from jupyter_aaep.agent.tools import make_tool

    def probe() -> None:
        """A probe."""

    probe.__module__ = "jupyter_aaep.tools.notebook"
    spec = make_tool(probe)  # no hook installed in this process
    magic.on_tool_defined(spec)
    assert runtime.get("probe") is None
