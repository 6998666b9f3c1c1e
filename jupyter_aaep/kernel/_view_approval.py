"""The Approve and Reject of the ``%aaep`` view: an ipywidget whose Python side cannot answer.

The Python side of any ipywidget runs in the kernel, so anything code in the kernel does to it
(set a trait, send a custom message on its comm) is indistinguishable from what the widget
itself would do. This widget therefore only *names* a request: ``chat_id`` and ``request_id``
(the event id of the ``awaiting.confirmation``). Its view, ``AAEPApprovalView`` in the
labextension (registered with JupyterLab's widget manager as module ``jupyter-aaep``), reads
those two once, fetches the request from the server by id, draws the server's description of
it with Approve and Reject, and sends the person's answer from the browser with their Jupyter
login. It never listens to the model afterwards and sends nothing back to the kernel; nothing
here sends a reply.

Where the labextension is not loaded (classic notebook, nbconvert, another front end) the view
cannot render; the card keeps its plain fallback, :data:`PANEL_ONLY`, which the view hides
when it does render (``jp-AAEPView-panelOnly``, see the labextension's ``style/base.css``).
"""

from __future__ import annotations

import ipywidgets as widgets  # type: ignore[import-untyped]
from traitlets import Unicode

__all__ = [
    "FRONTEND_MODULE",
    "FRONTEND_VERSION",
    "PANEL_ONLY",
    "PANEL_ONLY_CLASS",
    "ApprovalWidget",
]

FRONTEND_MODULE = "jupyter-aaep"
"""The labextension's npm name, under which it registers the view with the widget manager."""
FRONTEND_VERSION = "^1.0.0"
"""The versions of the view this side works with: of the contract between them (the traits
``chat_id`` and ``request_id``; ``NOTEBOOK_WIDGET_VERSION`` in ``labextension/src/tokens.ts``),
not of the package, so a kernel of another release still gets its buttons."""
PANEL_ONLY = "Approve or reject this in the side panel."
"""What the card says where the notebook's own buttons cannot be drawn."""
PANEL_ONLY_CLASS = "jp-AAEPView-panelOnly"
"""The class of what the labextension's view hides once it shows the buttons itself."""


class ApprovalWidget(widgets.DOMWidget):  # type: ignore[misc]
    """Names one confirmation for the browser to draw; has no method that answers it.

    Parameters
    ----------
    chat_id
        The chat whose session asked.
    request_id
        The ``event_id`` of the ``awaiting.confirmation`` event (not its reply token, which
        would then be saved with the notebook's widget state).
    """

    _model_name = Unicode("AAEPApprovalModel").tag(sync=True)
    _model_module = Unicode(FRONTEND_MODULE).tag(sync=True)
    _model_module_version = Unicode(FRONTEND_VERSION).tag(sync=True)
    _view_name = Unicode("AAEPApprovalView").tag(sync=True)
    _view_module = Unicode(FRONTEND_MODULE).tag(sync=True)
    _view_module_version = Unicode(FRONTEND_VERSION).tag(sync=True)

    chat_id = Unicode("", help="The chat whose session asked.").tag(sync=True)
    request_id = Unicode("", help="The event id of the awaiting.confirmation.").tag(sync=True)

    def __init__(self, *, chat_id: str, request_id: str) -> None:
        super().__init__(chat_id=chat_id, request_id=request_id)
        self.add_class("jp-AAEPView-approval")
