"""The offline demo model: a scripted stand-in for Claude that uses the real notebook tools.

It reads the conversation like the real model would: it first reads the notebook
(``get_notebook_state``), then picks its next step from the request and the tool results so
far. It handles what people try first, in any notebook: explain the notebook, plot its data,
show the first rows or summarise a dataframe, fix the error in the last failed cell, and it
asks which of those to do when it gets a question it cannot answer. A newcomer can so try the
whole product (streaming, tool steps, approvals, questions, announcements) without an account:
``scripts/start --offline``. When it cannot help it says what it is and what it can do, so
nobody mistakes it for the real thing.
"""

from __future__ import annotations

import ast
import difflib
import json
import re
from typing import Any

from ..agent.data_blocks import unwrap
from ..words import noun
from ._demo_notebook import CellInfo, NotebookView, parse_state
from ._wire import ToolUse, Turn

__all__ = ["HELP", "MODEL_ID", "MODEL_LABEL", "demo_model", "request_and_steps", "result_text"]

MODEL_ID = "aaep-offline-demo"
"""The name the offline demo model goes by (``c.AAEPExtension.model``): the model picker shows
it instead of Claude's names, and it has no price (``agent.usage.DEFAULT_PRICES``)."""
MODEL_LABEL = "Offline demo model"

_PACE = 0.015  # seconds between streamed events: slow enough to see and hear the stream

WHAT_I_AM = (
    "I am the offline demo model, a scripted stand-in for Claude: I follow a few fixed recipes "
    "and do not really understand your request."
)
CAN_DO = (
    "I can: *explain this notebook*, *plot the data* (or a column you name), "
    "*load the data and show the first rows*, *summarise the dataframe*, *fix the error*, "
    "and in the demo notebook *convert the temperatures to Fahrenheit* or *summarise the readings*. "
    "It calls your own kernel functions (@aaep_tool) when you write the call, as in "
    '*compare {sales_2024} with quarterly_sales("north")*. '
    "Start JupyterLab with ANTHROPIC_API_KEY set to talk to Claude."
)
HELP = f"{WHAT_I_AM} {CAN_DO}"

CLARIFY_QUESTION = "I cannot answer free questions. Which of these should I do instead?"
CLARIFY_CHOICES = [
    "Explain this notebook",
    "Plot the data",
    "Show the first rows",
    "Summarise the data",
    "Fix the last error",
]
_FILE = re.compile(r"[\w./-]+\.(?:csv|tsv|txt|xlsx?|json|parquet|feather)\b", re.IGNORECASE)
_SAMPLE = "[3, 1, 4, 1, 5, 9, 2, 6]"


# -- reading the conversation ---------------------------------------------------------------------


def _tool_results(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]


def result_text(result: dict[str, Any]) -> str:
    """A tool result's text as the demo model reasons over it: inside its data block."""
    content = result.get("content")
    if isinstance(content, str):
        return unwrap(content)
    if isinstance(content, list):
        blocks = [b for b in content if isinstance(b, dict)]
        if (
            len(blocks) >= 2
            and str(blocks[0].get("text", "")).startswith("<data source=")
            and blocks[-1].get("text") == "</data>"
        ):
            blocks = blocks[1:-1]
        return " ".join(str(b.get("text", "")) for b in blocks)
    return ""


_SAME_AS = re.compile(r"^\[Unchanged: identical to the earlier result of \S+ \(call ([^)]+)\)")


