"""The documents layer, previews and undo: collaboration required, cells by id, one-step revert."""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace
from typing import Any

import pytest
from jupyter_ydoc import YNotebook
from nb_helpers import cell_by_id, on_server_loop, wait_for

import jupyter_aaep.notebook as notebook_package
from jupyter_aaep.agent.services import AgentServices
from jupyter_aaep.agent.tools import StaleApproval, ToolContext
from jupyter_aaep.notebook import (
    CollaborationUnavailable,
    NotebookDocuments,
    NotebookService,
    cells_fingerprint,
    source_fingerprint,
)
from jupyter_aaep.notebook.documents import LiveNotebook
from jupyter_aaep.tools.notebook import (
    create_cell,
    delete_cell,
    edit_cell,
    get_notebook_state,
    notebook_tools,
    restart_kernel,
    run_all_cells,
    run_cell,
)

pytestmark = pytest.mark.shared_server


def fake_server(settings: dict[str, Any]) -> Any:
    return SimpleNamespace(web_app=SimpleNamespace(settings=settings))


@on_server_loop
async def test_without_collaboration_tools_fail_with_how_to_enable_it() -> None:
    documents = NotebookDocuments(fake_server({}))
    assert not documents.available
    with pytest.raises(CollaborationUnavailable) as caught:
        await documents.open("a.ipynb")
    assert "pip install jupyter-collaboration" in str(caught.value)
    assert "jupyter_server_ydoc" in str(caught.value)

    disabled = NotebookDocuments(
        fake_server({"jupyter_server_ydoc": SimpleNamespace(get_document=None, disable_rtc=True)})
    )
    with pytest.raises(CollaborationUnavailable, match="disable_rtc"):
        await disabled.open("a.ipynb")

    service = NotebookService(fake_server({}))
    ctx = ToolContext(
        tool_call_id="t", notebook_path="a.ipynb", services=AgentServices(notebook=service)
    )
    with pytest.raises(CollaborationUnavailable):
        await create_cell(ctx, source="x")


