"""The rules files through a real server: they reach the model's system prompt by scope, the
person hears which apply once per change, and the prompt cache still holds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernel_helpers import _private_cwd, jp_server_config, write_notebook  # noqa: F401
from server_helpers import of_type

from jupyter_aaep.testing.fake_anthropic import Turn


def system_text(request: Any) -> str:
    return "\n".join(block["text"] for block in request.body["system"])


async def ask(api: Any, sse: Any, chat_id: str, text: str) -> list[dict[str, Any]]:
    async with sse(chat_id) as stream:
        status, body, _ = await api(
            "chats", chat_id, "messages", method="POST", body={"kind": "user_input", "text": text}
        )
        assert status == 202, body
        return await stream.until(of_type("session.completed"), timeout=30)


def said(events: list[dict[str, Any]]) -> list[str]:
    return [e["summary_normal"] for e in events if e["type"].endswith("progress.updated")]


async def test_rules_reach_the_model_by_scope_and_are_said_once_per_change(
    api, sse, new_chat, fake_model, jp_root_dir: Path
) -> None:
    (jp_root_dir / "AGENTS.md").write_text("Always name dataframes df_<thing>.")
    rules = jp_root_dir / ".aaep" / "rules"
    rules.mkdir(parents=True)
    (rules / "python.md").write_text("---\nscope:\n  languages: [python]\n---\nUse type hints.\n")
    (rules / "r.md").write_text("---\nscope:\n  kernel_names: [ir]\n---\nUse the tidyverse.\n")
    path = write_notebook(jp_root_dir, "work.ipynb", ["x = 1"])
    chat_id = await new_chat(path)

    fake_model.add(Turn(text="Hello."), Turn(text="Again."), Turn(text="Third."))
    first = await ask(api, sse, chat_id, "hi")
    prompt = system_text(fake_model.requests[0])
    assert "Always name dataframes df_<thing>." in prompt and "Use type hints." in prompt
    assert "tidyverse" not in prompt
    assert said(first) == ["2 rules apply: AGENTS.md, .aaep/rules/python.md."]
    # The rules sit in the cached system block, before the chat's own context.
    system = fake_model.requests[0].body["system"]
    assert "cache_control" in system[0] and "Use type hints." in system[0]["text"]

    second = await ask(api, sse, chat_id, "and again")
    assert said(second) == []  # nothing changed: nothing said
    assert fake_model.requests[1].body["system"] == system
    assert fake_model.requests[1].usage is not None
    assert fake_model.requests[1].usage.cache_read_input_tokens > 0

    (rules / "python.md").write_text("---\nactive: false\n---\nUse type hints.\n")
    third = await ask(api, sse, chat_id, "once more")
    assert said(third) == ["1 rule applies: AGENTS.md."]
    assert "Use type hints." not in system_text(fake_model.requests[2])


async def test_a_broken_rules_file_is_named_and_the_request_goes_on(
    api, sse, new_chat, fake_model, jp_root_dir: Path
) -> None:
    (jp_root_dir / "CLAUDE.md").write_text("---\nscope: [unclosed\n---\nbody\n")
    path = write_notebook(jp_root_dir, "broken.ipynb", ["x = 1"])
    chat_id = await new_chat(path)
    fake_model.add(Turn(text="Fine."))
    events = await ask(api, sse, chat_id, "hi")
    (sentence,) = said(events)
    assert sentence.startswith("No rules apply. CLAUDE.md has front matter that is not valid YAML")
    assert events[-1]["type"].endswith("session.completed")


async def test_which_rules_apply_here(api, jp_root_dir: Path) -> None:
    (jp_root_dir / "AGENTS.md").write_text("General.")
    rules = jp_root_dir / "sub" / ".aaep" / "rules"
    rules.mkdir(parents=True)
    (rules / "r.md").write_text("---\nscope: {languages: [r]}\n---\nR only.\n")
    path = write_notebook(jp_root_dir, "sub/nb.ipynb", ["x = 1"])
    status, body, _ = await api("rules", params={"notebook_path": path})
    assert status == 200
    assert [r["label"] for r in body["applies"]] == ["AGENTS.md"]
    assert body["skipped"] == [
        {
            "label": "sub/.aaep/rules/r.md",
            "path": str(rules / "r.md"),
            "active": True,
            "scope": "languages r",
            "cut": False,
        }
    ]
    assert body["sentence"] == "1 rule applies: AGENTS.md."
    status, body, _ = await api("rules")
    assert status == 400 and "Say which notebook" in body["message"]