def _follow_references(
    messages: list[dict[str, Any]], steps: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Steps with "[Unchanged: identical to the earlier result … (call toolu_…)]" replaced by
    that earlier result, as a real model reads it (the agent sends a result it already sent,
    such as an unchanged notebook, only as such a reference)."""
    earlier = {str(r.get("tool_use_id")): r for m in messages for r in _tool_results(m)}
    resolved = []
    for step in steps:
        for _ in range(3):  # a reference never points at another, but do not trust that blindly
            same = _SAME_AS.match(result_text(step))
            original = earlier.get(same.group(1)) if same else None
            if original is None or original is step:
                break
            step = {**step, "content": original.get("content")}
        resolved.append(step)
    return resolved


def request_and_steps(messages: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]], set[str]]:
    """The latest user request, the tool results that answered it so far (references to
    unchanged earlier results followed), and the tools used."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message["role"] != "user":
            continue
        content = message["content"]
        texts = (
            [content]
            if isinstance(content, str)
            else [
                b.get("text", "")
                for b in content
                if isinstance(b, dict) and b.get("type") == "text"
            ]
        )
        if any(t.strip() for t in texts):
            later = messages[index + 1 :]
            steps = _follow_references(messages, [r for m in later for r in _tool_results(m)])
            used = {
                str(b.get("name"))
                for m in later
                if m["role"] == "assistant" and isinstance(m["content"], list)
                for b in m["content"]
                if isinstance(b, dict) and b.get("type") == "tool_use"
            }
            return " ".join(texts), steps, used
    return "", [], set()


def _turn(text: str, *tools: ToolUse) -> Turn:
    return Turn(text=text, tool_uses=list(tools), chunk_delay=_PACE, text_chunk_size=4)


def _new_cell(text: str, source: str, cell_type: str = "code") -> Turn:
    return _turn(text, ToolUse("create_cell", {"source": source, "cell_type": cell_type}))


# -- what the request asks for --------------------------------------------------------------------

_INTENTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("help", ("what can you do", "who are you", "what are you", "what do you do")),
    ("fahrenheit", ("fahrenheit", "convert")),
    ("fix", ("fix", "error", "debug", "broken", "failed", "failing", "traceback", "not working")),
    ("plot", ("plot", "chart", "graph", "visuali", "draw", "histogram")),
    (
        "explain",
        (
            "explain",
            "what does this",
            "what does the notebook",
            "what is this notebook",
            "walk me through",
            "describe this notebook",
            "describe the notebook",
            "overview",
            "tell me about",
            "what is in this notebook",
            "what's in this notebook",
        ),
    ),
    (
        "head",
        (
            "first rows",
            "first few",
            "first 5",
            "head",
            "show the data",
            "show me the data",
            "load",
            "preview",
            "peek",
        ),
    ),
    ("describe", ("describe", "statistic", "dataframe", "data frame", "summar")),
    ("ask", ("question", "ask me")),
)
_QUESTION_WORDS = (
    "what",
    "why",
    "how",
    "which",
    "who",
    "when",
    "where",
    "can ",
    "could",
    "is ",
    "are ",
    "does",
    "do ",
    "should",
)


def intent_of(text: str) -> str | None:
    """The recipe a request asks for (the first that matches), ``question`` for any other
    question, or ``None``."""
    wants = " ".join(text.lower().split())
    if wants.strip(" ?!.") in ("help", "help me", "hello", "hi"):
        return "help"
    for intent, keys in _INTENTS:
        # A key starts a word: "head" is not in "ahead", nor "load" in "download".
        if any(re.search(rf"(?<![a-z]){re.escape(key)}", wants) for key in keys):
            return intent
    if wants.endswith("?") or wants.startswith(_QUESTION_WORDS):
        return "question"
    return None


_STOP_WORDS = frozenset(
    {
        "the",
        "and",
        "for",
        "with",
        "from",
        "this",
        "that",
        "what",
        "into",
        "please",
        "can",
        "you",
        "plot",
        "show",
        "chart",
        "graph",
        "draw",
        "load",
        "first",
        "rows",
        "summarise",
        "summarize",
        "describe",
        "explain",
        "notebook",
        "column",
        "columns",
    }
)


def _words(text: str) -> list[str]:
    """The words of a request that may name data (``plot the temperatures`` -> temperatures)."""
    return [w for w in re.findall(r"[a-z_][a-z0-9_]{2,}", text.lower()) if w not in _STOP_WORDS]


