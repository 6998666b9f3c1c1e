"""Context bookkeeping without a model: clearing, references, compaction, forecasts."""

from __future__ import annotations

from typing import Any

import pytest

from jupyter_aaep.agent.context import (
    SUMMARY_HEADER,
    ContextManager,
    ContextReport,
    ContextSettings,
    ContextState,
    ContextTooLarge,
    clear_tool_results,
    compact,
    dedupe_results,
    estimate_tokens,
    parse_too_long,
)
from jupyter_aaep.testing._validation import validate_request

BIG = "a notebook cell; " * 200


def request(i: int, *, result: str = BIG, answer: str = "answer") -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": [{"type": "text", "text": f"question {i}"}]},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": f"toolu_{i}", "name": "read", "input": {}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": result}],
        },
        {"role": "assistant", "content": [{"type": "text", "text": f"{answer} {i}"}]},
    ]


def chat(n: int, **kwargs: Any) -> list[dict[str, Any]]:
    history = [m for i in range(n) for m in request(i, **kwargs)]
    history.append({"role": "user", "content": [{"type": "text", "text": "now"}]})
    return history


def valid(history: list[dict[str, Any]]) -> list[str]:
    return validate_request(
        {"model": "m", "max_tokens": 5, "messages": history}, {"anthropic-version": "x"}
    )


def results(history: list[dict[str, Any]]) -> list[str]:
    return [b["content"] for m in history for b in m["content"] if b.get("type") == "tool_result"]


def test_estimates_and_the_services_error() -> None:
    assert estimate_tokens("abcd" * 10) == 10 and estimate_tokens({"a": 1}) == 2
    assert parse_too_long("prompt is too long: 64087 tokens > 60000 maximum") == (64087, 60000)
    assert parse_too_long("something else") is None


def test_window_by_model_prefix_and_override() -> None:
    settings = ContextSettings(windows={"claude-small": 50_000})
    assert settings.window_for("claude-sonnet-4-5") == 200_000
    assert settings.window_for("claude-small-1") == 50_000
    assert ContextSettings(window=1234).window_for("claude-small-1") == 1234


def test_clearing_keeps_the_most_recent_results_and_says_how_to_get_them_back() -> None:
    history = chat(4)
    history[2]["content"][0]["is_error"] = True
    assert clear_tool_results(history, 2) == 2
    contents = results(history)
    assert contents[2:] == [BIG, BIG]
    assert (
        contents[0].startswith("[Cleared to keep the conversation")
        and "Call read again" in contents[0]
    )
    assert history[2]["content"][0]["is_error"] is True  # an error stays an error
    assert (
        clear_tool_results(history, 2) == 0
    )  # already cleared: nothing changes, the cache survives
    assert valid(history) == []


def test_identical_results_become_references_that_survive_clearing() -> None:
    history = chat(1)[:-1]
    history.append({"role": "user", "content": [{"type": "text", "text": "again"}]})
    history.append(
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "toolu_b", "name": "read", "input": {}},
                {"type": "tool_use", "id": "toolu_c", "name": "read", "input": {}},
            ],
        }
    )
    new = [
        {"type": "tool_result", "tool_use_id": "toolu_b", "content": BIG},
        {"type": "tool_result", "tool_use_id": "toolu_c", "content": BIG},
        {"type": "tool_result", "tool_use_id": "toolu_d", "content": "short", "is_error": True},
    ]
    deduped = dedupe_results(history, new)
    assert deduped[0]["content"].startswith(
        "[Unchanged: identical to the earlier result of read (call toolu_0)"
    )
    assert deduped[1]["content"].startswith("[Unchanged") and deduped[2] == new[2]
    history.append({"role": "user", "content": deduped[:2]})
    # Clearing the original hands its content to the first reference that stays; the other follows it.
    assert clear_tool_results(history, 2) == 1
    kept = results(history)
    assert kept[0].startswith("[Cleared") and kept[1] == BIG
    assert kept[2].startswith("[Unchanged") and "(call toolu_b)" in kept[2]
    assert valid(history) == []


def test_first_result_of_a_batch_is_the_original_for_the_rest() -> None:
    history: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": "go"}]}]
    new = [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": BIG},
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": BIG},
    ]
    out = dedupe_results(history, new)
    assert out[0]["content"] == BIG and "(call toolu_1)" in out[1]["content"]


def test_compaction_folds_whole_requests_into_a_summary_and_stays_valid() -> None:
    history = chat(5, answer="The answer is long enough to be clipped. " * 20)
    # A stopped session left a tool result in front of the next request's words.
    history[8]["content"].insert(
        0, {"type": "tool_result", "tool_use_id": "toolu_1", "content": "stopped"}
    )
    folded = compact(
        history, lambda h: sum(estimate_tokens(b) for m in h for b in m["content"]) < 3000
    )
    assert 2 <= folded < 5
    summary = history[0]["content"][0]["text"]
    assert summary.startswith(SUMMARY_HEADER)
    assert "- The user asked: question 0" in summary and "Tools used: read." in summary
    assert "The agent answered: The answer is long" in summary and "…" in summary
    assert valid(history) == []
    # Compacting again keeps the earlier summary lines, once.
    again = compact(history, lambda h: False)
    assert again >= 1 and history[0]["content"][0]["text"].count("question 0") == 1
    assert valid(history) == []
    assert compact([{"role": "user", "content": "only one request"}], lambda h: False) == 0


