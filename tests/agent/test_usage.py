"""Token usage and the cost estimate."""

from __future__ import annotations

import pytest

from jupyter_aaep.agent.usage import DEFAULT_PRICES, Price, PriceTable, Usage, dollars


def test_default_prices_follow_the_model_family() -> None:
    table = PriceTable()
    assert table.for_model("claude-sonnet-4-5") == DEFAULT_PRICES["claude-sonnet"]
    assert table.for_model("claude-opus-4-5").input == 5.0
    assert table.for_model("claude-opus-4-1-20250805").input == 15.0  # the longer prefix wins
    assert table.for_model("claude-haiku-4-5").output == 5.0
    assert table.for_model("some-compatible-model") == DEFAULT_PRICES[""]
    price = table.for_model("claude-sonnet-4-5")
    assert price.write == pytest.approx(3.75) and price.read == pytest.approx(0.3)


def test_overrides_win_and_bad_ones_are_explained() -> None:
    table = PriceTable(
        {"claude-sonnet": {"input": 1, "output": 2, "cache_read": 0.05}, "x": Price(9, 9)}
    )
    price = table.for_model("claude-sonnet-4-5")
    assert (price.input, price.output, price.write, price.read) == (1.0, 2.0, 1.25, 0.05)
    assert table.for_model("x-1").input == 9
    with pytest.raises(ValueError, match="needs numbers for 'input' and 'output'"):
        PriceTable({"claude": {"input": "cheap"}})


def test_usage_adds_requests_and_prices_each_kind() -> None:
    total = Usage()
    price = Price(input=3.0, output=15.0)
    one = total.add(
        {
            "input_tokens": 1000,
            "output_tokens": 200,
            "cache_read_input_tokens": 10_000,
            "cache_creation_input_tokens": 2000,
        },
        price,
    )
    assert one.cost_usd == pytest.approx((1000 * 3 + 200 * 15 + 10_000 * 0.3 + 2000 * 3.75) / 1e6)

    class Reported:  # the SDK's Usage model: attributes, and None when a count is absent
        input_tokens = 5
        output_tokens = 7
        cache_read_input_tokens = None
        cache_creation_input_tokens = None

    total.add(Reported(), price)
    assert (total.requests, total.input_tokens, total.output_tokens, total.prompt_tokens) == (
        2,
        1005,
        207,
        13_005,
    )
    assert total.to_json() == {
        "requests": 2,
        "input_tokens": 1005,
        "output_tokens": 207,
        "cache_read_input_tokens": 10_000,
        "cache_creation_input_tokens": 2000,
        "estimated_cost_usd": round(total.cost_usd, 6),
    }
    assert total.sentence() == (
        "2 model requests used 13,005 prompt tokens, 10,000 of them read from the cache and 207 output "
        f"tokens, about {dollars(total.cost_usd)}."
    )


def test_sentences_for_people() -> None:
    assert Usage().sentence() == "No model requests were made."
    one = Usage()
    one.add({"input_tokens": 10, "output_tokens": 1}, Price(1, 1))
    assert (
        one.sentence() == "1 model request used 10 prompt tokens and 1 output token, about $0.0000."
    )
    assert dollars(0) == "$0.00" and dollars(1.234) == "$1.23" and dollars(0.00123) == "$0.0012"


def test_a_request_listener_is_told_and_a_failing_one_never_breaks_the_loop(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from jupyter_aaep.agent.usage import ModelRequest

    usage = Usage()
    record = ModelRequest(
        session_id="ses_1",
        model="claude-test",
        status="success",
        latency_ms=12,
        usage=Usage(requests=1),
    )
    usage.request_finished(record)  # nobody listens: nothing happens
    told: list[ModelRequest] = []
    usage.on_request = told.append
    usage.request_finished(record)
    assert told == [record]

    def broken(_record: ModelRequest) -> None:
        raise RuntimeError("disk gone")

    usage.on_request = broken
    usage.request_finished(record)
    assert "recording a model request failed" in caplog.text
    assert usage == Usage(), "the listener is not part of the counts"


def test_the_offline_demo_model_has_tokens_and_no_price() -> None:
    from jupyter_aaep.testing.demo_model import MODEL_ID

    table = PriceTable()
    assert table.for_model(MODEL_ID) is None
    total = Usage()
    total.add({"input_tokens": 1200, "output_tokens": 80}, table.for_model(MODEL_ID))
    assert not total.priced
    assert total.to_json()["estimated_cost_usd"] is None
    assert total.to_json()["input_tokens"] == 1200
    assert total.sentence() == "1 model request used 1,200 prompt tokens and 80 output tokens."
    # Nothing asked yet: no price to show (the panel then shows tokens only, never "≈ $0.00").
    assert Usage().to_json()["estimated_cost_usd"] is None
    assert (
        PriceTable({"local-llm": None}).for_model("local-llm-7b") is None
    )  # an option can say so too