def _matches(name: str, words: list[str]) -> bool:
    """ "temperature" matches "temperatures" and the other way round."""
    name = name.lower()
    return any(w.startswith(name) or name.startswith(w) for w in words)


def _demo_data(state_text: str) -> bool:
    """Whether the notebook is the demo notebook's weekly climate readings."""
    return "temperatures" in state_text and "humidity" in state_text and "readings" in state_text


# -- explaining -------------------------------------------------------------------------------------


def _names(items: tuple[str, ...] | list[str], limit: int = 5) -> str:
    shown = list(items[:limit])
    if len(items) > limit:
        shown.append(f"{len(items) - limit} more")
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]


def _describe_markdown(cell: CellInfo) -> str:
    first = next(
        (line.strip().lstrip("#").strip() for line in cell.source.splitlines() if line.strip()), ""
    )
    if not first:
        return f"Cell {cell.number} is an empty {cell.cell_type} cell."
    if len(first) > 90:
        first = first[:89] + "…"
    return f"Cell {cell.number} is text: “{first}”."


def describe_cell(cell: CellInfo, known: frozenset[str] = frozenset()) -> str:
    """One or two sentences about a cell, from its source, its header and its outputs;
    ``known`` are the names other cells set (so "uses x from another cell" can be said)."""
    if not cell.is_code:
        return _describe_markdown(cell)
    if not cell.source.strip():
        return f"Cell {cell.number} is an empty code cell."
    facts = cell.facts
    state = "ran" if cell.ran else "has not run yet" if "not run" in cell.status else "has outputs"
    parts = []
    if facts.imports:
        parts.append(f"imports {_names(facts.imports)}")
    if facts.files:
        parts.append(f"reads {_names(facts.files)}")
    if facts.dataframes:
        parts.append(f"builds the dataframe {_names(facts.dataframes)}")
    others = [n for n in facts.defines if n not in facts.dataframes]
    if others:
        parts.append(f"sets {_names(others)}")
    if facts.functions:
        parts.append(
            f"defines the {noun(len(facts.functions), 'function')} {_names(facts.functions)}"
        )
    if facts.classes:
        parts.append(
            f"defines the class{'es' if len(facts.classes) > 1 else ''} {_names(facts.classes)}"
        )
    borrowed = [n for n in facts.uses if n in known]
    if borrowed:
        parts.append(f"uses {_names(borrowed)} from other cells")
    if facts.plots:
        parts.append("draws a plot")
    if facts.prints:
        parts.append("prints results")
    if not parts:
        parts.append("computes something" if facts.parsed else "holds code I could not parse")
    sentence = f"Cell {cell.number} (code, {state}) " + _names(parts, limit=8) + "."
    if cell.error:
        sentence += f" Its last run failed with {cell.error}"
        sentence += "" if sentence.endswith(".") else "."
    else:
        shown = cell.first_output_lines(1)
        if shown:
            sentence += f" Its output starts with: {shown[0][:120]}"
            sentence += "" if sentence.endswith(".") else "."
    return sentence


def explain(view: NotebookView, *, limit: int = 12) -> str:
    if not view.cells:
        count = f" It has {view.total} cells." if view.total else ""
        return f"I could not see any cells in the notebook.{count} {WHAT_I_AM}"
    code = len(view.code_cells)
    head = (
        f"Here is what I read in {view.path or 'this notebook'}: {len(view.cells)} cells, "
        f"{code} of them code."
    )
    known = frozenset(view.all_names())
    lines = [describe_cell(c, known) for c in view.cells[:limit]]
    if len(view.cells) > limit:
        lines.append(f"And {len(view.cells) - limit} more cells after those.")
    failed = view.last_failed()
    tail = f"Cell {failed.number} shows an error; ask me to *fix the error*." if failed else ""
    note = "(I am the offline demo model: this comes from reading the code, not from understanding it.)"
    return "\n\n".join(
        [head, "\n".join(f"- {line}" for line in lines), *([tail] if tail else []), note]
    )


# -- plotting and showing data ----------------------------------------------------------------------


