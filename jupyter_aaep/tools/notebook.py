"""The notebook tools the agent calls: a thin layer over :class:`NotebookService`.

Every tool addresses cells by ``id`` (ids never shift when cells move; positions do), re-opens
the live document on each call, and returns compact text to the model and one short sentence
(``summary``) for listeners, who hear cells by their position: "Created code cell 3, after
cell 2" (docs/NARRATION.md has the rules). ``run_cell`` and ``run_all_cells`` bind their approval to the exact source shown.
"""

from __future__ import annotations

from ..agent.tools import ToolSpec
from ._a11y_tools import check_accessibility
from ._alt_text_tools import set_figure_alt_text
from ._arrange_tools import delete_cell, move_cell
from ._edit_tools import create_cell, edit_cell, get_notebook_state, list_notebooks
from ._figure_tools import view_figure
from ._file_tools import list_files, read_file
from ._outputs_tools import clear_outputs
from ._run_tools import interrupt_kernel, restart_kernel, run_all_cells, run_cell, wait_for_cell

__all__ = [
    "check_accessibility",
    "clear_outputs",
    "create_cell",
    "delete_cell",
    "edit_cell",
    "get_notebook_state",
    "interrupt_kernel",
    "list_files",
    "list_notebooks",
    "move_cell",
    "notebook_tools",
    "read_file",
    "restart_kernel",
    "run_all_cells",
    "run_cell",
    "set_figure_alt_text",
    "view_figure",
    "wait_for_cell",
]


def notebook_tools() -> list[ToolSpec]:
    """The built-in notebook tools, in the order the model sees them."""
    return [
        get_notebook_state,
        list_notebooks,
        list_files,
        read_file,
        view_figure,
        set_figure_alt_text,
        check_accessibility,
        create_cell,
        edit_cell,
        delete_cell,
        move_cell,
        run_cell,
        run_all_cells,
        wait_for_cell,
        clear_outputs,
        interrupt_kernel,
        restart_kernel,
    ]
