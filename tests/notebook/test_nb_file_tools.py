"""``list_files`` and ``read_file`` against a real Jupyter server's contents manager.

They are read-only: bounded, inside the Jupyter root only, hidden files per the server's
settings, and the agent calls them without asking for approval.
"""

from __future__ import annotations

import asyncio
import builtins
import json
import os
from pathlib import Path
from typing import Any

import anthropic
import pytest
from nb_helpers import on_server_loop

from jupyter_aaep.aaep import Emitter, ListSubscriber, Producer, ReplyBroker, Session
from jupyter_aaep.agent.approval import ApprovalPolicy
from jupyter_aaep.agent.loop import AgentConfig, AgentLoop, ChatContext, RunControl
from jupyter_aaep.agent.prompts import SYSTEM_PROMPT
from jupyter_aaep.agent.services import AgentServices
from jupyter_aaep.agent.tools import ToolError, ToolRegistry
from jupyter_aaep.testing.fake_anthropic import FakeAnthropic, ToolUse, Turn
from jupyter_aaep.tools._file_heads import human_size
from jupyter_aaep.tools._file_tools import list_files, read_file
from jupyter_aaep.tools.notebook import notebook_tools

pytestmark = pytest.mark.shared_server


@pytest.fixture
def data(jp_root_dir: Path) -> Path:
    """A small data folder: a CSV, a TSV, JSON, a text file, a binary file, hidden files."""
    folder = jp_root_dir / "data"
    (folder / "raw").mkdir(parents=True)
    rows = ["region,month,amount"] + [f"north,{m % 12 + 1},{m * 10}" for m in range(1204)]
    (folder / "sales.csv").write_text("\n".join(rows) + "\n")
    (folder / "people.tsv").write_text("name\tage\nAda\t36\nAlan\t41\n")
    (folder / "config.json").write_text(
        json.dumps({"name": "sales", "years": [2024, 2025], "owner": {"team": "bi"}})
    )
    (folder / "notes.txt").write_text("first line\nsecond line\n")
    (folder / "chart.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8)
    (folder / ".secret.env").write_text("TOKEN=abc\n")
    (folder / "raw" / "2024.csv").write_text("a,b\n1,2\n")
    (jp_root_dir / ".hidden_dir").mkdir()
    (jp_root_dir / ".hidden_dir" / "x.txt").write_text("hidden\n")
    return folder


def write_big_csv(path: Path, size: int) -> None:
    row = "2025-01-01,north,12345.67,some free text in a column\n"
    with open(path, "w") as handle:
        handle.write("date,region,amount,comment\n")
        while handle.tell() < size:
            handle.write(row * 10_000)


def text_of(result: Any) -> str:
    return result.content if isinstance(result.content, str) else json.dumps(result.content)


# -- list_files ---------------------------------------------------------------------------------


@on_server_loop
async def test_list_files_shows_files_and_folders_with_size_and_time(data, make_ctx) -> None:
    result = await list_files(make_ctx("x.ipynb"), directory="data")
    text = text_of(result)
    lines = text.splitlines()
    assert lines[0] == "# data/: 5 files and 1 folder"
    assert any(line.startswith("data/sales.csv  (") and "KB, modified 20" in line for line in lines)
    assert any(line.startswith("data/raw/  (folder") for line in lines)
    assert "data/raw/2024.csv" not in text  # depth 1 by default
    assert ".secret.env" not in text  # hidden files are left out
    assert result.summary == "Listed 5 files and 1 folder in data/."

    deeper = text_of(await list_files(make_ctx("x.ipynb"), directory="data", depth=2))
    assert "data/raw/2024.csv" in deeper

    root = await list_files(make_ctx("x.ipynb"))
    assert ".hidden_dir" not in text_of(root) and "data/  (folder" in text_of(root)
    assert root.summary is not None and "the root folder" in root.summary


@on_server_loop
async def test_list_files_with_a_pattern(data, make_ctx) -> None:
    result = await list_files(make_ctx("x.ipynb"), directory="data", pattern="*.csv", depth=2)
    entries = text_of(result).splitlines()[1:]
    assert [e.split("  ")[0] for e in entries] == ["data/sales.csv", "data/raw/2024.csv"]
    assert result.summary == "Listed 2 files matching *.csv in data/."

    folders = await list_files(make_ctx("x.ipynb"), directory="data", pattern="ra?")
    assert folders.summary == "Listed 1 folder matching ra? in data/."
    none = await list_files(make_ctx("x.ipynb"), directory="data", pattern="*.xlsx")
    assert text_of(none) == "Nothing matching *.xlsx in data/."


@on_server_loop
async def test_list_files_is_bounded(jp_root_dir, make_ctx) -> None:
    many = jp_root_dir / "many"
    many.mkdir()
    for i in range(230):
        (many / f"f{i:03}.txt").write_text("x")
    result = await list_files(make_ctx("x.ipynb"), directory="many")
    lines = text_of(result).splitlines()
    assert len(lines) == 201 and "the first 200" in lines[0]
    assert result.summary == "Listed the first 200 entries in many/."


@on_server_loop
async def test_hidden_files_follow_the_servers_setting(data, make_ctx, jp_serverapp) -> None:
    with pytest.raises(ToolError, match="hidden.*allow_hidden"):
        await read_file(make_ctx("x.ipynb"), path="data/.secret.env")
    with pytest.raises(ToolError, match="hidden"):
        await list_files(make_ctx("x.ipynb"), directory=".hidden_dir")
    jp_serverapp.contents_manager.allow_hidden = True
    try:
        listing = text_of(await list_files(make_ctx("x.ipynb"), directory="data"))
        assert "data/.secret.env" in listing
        assert "TOKEN=abc" in text_of(await read_file(make_ctx("x.ipynb"), path="data/.secret.env"))
    finally:
        jp_serverapp.contents_manager.allow_hidden = False


@on_server_loop
async def test_paths_outside_the_root_are_refused(data, make_ctx, jp_root_dir, tmp_path) -> None:
    outside = tmp_path / "outside.txt"
    assert not outside.is_relative_to(jp_root_dir)
    outside.write_text("not for the agent\n")
    ctx = make_ctx("x.ipynb")
    for bad in ("../outside.txt", "data/../../outside.txt", str(outside), "/etc/passwd"):
        with pytest.raises(ToolError, match="outside the Jupyter root"):
            await read_file(ctx, path=bad)
    for bad in ("..", "/", "data/../.."):
        with pytest.raises(ToolError, match="outside the Jupyter root"):
            await list_files(ctx, directory=bad)
    # A symbolic link inside the root that points outside it is refused too.
    (jp_root_dir / "link.txt").symlink_to(outside)
    with pytest.raises(ToolError, match="outside the Jupyter root"):
        await read_file(ctx, path="link.txt")
    # An absolute path inside the root is fine.
    inside = await read_file(ctx, path=str(data / "notes.txt"))
    assert "first line" in text_of(inside)


@on_server_loop
async def test_missing_paths_and_wrong_kinds_say_what_to_do(data, make_ctx, notebook_file) -> None:
    ctx = make_ctx("x.ipynb")
    with pytest.raises(ToolError, match="no file 'data/nope.csv'.*list_files"):
        await read_file(ctx, path="data/nope.csv")
    with pytest.raises(ToolError, match="no folder 'nowhere'"):
        await list_files(ctx, directory="nowhere")
    with pytest.raises(ToolError, match="is a folder; list it with list_files"):
        await read_file(ctx, path="data/raw")
    with pytest.raises(ToolError, match="is a file, not a folder"):
        await list_files(ctx, directory="data/notes.txt")
    notebook_file("nb.ipynb", [{"id": "c1", "source": "1"}])
    with pytest.raises(ToolError, match="get_notebook_state"):
        await read_file(ctx, path="nb.ipynb")


# -- read_file ----------------------------------------------------------------------------------


@on_server_loop
async def test_read_a_csv_header_rows_and_row_count(data, make_ctx) -> None:
    result = await read_file(make_ctx("x.ipynb"), path="data/sales.csv", max_lines=20)
    lines = text_of(result).splitlines()
    assert lines[0].startswith("# data/sales.csv: CSV (comma-separated)")
    assert lines[0].endswith("3 columns, 1,204 rows")
    assert lines[1] == "columns: region, month, amount"
    assert lines[2] == "region,month,amount" and lines[3] == "north,1,0"
    assert len(lines) == 3 + 20 + 1 and lines[-1].startswith(
        "[… cut: showed the first 20 rows of 1,204"
    )
    assert result.summary == "Read the header and first 20 rows of data/sales.csv (1,204 rows)."

    tsv = await read_file(make_ctx("x.ipynb"), path="data/people.tsv")
    assert "TSV (tab-separated)" in text_of(tsv) and "columns: name, age" in text_of(tsv)
    assert tsv.summary == "Read data/people.tsv (2 rows)."


@on_server_loop
async def test_read_json_pretty_with_its_top_level(data, make_ctx) -> None:
    result = await read_file(make_ctx("x.ipynb"), path="data/config.json")
    text = text_of(result)
    assert "top level: an object with 3 keys: 'name', 'years', 'owner'" in text
    assert '\n "owner": {\n  "team": "bi"\n }' in text  # pretty-printed
    assert result.summary == "Read data/config.json: an object with 3 keys."

    short = text_of(await read_file(make_ctx("x.ipynb"), path="data/config.json", max_lines=3))
    assert "[… cut: showed the first 3 of 10 pretty-printed lines; the file has 65 bytes.]" in short

    (data / "list.json").write_text(json.dumps([{"a": i} for i in range(5)]))
    listed = await read_file(make_ctx("x.ipynb"), path="data/list.json")
    assert "a list of 5 items; the first item is an object" in text_of(listed)

    (data / "broken.json").write_text('{"a": 1,')
    broken = text_of(await read_file(make_ctx("x.ipynb"), path="data/broken.json"))
    assert broken.startswith("(Not valid JSON:") and '{"a": 1,' in broken


@on_server_loop
async def test_read_text_whole_and_cut(data, make_ctx) -> None:
    whole = await read_file(make_ctx("x.ipynb"), path="data/notes.txt")
    assert text_of(whole).splitlines()[1:] == ["first line", "second line"]
    assert whole.summary == "Read data/notes.txt (2 lines)."
    (data / "long.txt").write_text("".join(f"line {i}\n" for i in range(500)))
    cut = await read_file(make_ctx("x.ipynb"), path="data/long.txt", max_lines=10)
    assert text_of(cut).splitlines()[-1].startswith("[… cut: showed the first 10 lines of 500;")
    assert cut.summary == "Read the first 10 lines of data/long.txt (500 lines)."
    (data / "wide.txt").write_text("x" * 50_000)
    wide = text_of(await read_file(make_ctx("x.ipynb"), path="data/wide.txt"))
    assert "[… line cut: 50,000 characters]" in wide and len(wide) < 2_000


@on_server_loop
async def test_a_huge_file_is_read_bounded_and_fast(jp_root_dir, make_ctx) -> None:
    big = jp_root_dir / "big.csv"
    write_big_csv(big, 50 * 1024 * 1024)
    size = os.path.getsize(big)
    opened: list[int] = []
    real_open = builtins.open

    def counting_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        handle = real_open(file, mode, *args, **kwargs)
        if str(file) == str(big):
            read = handle.read
            handle.read = lambda n=-1: (opened.append(n), read(n))[1]  # type: ignore[method-assign]
        return handle

    builtins.open = counting_open
    try:
        result = await read_file(make_ctx("x.ipynb"), path="big.csv", max_lines=5)
    finally:
        builtins.open = real_open
    # Bounded (and so fast: see benchmarks/read_file_huge.py): one read of the head, never
    # the whole file, and a file this big is not even counted line by line.
    assert opened == [256 * 1024]
    text = text_of(result)
    assert len(text) < 20_000
    assert f"{human_size(size)}" in text.splitlines()[0] and "about " in text.splitlines()[0]
    assert "[… cut: showed the first 5 rows of about" in text and f"({size:,} bytes)" in text
    assert result.summary is not None and result.summary.startswith(
        "Read the header and first 5 rows of big.csv (about "
    )


@on_server_loop
async def test_other_encodings_empty_files_and_a_cut_character(data, make_ctx) -> None:
    (data / "latin.txt").write_bytes("café crème\nà la carte\n".encode("cp1252"))
    latin = text_of(await read_file(make_ctx("x.ipynb"), path="data/latin.txt"))
    assert "café crème" in latin and "à la carte" in latin
    (data / "empty.txt").write_text("")
    empty = await read_file(make_ctx("x.ipynb"), path="data/empty.txt")
    assert empty.summary == "Read data/empty.txt (0 lines)."
    # The head stops inside a two-byte character: it is left out, not shown as garbage.
    (data / "accents.txt").write_text("é" * 200_000)
    accents = await read_file(make_ctx("x.ipynb"), path="data/accents.txt")
    assert "\ufffd" not in text_of(accents) and "[… line cut: 131,072 characters]" in text_of(
        accents
    )
    assert accents.summary == "Read the first 1 line of data/accents.txt (1 line)."


@on_server_loop
async def test_binary_files_are_refused_with_their_type_and_size(data, make_ctx) -> None:
    with pytest.raises(ToolError, match=r"'data/chart.png' is a PNG image \(2.0 KB\), not text"):
        await read_file(make_ctx("x.ipynb"), path="data/chart.png")
    (data / "blob.bin").write_bytes(bytes(range(256)) * 4)
    with pytest.raises(ToolError, match="binary file"):
        await read_file(make_ctx("x.ipynb"), path="data/blob.bin")
    (data / "book.xlsx").write_bytes(b"PK\x03\x04" + b"x" * 100)
    with pytest.raises(ToolError, match="Excel workbook"):
        await read_file(make_ctx("x.ipynb"), path="data/book.xlsx")


@on_server_loop
async def test_parquet_without_pyarrow_says_what_is_missing(data, make_ctx, monkeypatch) -> None:
    (data / "t.parquet").write_bytes(b"PAR1" + b"\0" * 64 + b"PAR1")
    real_import = builtins.__import__

    def no_pyarrow(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith("pyarrow"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pyarrow)
    result = await read_file(make_ctx("x.ipynb"), path="data/t.parquet")
    assert "pyarrow is not installed" in text_of(result) and "72 bytes" in text_of(result)
    assert (
        result.summary
        == "data/t.parquet is a Parquet file; its contents cannot be shown without pyarrow."
    )


def test_tools_are_read_only_low_risk_and_registered() -> None:
    names = [t.name for t in notebook_tools()]
    assert "list_files" in names and "read_file" in names
    for tool in (list_files, read_file):
        assert tool.read_only and tool.risk_level == "low"
    schema = read_file.input_schema
    assert schema["required"] == ["path"] and "max_lines" in schema["properties"]
    assert "list_files" in SYSTEM_PROMPT and "read_file" in SYSTEM_PROMPT


# -- through the agent loop ---------------------------------------------------------------------


@on_server_loop
async def test_the_agent_lists_and_reads_files_without_asking(data, service) -> None:
    fake = FakeAnthropic().start()
    client = anthropic.AsyncAnthropic(base_url=fake.base_url, api_key=fake.api_key, max_retries=0)
    try:
        fake.add(
            Turn(tool_uses=[ToolUse("list_files", {"directory": "data", "pattern": "*.csv"})]),
            Turn(tool_uses=[ToolUse("read_file", {"path": "data/sales.csv", "max_lines": 3})]),
            Turn(text="data/sales.csv has 1,204 rows."),
        )
        emitter, events = Emitter(), ListSubscriber()
        emitter.subscribe(events)
        loop = AgentLoop(
            client,
            ToolRegistry(notebook_tools()),
            broker=ReplyBroker(),
            config=AgentConfig(model="claude-test"),
        )
        chat = ChatContext(
            chat_id="chat-1",
            notebook_path="x.ipynb",
            services=AgentServices(notebook=service),
            approval=ApprovalPolicy(),
        )
        session = Session(emitter, Producer(model="claude-test"))
        result = await asyncio.wait_for(
            loop.run(session, [], "What data is there?", chat=chat, control=RunControl()), 30
        )
    finally:
        await client.close()
        fake.stop()
    assert fake.problems == [], fake.problems
    assert result.status == "completed"
    assert not events.of_type("awaiting.confirmation")
    completed = events.of_type("tool.completed")
    assert [e["tool"] for e in completed] == ["list_files", "read_file"]
    assert all(e["status"] == "success" for e in completed)
    summaries = " ".join(str(e) for e in completed)
    assert "Listed 1 file matching *.csv in data/." in summaries
    blocks = fake.requests[2].body["messages"][-1]["content"]
    [tool_result] = [b for b in blocks if b.get("type") == "tool_result"]
    assert "columns: region, month, amount" in str(tool_result["content"])