def _chart_code(expression: str, label: str, comment: str) -> str:
    """A cell that plots ``expression`` with matplotlib, or draws it as text without it."""
    return (
        f"# {comment} (added by the offline demo model)\n"
        f"values = list({expression})\n"
        "try:\n"
        "    import matplotlib.pyplot as plt\n"
        "except ImportError:  # no matplotlib in this kernel: a text chart instead\n"
        "    plt = None\n"
        "if plt is not None:\n"
        '    plt.plot(range(1, len(values) + 1), values, marker="o")\n'
        f"    plt.title({label!r})\n"
        '    plt.xlabel("position")\n'
        f"    plt.ylabel({label!r})\n"
        "    plt.show()\n"
        "else:\n"
        f'    print({label!r}, "(install matplotlib for a picture):")\n'
        "    low, high = min(values), max(values)\n"
        "    for number, value in enumerate(values, 1):\n"
        '        bar = "#" * round(1 + 29 * (value - low) / ((high - low) or 1))\n'
        '        print(f"{number:>3}  {value:>8}  {bar}")\n'
    )


def _frame_chart_code(frame: str, words: list[str]) -> str:
    return (
        f"# Plot {frame}: the columns named in the request, else every numeric column "
        "(added by the offline demo model)\n"
        f"wanted = {words!r}\n"
        f'numbers = {frame}.select_dtypes("number")\n'
        "named = [c for c in numbers.columns if any(w.startswith(str(c).lower()) or str(c).lower().startswith(w) for w in wanted)]\n"
        "numbers = numbers[named] if named else numbers\n"
        "try:\n"
        "    import matplotlib.pyplot as plt\n"
        "except ImportError:  # no matplotlib in this kernel: the numbers as a table instead\n"
        "    plt = None\n"
        "if plt is not None:\n"
        f'    numbers.plot(title={frame!r}, marker="o")\n'
        "    plt.show()\n"
        "else:\n"
        '    print("matplotlib is not installed, so here are the numbers:")\n'
        "    print(numbers.to_string())\n"
    )


def plot(view: NotebookView, request: str) -> Turn:
    words = _words(request)
    frames = view.dataframes()
    if frames:
        frame = next((f for f in frames if _matches(f, words)), frames[-1])
        return _new_cell(
            f"I will add a cell that plots the dataframe {frame} "
            "(the columns you named, or every numeric column), then run it.",
            _frame_chart_code(frame, [w for w in words if w != frame.lower()]),
        )
    series = view.sequences()
    if series:
        chosen = next((s for s in series if _matches(s, words)), series[0])
        return _new_cell(
            f"I will add a cell that plots {chosen}, then run it.",
            _chart_code(chosen, chosen, f"A line chart of {chosen}"),
        )
    return _new_cell(
        "I found no dataframe or list of numbers in this notebook, so I will plot sample numbers to show "
        "how it works. Tell me which data to use once your notebook has some.",
        _chart_code(
            _SAMPLE, "sample values", "A chart of sample values, since the notebook has no data yet"
        ),
    )


def show_rows(view: NotebookView, request: str) -> Turn:
    frames = view.dataframes()
    words = _words(request)
    if frames:
        frame = next((f for f in frames if _matches(f, words)), frames[-1])
        return _new_cell(f"I will show the first rows of {frame}.", f"{frame}.head()")
    found = _FILE.search(request)
    if found:
        reader = "read_excel" if found.group(0).lower().endswith((".xls", ".xlsx")) else "read_csv"
        if found.group(0).lower().endswith(".json"):
            reader = "read_json"
        return _new_cell(
            f"I will load {found.group(0)} into a dataframe called df and show its first rows.",
            f"import pandas as pd\n\ndf = pd.{reader}({found.group(0)!r})\ndf.head()",
        )
    containers = view.containers()
    if containers:
        name = next((c for c in containers if _matches(c, words)), containers[0])
        return _new_cell(
            f"There is no dataframe in this notebook; the data is in {name}. I will show its first five entries.",
            f"rows = list({name}.items()) if isinstance({name}, dict) else list({name})\n"
            "for row in rows[:5]:\n"
            "    print(row)",
        )
    return _turn(
        "I found no data in this notebook to show. Name a file and I will load it, for example "
        f"*load sales.csv and show the first rows*. {WHAT_I_AM}"
    )


