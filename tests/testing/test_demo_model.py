"""The offline demo model picks the next step like a real model would."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from jupyter_aaep.testing.demo_model import demo_model


def convo(request: str, *steps: tuple[str, str, bool]) -> SimpleNamespace:
    """A request followed by (tool name, result text, is_error) rounds."""
    messages: list[dict] = [{"role": "user", "content": [{"type": "text", "text": request}]}]
    for number, (name, text, error) in enumerate(steps):
        messages.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"toolu_{number}", "name": name, "input": {}}]})
        result = {"type": "tool_result", "tool_use_id": f"toolu_{number}", "content": text}
        if error:
            result["is_error"] = True
        messages.append({"role": "user", "content": [result]})
    return SimpleNamespace(body={"messages": messages})


STATE = ("get_notebook_state", "Notebook demo.ipynb, 3 cells, kernel idle.", False)


def tools(turn) -> list[str]:
    return [use.name for use in turn.tool_uses]


def test_reads_first_then_acts_on_keywords() -> None:
    assert tools(demo_model(convo("convert to fahrenheit"))) == ["get_notebook_state"]
    turn = demo_model(convo("convert to fahrenheit", STATE))
    assert tools(turn) == ["create_cell"] and "fahrenheit" in turn.tool_uses[0].input["source"]
    turn = demo_model(convo("summarise the readings", STATE))
    assert turn.tool_uses[0].input["cell_type"] == "markdown"
    assert tools(demo_model(convo("ask me a question", STATE))) == ["ask_user"]
    help_turn = demo_model(convo("what can you do", STATE))
    assert "3 cells" in help_turn.text and "offline demo model" in help_turn.text


def test_creates_runs_recovers_and_reports() -> None:
    created = ("create_cell", "Created code cell 4 (id abc123), after cell 3.", False)
    run = demo_model(convo("convert", STATE, created))
    assert tools(run) == ["run_cell"] and run.tool_uses[0].input == {"cell_id": "abc123"}
    failed = ("run_cell", "Cell 4 (id abc123) raised NameError: name 'temperatures' is not defined", False)
    assert tools(demo_model(convo("convert", STATE, created, failed))) == ["run_all_cells"]
    all_ran = ("run_all_cells", "cell 2 ok\nLast cell's outputs:\n[stdout] Temperatures in Fahrenheit: [70.7]", False)
    final = demo_model(convo("convert", STATE, created, failed, all_ran))
    assert final.tool_uses == [] and "Temperatures in Fahrenheit: [70.7]" in final.text
    again = ("run_all_cells", "Ran until a cell failed:\ncell 2 raised NameError\nStopped at cell 2.", False)
    assert "failed" in demo_model(convo("convert", STATE, created, failed, again)).text


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        (("run_cell", "The user declined: run_cell was not run.", True), "did not do that"),
        (("run_cell", "Kernel died.", True), "That step failed: Kernel died."),
        (("create_cell", "Created markdown cell 5 (id m1).", False), "markdown cell"),
        (("ask_user", "The user answered: Celsius", False), "Celsius it is"),
        (("run_cell", "Cell 4 ran in 0.1 s.\n[stdout] 3", False), "Done. Cell 4 ran"),
    ],
)
def test_answers_after_each_kind_of_result(result, expected) -> None:
    assert expected in demo_model(convo("anything", STATE, result)).text


def test_results_merged_into_a_new_request_belong_to_the_old_one() -> None:
    request = SimpleNamespace(body={"messages": [
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x"}, {"type": "text", "text": "hello"}]},
    ]})
    assert tools(demo_model(request)) == ["get_notebook_state"]
    assert tools(demo_model(SimpleNamespace(body={"messages": []}))) == ["get_notebook_state"]