def test_report_sentences() -> None:
    assert not ContextReport()
    assert ContextReport(cleared=1).sentence() == (
        "To stay within the model's context window, 1 old tool result was set aside; "
        "the agent can run those tools again if needed."
    )
    assert "6 old tool results were set aside" in ContextReport(cleared=6).sentence()
    assert (
        ContextReport(summarised=2)
        .sentence()
        .startswith("Earlier parts of this chat were summarised")
    )
    both = ContextReport(cleared=3, summarised=1)
    both.merge(ContextReport(cleared=1))
    assert both.cleared == 4 and "summarised and 4 old tool results set aside" in both.sentence()


def manager(window: int = 10_000, **settings: Any) -> ContextManager:
    return ContextManager(
        ContextSettings(window=window, **settings), ContextState(), model="m", max_tokens=1000
    )


def test_request_start_clears_in_one_batch_when_the_forecast_does_not_fit() -> None:
    m = manager()
    m.state.growths = [3000]
    history = chat(6)  # about 5 000 tokens of results
    report = m.prepare(history, 500, request_start=True)
    assert report.cleared == 6 and not report.summarised and m.state.compactions == 1
    # Mid-request nothing more happens while the prompt is below the high-water mark.
    assert not m.prepare(history, 500)
    assert m.state.compactions == 1


def test_off_changes_nothing() -> None:
    m = manager(strategy="off")
    history = chat(30)
    assert not m.prepare(history, 500, request_start=True) and results(history) == [BIG] * 30
    assert m.server_edit(10**6) is None


def test_a_message_too_large_on_its_own_is_refused_and_left_out() -> None:
    m = manager()
    history = [{"role": "user", "content": [{"type": "text", "text": "x" * 60_000}]}]
    with pytest.raises(ContextTooLarge) as caught:
        m.prepare(history, 500)
    assert caught.value.tool is None and "Your message is about" in str(caught.value)
    assert "shorter message" in caught.value.hint
    assert history[0]["content"][0]["text"].startswith("[A message of about")
    answer = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "y" * 60_000},
                {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}],
        },
    ]
    with pytest.raises(ContextTooLarge, match="An earlier answer of the agent is about"):
        m.prepare(answer, 500)


def test_server_edit_is_offered_past_half_the_window_until_refused() -> None:
    m = manager()
    assert m.server_edit(1000) is None
    edit = m.server_edit(m.usable // 2)
    assert edit is not None and edit["edits"][0]["trigger"] == {
        "type": "input_tokens",
        "value": m.high,
    }
    m.refused()
    assert m.server_edit(m.usable) is None and m.state.server_edits is False
    m.accepted()
    assert m.server_edit(m.usable) is not None


def test_observe_calibrates_and_mirrors_server_edits() -> None:
    m = manager()
    history = chat(5)
    m.observe(history, sent_estimate=1000, prompt_tokens=1500, edits=None)
    assert m.state.ratio == pytest.approx(1.5)
    m.observe(history, sent_estimate=1000, prompt_tokens=10**6, edits=None)
    assert m.state.ratio == 4.0  # clamped
    m.observe(
        history,
        sent_estimate=1,
        prompt_tokens=1,
        edits={"applied_edits": [{"cleared_tool_uses": 2}]},
    )
    assert m.state.ratio == 4.0 and m.pending.cleared == 2
    report = m.prepare(history, 10)
    assert report.cleared >= 2  # announced with the next request


def test_too_long_adopts_the_servers_window() -> None:
    m = manager(window=200_000)
    m.too_long(sent_estimate=1000, actual=1300, maximum=9000)
    assert m.window == 9000 and m.state.window == 9000 and m.state.ratio == pytest.approx(1.365)
    again = ContextManager(ContextSettings(window=200_000), m.state, model="m", max_tokens=1000)
    assert again.window == 9000


def test_growth_forecast_keeps_the_last_five_requests() -> None:
    m = manager()
    for size in range(1, 8):
        m.grew([{"type": "text", "text": "x" * 400 * size}])
        m.finish_request()
    sizes = [estimate_tokens({"type": "text", "text": "x" * 400 * size}) for size in range(3, 8)]
    assert m.state.growths == sizes and m.expected_growth == sizes[-1]


def test_one_prepare_estimates_each_block_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """prepare() asks for the history's size up to five times; each block's JSON is measured
    once per prepare (it was measured every time: 6 ms of each model turn), and the same
    decisions come out."""
    from jupyter_aaep.agent import context

    measured: list[int] = []

    def counting(value: object) -> int:
        measured.append(id(value))
        return estimate_tokens(value)

    monkeypatch.setattr(context, "estimate_tokens", counting)
    m = manager(window=200_000)
    history = chat(6)
    blocks = sum(len(message["content"]) for message in history)
    assert not m.prepare(history, 500, request_start=True)
    # Each block once, plus the six placeholders of the "what if everything were cleared" trial.
    assert len(measured) == len(set(measured)) == blocks + 6
    measured.clear()
    m.prepare(history, 500)  # a new prepare measures again (the history may have changed)
    assert len(measured) == len(set(measured)) >= blocks
    # Still clears when it must (the replaced blocks are measured as what they are now).
    small = manager()
    small.state.growths = [3000]
    report = small.prepare(chat(6), 500, request_start=True)
    assert report.cleared == 6