def summarise(view: NotebookView, request: str, state_text: str) -> Turn:
    frames = view.dataframes()
    words = _words(request)
    if frames:
        frame = next((f for f in frames if _matches(f, words)), frames[-1])
        return _new_cell(
            f"I will summarise {frame}: count, mean, spread and range of each numeric column.",
            f"{frame}.describe()",
        )
    wants_table = any(
        k in request.lower() for k in ("dataframe", "data frame", "statistic", "describe")
    )
    if not wants_table and _demo_data(state_text):
        summary = (
            "## Findings (offline demo model)\n\n"
            "- Temperatures rise through the week, from 21.5 °C on Monday to 24.0 °C on Friday.\n"
            "- Humidity stays between 39 % and 45 %, lowest on the warmest day."
        )
        return _new_cell(
            "I will add a markdown cell with what the readings show.", summary, "markdown"
        )
    series = view.sequences()
    if series:
        table = "{" + ", ".join(f"{s!r}: {s}" for s in series) + "}"
        return _new_cell(
            f"There is no dataframe here, so I will summarise the lists of numbers: {_names(series)}.",
            "import statistics\n\n"
            f"for name, values in {table}.items():\n"
            '    print(f"{name}: {len(values)} values, mean {statistics.mean(values):.2f}, "\n'
            '          f"from {min(values)} to {max(values)}")',
        )
    if view.cells:
        return _new_cell(
            "I found no data to summarise, so I will add a markdown cell that summarises the notebook's cells.",
            "## What this notebook does (offline demo model)\n\n"
            + "\n".join(f"- {describe_cell(c, frozenset(view.all_names()))}" for c in view.cells),
            "markdown",
        )
    return _turn(f"I found nothing to summarise in this notebook. {HELP}")


# -- fixing -----------------------------------------------------------------------------------------


def fix(view: NotebookView) -> Turn:
    failed = view.last_failed()
    if failed is None:
        return _turn(
            f"I read all {len(view.cells)} cells and none of them shows an error in its output. "
            "If a cell fails when you run it, ask me again afterwards."
        )
    error = failed.error or "an error"
    missing = re.match(r"NameError: name '([^']+)' is not defined", error)
    if missing:
        name = missing.group(1)
        source_cell = view.defined_in(name)
        if source_cell is not None:
            return _turn(
                f"Cell {failed.number} failed with {error}. {name} is defined in cell {source_cell.number}, which had "
                "not run in this kernel before it, so I will run all cells from the top, in order.",
                ToolUse("run_all_cells", {}),
            )
        close = difflib.get_close_matches(name, view.all_names(), n=1)
        if close and not failed.cut and re.search(rf"\b{re.escape(name)}\b", failed.source):
            fixed = re.sub(rf"\b{re.escape(name)}\b", close[0], failed.source)
            return _turn(
                f"Cell {failed.number} failed with {error}. No cell sets {name}, but {close[0]} exists, so it is "
                f"probably a typo. I will change {name} to {close[0]} in cell {failed.number}, then run it.",
                ToolUse("edit_cell", {"cell_id": failed.id, "source": fixed}),
            )
        return _turn(
            f"Cell {failed.number} failed with {error}. No cell in the notebook sets {name}: "
            f"Add a cell that sets it, or correct the name. {WHAT_I_AM}"
        )
    module = re.match(r"ModuleNotFoundError: No module named '([^'.]+)", error)
    hint = (
        f"The package {module.group(1)} is not installed in this kernel: run `%pip install {module.group(1)}` "
        "in a new cell, then run the cell again."
        if module
        else "Read the traceback in the cell's output; Claude can rewrite code, I can only fix names that are "
        "not defined."
    )
    return _turn(f"Cell {failed.number} failed with {error}. {hint} {WHAT_I_AM}")


