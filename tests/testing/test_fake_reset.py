"""``FakeAnthropic.reset``: a fake shared by a module's tests starts each test as a new one."""

from __future__ import annotations

import anthropic
import pytest

from jupyter_aaep.testing import FakeAnthropic, Turn

USER = [{"role": "user", "content": "Hello"}]


async def test_reset_forgets_script_requests_and_problems_and_keeps_the_port() -> None:
    async with FakeAnthropic([Turn(text="one"), Turn(text="left over")]) as fake:
        url = fake.base_url
        client = anthropic.AsyncAnthropic(base_url=url, api_key=fake.api_key, max_retries=0)
        async with client:
            await client.messages.create(model="m", max_tokens=9, messages=USER)
            fake.reset()
            assert fake.requests == [] and fake.problems == []
            assert fake.base_url == url
            # The turn scripted before the reset is gone: the next request finds no script.
            with pytest.raises(anthropic.BadRequestError, match="fake script exhausted"):
                await client.messages.create(model="m", max_tokens=9, messages=USER)
            assert len(fake.problems) == 1
            fake.reset()
            fake.add(Turn(text="two"))
            answer = await client.messages.create(model="m", max_tokens=9, messages=USER)
    assert answer.content[0].text == "two"  # type: ignore[union-attr]
    assert len(fake.requests) == 1 and fake.problems == []
