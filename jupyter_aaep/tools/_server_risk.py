"""Kernel code that reaches for the Jupyter server itself: a helper of the Python risk walk.

The server's login token lets any program of the same user act as the person (answer the
agent's approvals, switch a chat to auto mode). Code in the kernel finds it in a few ways:
the runtime folder (however it is found: the kernel's own connection file lives there, as do
the server's ``jpserver-<pid>.json`` files holding the token), the server's list of running
servers, or environment variables. Each is named here so the card can say it in plain words.
A third finding needs two facts of one cell: work scheduled to run after the cell ends
(``loop.create_task``, ``ensure_future``, threads) *and* a network call — what code does to
keep answering requests when nobody is looking. Either alone is ordinary (and the first is
flagged by :mod:`._flow_risk` already); together the card says "sends data to a web address
in the background".

Reading a local CSV or fetching a URL for data touches none of these rules.
"""

from __future__ import annotations

import ast
import re

from ._flow_risk import (
    BACKGROUND_CALLS,
    BACKGROUND_METHODS,
    HTTP_METHODS,
    HTTP_ROOTS,
    NETWORK_CALLS,
)
from ._shell_risk import SERVER_TEXTS, Add

__all__ = ["ServerReach"]

RUNTIME_NAMES = {
    "jupyter_runtime_dir",
    "get_connection_file",
    "find_connection_file",
    "connection_file",
    "runtime_dir",
}
"""Names (functions, attributes) that lead to Jupyter's runtime folder, from whichever module."""
SERVER_NAMES = {"list_running_servers", "list_running_kernels"}
"""Functions that return the running servers' addresses together with their tokens."""
SCHEDULERS = {"create_task", "ensure_future", *BACKGROUND_METHODS}
OPENER_MAKERS = ("urllib.request.build_opener()", "urllib.request.OpenerDirector()")
_IDENTIFIER = re.compile(r"^[A-Za-z_][\w.]*$")


class ServerReach:
    """Collects what one cell does to reach the server, reported through *add*."""

    def __init__(self, add: Add) -> None:
        self.add = add
        self.scheduled: str | None = None
        self.network: str | None = None

    def named(self, name: str) -> None:
        """A reference to *name* (resolved through imports): the runtime folder or server list."""
        attr = name.rsplit(".", 1)[-1].removesuffix("()")
        if attr in RUNTIME_NAMES:
            self.add("runtime", attr)
        elif attr in SERVER_NAMES:
            self.add("server_token", attr)

    def text(self, text: str) -> None:
        """A string the cell builds: file names in the runtime folder, the token's variables,
        and names of the functions above spelled as text (``getattr(m, 'get_connection_file')``)."""
        for pattern, category in SERVER_TEXTS:
            match = pattern.search(text)
            if match:
                self.add(category, match.group(0))
        if _IDENTIFIER.match(text):
            self.named(text)

    def called(self, node: ast.Call, name: str, method: str, receiver: str | None) -> None:
        """A call: scheduling for later, a network call, an opener sending a body."""
        if name in BACKGROUND_CALLS or (method in SCHEDULERS and receiver is not None):
            self.scheduled = self.scheduled or (name if name in BACKGROUND_CALLS else method)
        opener = method == "open" and (receiver or "").startswith(OPENER_MAKERS)
        if opener and (len(node.args) > 1 or any(k.arg == "data" for k in node.keywords)):
            self.add("network", "an opener sending data")
        root = name.split(".")[0]
        if (
            opener
            or name in NETWORK_CALLS
            or (root in HTTP_ROOTS and method in HTTP_METHODS)
            or name.endswith(".urlopen")
        ):
            self.network = self.network or (method or name)

    def finish(self) -> None:
        """After the walk: network work scheduled to go on after the cell."""
        if self.scheduled and self.network:
            self.add("background_send", f"{self.scheduled}, {self.network}")