# -- kernel tools (@aaep_tool functions of the notebook's kernel) ----------------------------------

_CALL = re.compile(r"\b([A-Za-z_]\w*)\(([^()]*)\)")
_CONTEXT = re.compile(r'^<data source="kernel variable (\w+)" note="[^"]*">\n(.+)$', re.MULTILINE)


def kernel_tool_call(text: str, tools: list[Any]) -> ToolUse | None:
    """A call of one of the offered tools written in the request, such as
    ``quarterly_sales("north")``: its literal arguments, mapped onto the tool's parameters."""
    offered = {
        t["name"]: t for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)
    }
    for match in _CALL.finditer(text):
        tool = offered.get(match.group(1))
        if tool is None:
            continue
        try:
            call = ast.parse(f"f({match.group(2)})", mode="eval").body
            assert isinstance(call, ast.Call)
            positional = [ast.literal_eval(a) for a in call.args]
            named = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg}
        except (SyntaxError, ValueError, AssertionError):
            continue
        names = list((tool.get("input_schema") or {}).get("properties") or {})
        return ToolUse(tool["name"], {**dict(zip(names, positional)), **named})
    return None


def _numbers(value: Any) -> dict[str, float] | None:
    if (
        isinstance(value, dict)
        and value
        and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value.values())
    ):
        return {str(k): float(v) for k, v in value.items()}
    return None


def _context_numbers(description: str) -> dict[str, float] | None:
    """The values of a ``{name}`` description such as "dict with 4 items: {'Q1': 410, …}"."""
    literal = description.partition(": ")[2].strip()
    if "…" in literal:
        return None  # only a few items were described
    try:
        return _numbers(ast.literal_eval(literal))
    except (SyntaxError, ValueError):
        return None


def _amount(value: float) -> str:
    return f"{value:,.0f}" if value == int(value) else f"{value:,.2f}"


def kernel_tool_answer(call: ToolUse, result: dict[str, Any], request: str) -> str:
    """What the function returned, compared with a ``{name}`` the request described, if it can."""
    text = result_text(result)
    if result.get("is_error"):
        first = next((line for line in text.splitlines() if line.strip()), "no details")
        if "declined" in text or "not run" in text:
            return f"Understood, I did not call {call.name}."
        return f"{call.name} failed: {first} Have a look at the function in its cell. {WHAT_I_AM}"
    try:
        values = _numbers(json.loads(text))
    except ValueError:
        values = None
    shown = ", ".join(f"{k}={v!r}" for k, v in call.input.items())
    if values is None:
        return f"{call.name}({shown}) returned: {text[:300]}\n\n{WHAT_I_AM}"
    best = max(values, key=lambda k: values[k])
    lines = [
        (
            f"{call.name}({shown}) returned {len(values)} values, {_amount(sum(values.values()))} in total; "
            f"the highest is {best} with {_amount(values[best])}."
        )
    ]
    for name, description in _CONTEXT.findall(request):
        before = _context_numbers(description)
        shared = [k for k in values if before is not None and k in before]
        if not shared or before is None:
            lines.append(f"You also gave me {name}: {description[:200]}")
            continue
        growth = {k: values[k] - before[k] for k in shared}
        most = max(growth, key=lambda k: growth[k])
        rows = "\n".join(
            f"| {k} | {_amount(before[k])} | {_amount(values[k])} | {growth[k]:+,.0f} |"
            for k in shared
        )
        lines.append(
            f"Compared with {name}, **{most} grew the most**: from {_amount(before[most])} to "
            f"{_amount(values[most])} ({growth[most]:+,.0f}).\n\n| Item | {name} | {call.name} | Change |\n"
            f"|---|---|---|---|\n{rows}"
        )
    lines.append(
        "(I am the offline demo model: I compare numbers by a fixed recipe; Claude can do far more.)"
    )
    return "\n\n".join(lines)


