"""The server's side of "a chat belongs to one notebook": its resolved root, the cells of a
notebook under it (never a file outside it), and file ids only from a per-file manager."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace

from jupyter_aaep.server.chat_roots import notebook_cell_ids, per_root_file_id, server_root


def _notebook(path: Path, ids: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    cells = [
        {"cell_type": "code", "id": i, "source": "", "metadata": {}, "outputs": []} for i in ids
    ]
    path.write_text(
        json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    )


def test_the_root_is_resolved_so_a_link_to_a_folder_is_that_folder(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "link")
    assert server_root(SimpleNamespace(root_dir=str(tmp_path / "link"))) == str(
        (tmp_path / "real").resolve()
    )
    assert server_root(SimpleNamespace(root_dir="")) is None


def test_cells_are_read_only_inside_the_root(tmp_path: Path) -> None:
    root = tmp_path / "root"
    _notebook(root / "dir" / "a.ipynb", ["c1", "made"])
    _notebook(tmp_path / "outside.ipynb", ["secret"])
    os.symlink(tmp_path / "outside.ipynb", root / "escape.ipynb")
    (root / "broken.ipynb").write_text("{not json")
    real = server_root(SimpleNamespace(root_dir=str(root)))
    assert notebook_cell_ids(real, "dir/a.ipynb") == {"c1", "made"}
    assert notebook_cell_ids(real, "/dir/a.ipynb") == {"c1", "made"}
    for path in ("../outside.ipynb", "escape.ipynb", "broken.ipynb", "missing.ipynb", "dir"):
        assert notebook_cell_ids(real, path) is None, path
    assert notebook_cell_ids(None, "dir/a.ipynb") is None


def test_file_ids_come_only_from_a_manager_with_one_record_per_file() -> None:
    class ArbitraryFileIdManager:  # root-relative paths in one database for every folder
        def index(self, path: str) -> str:
            return "shared-id"

    class LocalFileIdManager:
        def index(self, path: str) -> str:
            return f"id-of-{path}"

    assert per_root_file_id({"file_id_manager": ArbitraryFileIdManager()})("a.ipynb") is None
    assert per_root_file_id({"file_id_manager": LocalFileIdManager()})("a.ipynb") == "id-of-a.ipynb"
    assert per_root_file_id({})("a.ipynb") is None
