"""Fixtures for the live-notebook tests: a Jupyter server with collaboration, and a browser stand-in.

Modules marked ``shared_server`` share one server (``jupyter_aaep/testing/shared_server.py``);
after each test its rooms, file ids, kernels and files are gone, so tests may reuse paths.

pytest-jupyter's fixtures are imported here (rather than through ``pytest_plugins``, which
pytest only accepts in the root conftest) so this folder stays self-contained.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from jupyter_ydoc import YNotebook
from nb_helpers import Progress, write_notebook
from pycrdt import Assoc, Awareness, StickyIndex, create_awareness_message
from pytest_jupyter.jupyter_server import *

# isort: split
from jupyter_aaep.agent.services import AgentServices
from jupyter_aaep.agent.tools import ToolContext
from jupyter_aaep.notebook import NotebookService
from jupyter_aaep.testing.rooms import join_room, synced
from jupyter_aaep.testing.shared_fixtures import *  # a shared server per module when marked

SAVE_DELAY = 0.2


@pytest.fixture(autouse=True)
def _private_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rooms opened by ``get_document`` ignore ``SQLiteYStore.db_path`` and write
    ``.jupyter_ystore.db`` in the current directory: keep that file per test (a shared one
    is locked by the previous test's rooms for seconds) and out of the repository."""
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def jp_server_config(jp_root_dir: Path) -> dict[str, Any]:
    """Collaboration on, with a short autosave delay so tests can read the saved file soon."""
    return {
        "ServerApp": {
            "jpserver_extensions": {"jupyter_server_ydoc": True, "jupyter_server_fileid": True},
        },
        # Relative, so in the test's own directory (``_private_cwd``), as the rooms that
        # ``get_document`` opens: on a shared server a file of the module's stayed locked by
        # an earlier test's stopped room for seconds, and a room then opened late.
        "SQLiteYStore": {"db_path": ".rtc_test.db"},
        "BaseFileIdManager": {
            "root_dir": str(jp_root_dir),
            "db_path": str(jp_root_dir / ".fid_test.db"),
            "db_journal_mode": "OFF",
        },
        "YDocExtension": {"document_save_delay": SAVE_DELAY, "document_cleanup_delay": 60},
    }


@pytest.fixture
def service(jp_serverapp: Any, jp_asyncio_loop: asyncio.AbstractEventLoop) -> Any:
    svc = NotebookService(jp_serverapp, progress_interval=0.5, progress_min_gap=0.5)
    yield svc
    jp_asyncio_loop.run_until_complete(svc.close())


@pytest.fixture
def make_ctx(service: NotebookService) -> Callable[..., ToolContext]:
    def make(
        path: str, *, approved: str | None = None, progress: Progress | None = None
    ) -> ToolContext:
        return ToolContext(
            tool_call_id="call-1",
            chat_id="chat-1",
            notebook_path=path,
            services=AgentServices(notebook=service),
            approved_fingerprint=approved,
            _progress=progress,
        )

    return make


@pytest.fixture
def notebook_file(jp_root_dir: Path) -> Callable[..., str]:
    def make(path: str, cells: list[dict[str, Any]], **kwargs: Any) -> str:
        return write_notebook(jp_root_dir, path, cells, **kwargs)

    return make


@pytest.fixture
def browser(
    jp_fetch: Any, jp_http_port: int, jp_base_url: str, jp_auth_header: dict[str, str]
) -> Any:
    """Connects a ``YNotebook`` to a notebook's room, as JupyterLab does."""

    @asynccontextmanager
    async def connect(path: str) -> AsyncIterator[YNotebook]:
        websocket, room = await join_room(
            jp_fetch, path, port=jp_http_port, base_url=jp_base_url, auth_header=jp_auth_header
        )
        async with synced(websocket, room) as doc:
            yield doc

    return connect


@pytest.fixture
def collaborator(jp_fetch, jp_http_port, jp_base_url, jp_auth_header) -> Any:
    """A room client that also publishes its editor's cursor in the awareness, as JupyterLab does."""

    @asynccontextmanager
    async def connect(
        path: str,
    ) -> AsyncIterator[tuple[YNotebook, Callable[..., Awaitable[None]]]]:
        websocket, room = await join_room(
            jp_fetch, path, port=jp_http_port, base_url=jp_base_url, auth_header=jp_auth_header
        )
        doc = YNotebook()
        awareness = Awareness(doc.ydoc)

        async def put_cursor(
            cell_index: int, offset: int, also: Sequence[tuple[int, int]] = ()
        ) -> None:
            """Place the cursor in a cell (a Yjs relative position, as JupyterLab's editor does);
            *also* adds more cursors (cell index, offset), as in an editor with several."""
            cursors = []
            for index, at in [(cell_index, offset), *also]:
                position = StickyIndex.new(doc.ycells[index]["source"], at, Assoc.AFTER).to_json()
                cursors.append({"anchor": position, "head": position})
            awareness.set_local_state({"user": {"name": "Ada"}, "cursors": cursors})
            update = awareness.encode_awareness_update([awareness.client_id])
            await websocket.write_message(create_awareness_message(update), binary=True)

        async with synced(websocket, room, doc):
            yield doc, put_cursor

    return connect