# -- the model --------------------------------------------------------------------------------------


def first_action(request: str, view: NotebookView, state_text: str) -> Turn:
    """The step after reading the notebook, chosen by what the request asks for."""
    intent = intent_of(request)
    if intent == "fahrenheit":
        code = (
            "fahrenheit = [round(t * 9 / 5 + 32, 1) for t in temperatures]\n"
            'print("Temperatures in Fahrenheit:", fahrenheit)'
        )
        return _new_cell(
            "I will add a cell that converts the temperatures to Fahrenheit, then run it.", code
        )
    if intent == "fix":
        return fix(view)
    if intent == "plot":
        return plot(view, request)
    if intent == "explain":
        return _turn(explain(view))
    if intent == "head":
        return show_rows(view, request)
    if intent == "describe":
        return summarise(view, request, state_text)
    if intent == "ask":
        return _turn(
            "",
            ToolUse(
                "ask_user",
                {
                    "question": "Which unit should I use for the temperatures?",
                    "choices": ["Celsius", "Fahrenheit"],
                },
            ),
        )
    if intent == "question":
        return _turn(
            WHAT_I_AM,
            ToolUse("ask_user", {"question": CLARIFY_QUESTION, "choices": CLARIFY_CHOICES}),
        )
    cells = re.search(r"(\d+) cells?", state_text)
    count = f"I read your notebook: it has {cells.group(1)} cells. " if cells else ""
    return _turn(f"{count}{HELP}")


def _code_failed(text: str) -> bool:
    return bool(re.match(r"Cell \d+ \(id [^)]+\) raised ", text)) or "Stopped at cell" in text


_REPR = re.compile(r"^<[\w.]+( [^<>]*)?>$")


def _for_people(line: str) -> str:
    """A tool result's first line as the demo model repeats it to the person: the cell by its
    number only (no id, no execution count, no 0.0 s timing), as a real model would say it."""
    line = re.sub(r" \(id [^)]+\)", "", line)
    line = re.sub(r" as \[\d+\]", "", line)
    line = re.sub(r" ran in [\d.]+ s: ok\.$", " ran without errors.", line)
    line = re.sub(r" ran in [\d.]+ s: (\w+)\.$", r" ran (\1).", line)
    return re.sub(r" after [\d.]+ s\.$", ".", line)


def _outputs_of(text: str) -> list[str]:
    """The printed lines of a run result, without its notes and the stream labels."""
    for marker in ("Last cell's outputs:", "\nOutputs:\n"):
        if marker in text:
            body = text.split(marker, 1)[1]
            break
    else:
        body = text.partition("\n")[2]
    lines = [re.sub(r"^\[[a-z_ ]+\]\s*", "", x.strip()) for x in body.splitlines()]
    return [line for line in lines if line and line not in ("none", "Outputs:", "No output.")]


_FIGURE_CELL = re.compile(r"shown by the cell with id ([\w-]+)")
_LABELS = re.compile(r"(?:set_)?(title|xlabel|ylabel)\(\s*['\"]([^'\"]+)['\"]")


def describe_figure(text: str, steps: list[dict[str, Any]]) -> Turn | None:
    """ "Describe this figure": look at it with view_figure, then describe what the code says
    (labels, title, size). The demo model cannot see the image, and says so."""
    wanted = _FIGURE_CELL.search(text)
    if wanted is None:
        return None
    if not steps:
        return _turn(
            "Let me look at the figure.", ToolUse("view_figure", {"cell_id": wanted.group(1)})
        )
    seen = result_text(steps[-1])
    if steps[-1].get("is_error"):
        return _turn(
            f"I could not look at the figure: {seen.splitlines()[0] if seen else 'no details'}"
        )
    size = re.search(r"image/\w+ (\d+)×(\d+)", seen)
    labels = {m.group(1): m.group(2) for m in _LABELS.finditer(seen)}
    parts = ["A chart drawn by the code of this cell"]
    if size:
        parts[0] += f", {size.group(1)} by {size.group(2)} pixels"
    if "title" in labels:
        parts.append(f"titled '{labels['title']}'")
    axes = [f"the {a[0]} axis shows {labels[a]}" for a in ("xlabel", "ylabel") if a in labels]
    said = ", ".join(parts) + (". " + "; ".join(axes).capitalize() + "." if axes else ".")
    return _turn(
        f"{said} (I am the offline demo model: I cannot see images, so the trend and the extremes "
        "are not described; Claude reads the figure itself.)"
    )