def local_notebook(cells: list[dict[str, Any]], minor: int = 5) -> LiveNotebook:
    doc = YNotebook()
    doc.set({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": minor})
    return LiveNotebook("local.ipynb", doc)


def code(cell_id: str, source: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": cell_id,
        "cell_type": "code",
        "source": source,
        "metadata": {},
        "outputs": [],
        "execution_count": None,
        **extra,
    }


def test_restore_cells_undoes_edits_in_one_transaction_and_keeps_untouched_cells() -> None:
    nb = local_notebook([code("a", "1"), code("b", "2"), code("c", "3")])
    snapshot = [dict(c) for c in nb.cells()]
    nb.set_source("b", "changed")
    nb.delete_cell("c")
    added = nb.insert_cell(0, cell_type="markdown", source="# new")
    nb.move_cell("a", 2)

    events: list[Any] = []
    subscription = nb.ynotebook.ydoc.observe(lambda event: events.append(event))
    report = nb.restore_cells(snapshot)
    nb.ynotebook.ydoc.unobserve(subscription)
    assert len(events) == 1
    assert [(c["id"], c["source"]) for c in nb.cells()] == [("a", "1"), ("b", "2"), ("c", "3")]
    assert added["id"] not in nb.cell_ids()
    assert report.removed == 1 and report.added == 1


def test_restore_leaves_unchanged_cells_alone() -> None:
    nb = local_notebook([code("a", "1"), code("b", "2"), code("c", "3")])
    snapshot = nb.cells()
    nb.set_source("b", "changed")
    deltas: list[Any] = []
    subscription = nb.ynotebook.ycells.observe(lambda event: deltas.append(event.delta))
    nb.restore_cells(snapshot)
    nb.ynotebook.ycells.unobserve(subscription)
    assert deltas[0][0] == {"retain": 1}  # cell a was not touched (nor c: nothing after b)
    assert [d for d in deltas[0][1:] if "delete" in d] == [{"delete": 1}]
    assert nb.cell("b")["source"] == "2"


def test_new_cells_get_short_unique_ids_and_old_notebooks_are_upgraded_for_ids() -> None:
    nb = local_notebook([code("a", "1")], minor=4)
    ids = {nb.insert_cell(1, cell_type="code", source=str(i))["id"] for i in range(50)}
    assert len(ids) == 50 and all(len(i) == 8 for i in ids)
    assert nb.ynotebook.get()["nbformat_minor"] == 5  # so ids survive saving


def test_clear_outputs_checks_ids_first_and_keeps_markdown() -> None:
    out = [{"output_type": "stream", "name": "stdout", "text": "x"}]
    nb = local_notebook(
        [
            code("a", "1", outputs=out, execution_count=1),
            {"id": "m", "cell_type": "markdown", "source": "t", "metadata": {}},
        ]
    )
    with pytest.raises(Exception, match="nope"):
        nb.clear_outputs(["a", "nope"])
    assert nb.cell("a")["outputs"]  # nothing cleared on error
    assert nb.clear_outputs() == ["a"]
    assert nb.cell("a")["outputs"] == [] and nb.cell("a")["execution_count"] is None


@on_server_loop
async def test_previews_bind_approval_to_the_source_and_carry_risk(notebook_file, make_ctx) -> None:
    path = notebook_file(
        "p.ipynb", [code("safe", "x = 1"), code("danger", "!rm -rf data"), code("md", "")]
    )
    ctx = make_ctx(path)
    spec = {tool.name: tool for tool in notebook_tools()}
    preview = await spec["run_cell"].describe(ctx, {"cell_id": "safe"})
    assert preview.fingerprint == source_fingerprint("x = 1")
    assert preview.summary == "Running cell 1." and preview.extra_context["code"] == "x = 1"
    assert preview.risk_flags == () and preview.risk_level is None

    risky = await spec["run_cell"].describe(ctx, {"cell_id": "danger"})
    assert risky.risk_level == "high" and risky.risk_flags[0].startswith("deletes files")

    missing = await spec["run_cell"].describe(ctx, {"cell_id": "ghost"})
    assert missing.fingerprint not in (None, source_fingerprint(""))

    everything = await spec["run_all_cells"].describe(ctx, {})
    assert everything.fingerprint == cells_fingerprint(
        [("safe", "x = 1"), ("danger", "!rm -rf data")]
    )
    assert everything.risk_level == "high"

    edit = await spec["edit_cell"].describe(ctx, {"cell_id": "safe", "source": "x = 2"})
    assert "-x = 1" in edit.extra_context["diff"] and "+x = 2" in edit.extra_context["diff"]
    delete = await spec["delete_cell"].describe(ctx, {"cell_id": "danger"})
    assert delete.summary == "Deleting cell 2." and "!rm" in delete.extra_context["source"]
    assert (await spec["restart_kernel"].describe(ctx, {})).consequence

    stale = make_ctx(path, approved=everything.fingerprint)
    (await ctx.services.notebook.open(path)).set_source("safe", "x = 3")
    with pytest.raises(StaleApproval):
        await run_all_cells(stale)
    with pytest.raises(StaleApproval):
        await run_cell(make_ctx(path, approved=missing.fingerprint), cell_id="safe")


def test_tool_metadata() -> None:
    meta = {
        t.name: (t.risk_level, t.irreversible, t.read_only, t.require_confirmation)
        for t in notebook_tools()
    }
    assert meta["get_notebook_state"] == ("low", False, True, False)
    assert meta["run_cell"] == ("medium", True, False, True)
    assert meta["run_all_cells"] == ("medium", True, False, True)
    assert meta["restart_kernel"] == ("high", True, False, True)
    assert meta["delete_cell"][0] == "medium"
    assert all(t.description and t.input_schema["type"] == "object" for t in notebook_tools())
    for tool in notebook_tools():
        for name, prop in tool.input_schema["properties"].items():
            assert prop.get("description"), f"{tool.name}.{name} has no description for the model"
    assert restart_kernel.name == "restart_kernel"


def test_package_exports() -> None:
    assert sorted(notebook_package.__all__) == notebook_package.__all__
    for name in notebook_package.__all__:
        assert hasattr(notebook_package, name)


@on_server_loop
async def test_undo_reverts_the_recorded_operations_live(
    notebook_file, make_ctx, service, browser
) -> None:
    path = notebook_file("undo.ipynb", [code("a", "1"), code("b", "2")])
    ctx = make_ctx(path)
    record = service.begin_record("chat-1", "sess-1", path)
    async with browser(path) as doc:
        await get_notebook_state(ctx)
        await create_cell(ctx, source="3")
        await edit_cell(ctx, cell_id="a", source="one")
        await delete_cell(ctx, cell_id="b")
        await wait_for(
            lambda: len(doc.ycells) == 2 and cell_by_id(doc, "b") is None, what="the agent's edits"
        )
        assert [op.kind for op in record.operations] == ["create", "edit", "delete"]
        report = await service.undo(path, [record])
        assert (report.removed, report.added, report.restored, report.kept) == (1, 1, 1, [])
        await wait_for(lambda: [c.get("id") for c in doc.ycells] == ["a", "b"], what="the undo")
        assert cell_by_id(doc, "a")["source"] == "1" and cell_by_id(doc, "b")["source"] == "2"


def test_tools_load_and_explain_even_without_jupyter_collaboration_installed() -> None:
    """With pycrdt and the collaboration packages missing, the tools still load and say what to do."""
    script = """
import asyncio, sys
sys.modules.update({"pycrdt": None, "jupyter_ydoc": None, "jupyter_server_ydoc": None})
import subprocess
import sys
from types import SimpleNamespace
from jupyter_aaep.agent.services import AgentServices
from jupyter_aaep.agent.tools import ToolContext
from jupyter_aaep.notebook import CollaborationUnavailable, NotebookService
from jupyter_aaep.tools.notebook import get_notebook_state
service = NotebookService(SimpleNamespace(web_app=SimpleNamespace(settings={})))
ctx = ToolContext(tool_call_id="t", notebook_path="a.ipynb", services=AgentServices(notebook=service))
try:
    asyncio.run(get_notebook_state(ctx))
except CollaborationUnavailable as error:
    print(error)
"""
    done = subprocess.run(
        [sys.executable, "-c", script], check=True, capture_output=True, text=True, timeout=60
    )
    assert "pip install jupyter-collaboration" in done.stdout, done.stderr
