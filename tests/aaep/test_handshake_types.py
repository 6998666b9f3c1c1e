"""A capability of the wrong JSON type is answered with a rejection, never an exception."""

from __future__ import annotations

import pytest

from jupyter_aaep.aaep.handshake import Rejected, negotiate, renegotiate
from jupyter_aaep.aaep.session import Producer


@pytest.mark.parametrize(
    "capabilities",
    [
        {"coalesce_boundaries": [["sentence"]]},
        {"coalesce_boundaries": [{"a": 1}]},
        {"preferred_verbosity": ["terse"]},
        {"cognitive_load": {"low": True}},
        {"languages": [["en-US"]]},
        {"supported_conformance_levels": [[1]]},
        {"event_filters": {"include": [["aaep:agent.*"]]}},
        # null is not an integer: the schema gives these no null, so absent and null differ
        {"pace_wpm": None},
        {"max_events_per_second": None},
    ],
)
def test_unhashable_values_are_rejected_as_malformed(capabilities) -> None:
    request = {
        "type": "subscription.request",
        "aaep_version": "1.0.0",
        "subscriber_id": "t",
        "capabilities": capabilities,
    }
    answer = negotiate(request, producer=Producer())
    assert (
        isinstance(answer, Rejected)
        and answer.malformed
        and answer.reason_code == "capabilities_incompatible"
    )
    again = renegotiate(
        {
            "type": "subscription.renegotiate",
            "subscription_id": "sub_1",
            "capabilities": capabilities,
        },
        {},
        producer=Producer(),
    )
    assert isinstance(again, Rejected) and again.malformed