def demo_model(request: Any) -> Turn:
    """Answer one Messages API request (``request.body`` is the request JSON)."""
    text, steps, used = request_and_steps(request.body.get("messages", []))
    figure = describe_figure(text, steps)
    if figure is not None:
        return figure
    call = kernel_tool_call(text, request.body.get("tools") or [])
    if call is not None and not steps:
        return _turn(f"I will call your kernel function {call.name}.", call)
    if call is not None and len(steps) == 1 and call.name in used:
        return _turn(kernel_tool_answer(call, steps[0], text))
    if not steps:
        return _turn("Let me read the notebook first.", ToolUse("get_notebook_state", {}))
    state_text = result_text(steps[0])
    view = parse_state(state_text)
    last = steps[-1]
    last_text = result_text(last)
    first_line = _for_people(next((line for line in last_text.splitlines() if line.strip()), ""))
    if len(steps) > 1 and _code_failed(last_text):
        if "NameError" in last_text and "run_all_cells" not in used:
            return _turn(
                "The new cell needs variables from the earlier cells, which have not run in this kernel yet. "
                "I will run all cells from the top.",
                ToolUse("run_all_cells", {}),
            )
        error = re.search(r"^Error:\n(.+)$", last_text, re.MULTILINE)
        detail = f" ({error.group(1)})" if error else ""
        return _turn(
            f"The code failed: {first_line}{detail} Have a look at the cell's output; {WHAT_I_AM}"
        )
    if last.get("is_error"):
        if "declined" in last_text or "not run" in last_text:
            return _turn("Understood, I did not do that. Tell me what you would prefer instead.")
        return _turn(f"That step failed: {first_line or 'no details'}")
    if len(steps) == 1:
        return first_action(text, view, state_text)
    if last_text.startswith("The user answered"):
        answer = last_text.removeprefix("The user answered: ").strip()
        if intent_of(answer) not in (None, "question", "help", "ask"):
            return first_action(answer, view, state_text)
        return _turn(f"Thanks. {answer} it is. {HELP}")
    created = re.search(r"Created code cell \d+ \(id ([^)]+)\)", last_text)
    if created:
        return _turn(
            "The cell is in place. Now I will run it.",
            ToolUse("run_cell", {"cell_id": created.group(1)}),
        )
    edited = re.search(r"Cell \d+ \(id ([^)]+)\) now has", last_text)
    if edited:
        return _turn(
            "I changed the cell. Now I will run it.",
            ToolUse("run_cell", {"cell_id": edited.group(1)}),
        )
    if last_text.startswith("Created markdown"):
        return _turn("Done. I added a markdown cell at the end of the notebook.")
    if "Last cell's outputs:" in last_text:
        printed = _outputs_of(last_text)
        shown = f" The last cell printed: {printed[0]}" if printed else ""
        return _turn(f"Done. All code cells ran without errors.{shown}")
    if re.match(r"Cell \d+ \(id [^)]+\) ran ", last_text):
        outputs = _outputs_of(last_text)
        images = [line for line in outputs if line.startswith("[image/")]
        # A figure's text repr ("<Figure size 640x480 with 1 Axes>") says nothing to a person.
        texts = [line for line in outputs if not line.startswith("[") and not _REPR.match(line)]
        said = f"Done. {first_line}"
        if images:
            said += " It shows a chart (an image in the cell's output)."
        if texts:
            said += " It shows: " + " / ".join(texts[:3])
        return _turn(said)
    return _turn(f"Done. {first_line}".strip())
