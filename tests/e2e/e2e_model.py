"""The fake model's side of each browser scenario.

One :class:`ScriptedModel` serves a whole test module. It picks the scenario from a keyword
in the user's request (so a session left over by a failed test can never take another test's
answers) and the step from the tool results the request has collected so far, exactly as a
model reads the conversation. Texts are constants, so tests can compare what the panel shows
and announces with what the model said.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from jupyter_aaep.testing.demo_model import request_and_steps, result_text
from jupyter_aaep.testing.fake_anthropic import ErrorReply, RecordedRequest, ToolUse, Turn

PACE = 0.02
"""Seconds between streamed events: slow enough that streaming is seen (and tested)."""

FAHRENHEIT_CODE = (
    "celsius = [21.5, 22.1, 23.4, 22.8, 24.0]\n"
    "fahrenheit = [round(t * 9 / 5 + 32, 1) for t in celsius]\n"
    'print("Temperatures in Fahrenheit:", fahrenheit)'
)
FAHRENHEIT_OUTPUT = "Temperatures in Fahrenheit: [70.7, 71.8, 74.1, 73.0, 75.2]"
INTRO = "I will add a cell that converts the temperatures to Fahrenheit. Then I will run it, with your approval."
RUN_TEXT = "The cell is in place. Now I will run it."
FINAL_ANSWER = (
    "The conversion worked. Monday starts at 70.7 degrees Fahrenheit, and the warmest day is Friday "
    "at 75.2 degrees. Wednesday, at 74.1 degrees, is a close second! Do you want a plot of the week?"
)
DECLINED_ANSWER = "Understood: I did not run the cell. It is still in the notebook if you want to run it yourself."

SLOW_TEXT = " ".join(
    f"Sentence {n} of a long explanation that keeps going while you decide whether to stop me."
    for n in range(1, 40)
)

TOUR_STREAM = (
    "Let me look at the readings closely. I will ask you one question first, and then I will "
    "want to run a cell."
)
TOUR_QUESTION = "Which unit should I use for the temperatures?"
TOUR_CHOICES = ["Celsius", "Fahrenheit"]
TOUR_CELL = "246e7258"
"""The demo notebook's third cell (prints the means)."""
TOUR_AFTER_ANSWER = "Thanks. I will print the means first."

CHOOSE_QUESTION = "Which unit do you prefer for the temperatures?"


def choose_answer(choice: str) -> str:
    return f"Thanks. {choice} it is: I will use it from now on."


CHAT_ANSWER = "Hello! I can read, edit and run this notebook. Ask me anything about it."

BROKEN_CODE = "print(df.head())"
"""A cell that raises NameError: no ``df`` exists in the demo notebook."""
RUN_ALL_INTRO = "I will add a cell that shows the data frame, then run every code cell."
RUN_ALL_ANSWER = "Cell 4 failed: df is not defined. I should load the data into df first."

AUTH_MESSAGE = "invalid x-api-key"
AUTH_HINT = "Set a valid key in the ANTHROPIC_API_KEY environment variable of the Jupyter server and restart it."


def request_and_results(request: RecordedRequest) -> tuple[str, list[dict[str, Any]]]:
    """The newest user request (its text) and the tool results collected for it since."""
    text, results, _used = request_and_steps(request.body.get("messages") or [])
    return text, results


def _turn(text: str = "", *tools: ToolUse, **options: Any) -> Turn:
    return Turn(text=text, tool_uses=list(tools), chunk_delay=PACE, text_chunk_size=5, **options)


Scenario = Callable[[list[dict[str, Any]]], "Turn | ErrorReply"]


def convert_and_run(results: list[dict[str, Any]]) -> Turn:
    """Create a cell, run it once approved, then answer (or accept the rejection)."""
    if not results:
        return _turn(
            INTRO, ToolUse("create_cell", {"source": FAHRENHEIT_CODE, "cell_type": "code"})
        )
    last = results[-1]
    created = re.search(r"Created code cell \d+ \(id ([^)]+)\)", result_text(last))
    if created:
        return _turn(RUN_TEXT, ToolUse("run_cell", {"cell_id": created.group(1)}))
    if last.get("is_error"):
        return _turn(DECLINED_ANSWER)
    return _turn(FINAL_ANSWER)


def talk_slowly(results: list[dict[str, Any]]) -> Turn:
    """A long answer that stalls after a few sentences, until the test stops it (or releases it)."""
    return Turn(text=SLOW_TEXT, chunk_delay=PACE, text_chunk_size=8, stall_after_chunks=60)


RECONNECT_TEXT = "First part. Second part, sent while you were away. Third part."


def hold_then_finish(results: list[dict[str, Any]]) -> Turn:
    """A short answer that stalls after its first chunk until the test releases it."""
    return Turn(text=RECONNECT_TEXT, chunk_delay=PACE, text_chunk_size=12, stall_after_chunks=1)


def bad_key(results: list[dict[str, Any]]) -> ErrorReply:
    """The service refuses the key, as it does for a revoked one."""
    return ErrorReply(401, "authentication_error", AUTH_MESSAGE)


def tour(results: list[dict[str, Any]]) -> Turn | ErrorReply:
    """Every state the panel has: streaming (stalled until released), a question, an
    approval request (the test rejects it), then an API error."""
    if not results:
        return _turn(
            TOUR_STREAM,
            ToolUse("ask_user", {"question": TOUR_QUESTION, "choices": TOUR_CHOICES}),
            stall_after_chunks=8,
        )
    if len(results) == 1:
        return _turn(TOUR_AFTER_ANSWER, ToolUse("run_cell", {"cell_id": TOUR_CELL}))
    return ErrorReply(401, "authentication_error", AUTH_MESSAGE)


def choose(results: list[dict[str, Any]]) -> Turn:
    """Ask the user to pick a unit, then thank them for the answer."""
    if not results:
        return _turn(
            "", ToolUse("ask_user", {"question": CHOOSE_QUESTION, "choices": TOUR_CHOICES})
        )
    answered = result_text(results[-1]).removeprefix("The user answered: ").strip()
    return _turn(choose_answer(answered))


def run_everything(results: list[dict[str, Any]]) -> Turn:
    """Add a cell that raises NameError, then run all three code cells (one approval)."""
    if not results:
        return _turn(
            RUN_ALL_INTRO, ToolUse("create_cell", {"source": BROKEN_CODE, "cell_type": "code"})
        )
    if len(results) == 1:
        return _turn("", ToolUse("run_all_cells", {}))
    return _turn(RUN_ALL_ANSWER)


LONG_CELL_CODE = "\n".join(
    ["# Summarise the temperatures, one statistic per line"]
    + [
        f"stat_{i:02d} = sorted(celsius)[{i} % len(celsius)]  # the {i}. value in ascending order"
        for i in range(1, 17)
    ]
    + ["print(stat_01, stat_16)"]
)
"""An 18-line cell, the size the layout tests put up for approval."""


def long_cell(results: list[dict[str, Any]]) -> Turn:
    """Create an 18-line cell and ask to run it (the test leaves the approval waiting)."""
    if not results:
        return _turn("", ToolUse("create_cell", {"source": LONG_CELL_CODE, "cell_type": "code"}))
    created = re.search(r"Created code cell \d+ \(id ([^)]+)\)", result_text(results[-1]))
    if created:
        return _turn("", ToolUse("run_cell", {"cell_id": created.group(1)}))
    return _turn("Done with the summary.")


CITY_QUESTION = "Which city should the forecast be for?"


def city_answer(city: str) -> str:
    return f"The forecast for {city} is sunny."


def ask_city(results: list[dict[str, Any]]) -> Turn:
    """A question answered in free text (no choices), then an answer that names it."""
    if not results:
        return _turn("", ToolUse("ask_user", {"question": CITY_QUESTION}))
    answered = result_text(results[-1]).removeprefix("The user answered: ").strip()
    return _turn(city_answer(answered))


def hello(results: list[dict[str, Any]]) -> Turn:
    return _turn(CHAT_ANSWER)


class ScriptedModel:
    """The responder of the module's ``FakeAnthropic``: keyword → scenario.

    The first keyword found (case-insensitive) in the newest user request wins; requests that
    match none get a plain answer, so nothing a test forgot ever hangs.
    """

    def __init__(self, scenarios: dict[str, Scenario] | None = None) -> None:
        self.scenarios: dict[str, Scenario] = dict(scenarios or SCENARIOS)
        self.seen: list[str] = []

    def __call__(self, request: RecordedRequest) -> Turn | ErrorReply:
        text, results = request_and_results(request)
        self.seen.append(text)
        lowered = text.lower()
        for keyword, scenario in self.scenarios.items():
            if keyword in lowered:
                return scenario(results)
        return hello(results)


STEER_INTRO = (
    "I will read the notebook first. This first look takes a while, so you have time to pause me "
    "or to tell me what matters to you."
)
STEER_ANSWER = "I read the notebook. Thank you for the guidance: I kept it in mind."
GUIDANCE_TEXT = "Please keep the answer short and use degrees Celsius."


def steer(results: list[dict[str, Any]]) -> Turn:
    """A first turn that stalls while it streams (the test pauses and steers), then an answer."""
    if not results:
        return _turn(STEER_INTRO, ToolUse("get_notebook_state", {}), stall_after_chunks=12)
    return _turn(STEER_ANSWER)


def steered(results: list[dict[str, Any]]) -> Turn:
    """The model's turn after guidance arrived as the newest user text: it answers."""
    return _turn(STEER_ANSWER)


OVERLOADED_MESSAGE = "Overloaded"
CONTINUED_ANSWER = "Picking up where I stopped: the notebook has three code cells and they all ran."


class Overloaded:
    """The service is overloaded for the first request's attempts (the SDK retries twice), so
    the session ends with a recoverable error; whatever comes after (Continue) is answered."""

    def __init__(self, failures: int = 3) -> None:
        self.failures = failures

    def __call__(self, results: list[dict[str, Any]]) -> Turn | ErrorReply:
        if self.failures > 0:
            self.failures -= 1
            return ErrorReply(529, "overloaded_error", OVERLOADED_MESSAGE, retry_after=0)
        return _turn(CONTINUED_ANSWER)


SCENARIOS: dict[str, Scenario] = {
    "fahrenheit": convert_and_run,
    "slowly": talk_slowly,
    "api key": bad_key,
    "tour": tour,
    "choose": choose,
    "reconnect": hold_then_finish,
    "every cell": run_everything,
    "steer test": steer,
    "steering": steered,
    "forecast": ask_city,
    "eighteen lines": long_cell,
    "hello": hello,
}
