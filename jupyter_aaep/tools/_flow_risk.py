"""Two risks the name tables of :mod:`._risk_rules` cannot see, read from a cell's calls.

- Work that goes on after the cell ends (threads, timers, scheduled callbacks, IPython event
  hooks): such code could act later, when nobody watches, e.g. answer the agent's next request.
- Network calls whose address or body is built from file or variable contents: a "read-only"
  ``GET`` can carry a file out in its URL (``urlopen(url + open('secret.txt').read())``). A URL
  that is a literal or a plain variable is not flagged (loading data from the web is common);
  one assembled from pieces, a file read, or a name bound to a file read is.

Both are phrased for listeners by :mod:`.code_risk` ("background", "network").
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from ._shell_risk import Add

__all__ = ["BACKGROUND_CALLS", "FlowCheck"]

BACKGROUND_CALLS = {
    "threading.Thread",
    "threading.Timer",
    "_thread.start_new_thread",
    "_thread.start_new",
    "concurrent.futures.ThreadPoolExecutor",
    "concurrent.futures.ProcessPoolExecutor",
    "multiprocessing.Process",
    "multiprocessing.Pool",
    "sched.scheduler",
    "asyncio.create_task",
    "asyncio.ensure_future",
    "asyncio.run_coroutine_threadsafe",
}
BACKGROUND_METHODS = {
    "call_later",
    "call_at",
    "call_soon_threadsafe",
    "run_in_executor",
    "add_timeout",
    "add_callback",
    "spawn_callback",
}
NETWORK_CALLS = {
    "urllib.request.urlopen",
    "urllib.request.Request",
    "urllib.request.urlretrieve",
    "http.client.HTTPConnection",
    "http.client.HTTPSConnection",
    "socket.create_connection",
    "socket.getaddrinfo",
    "socket.gethostbyname",
}
HTTP_ROOTS = ("requests", "httpx", "aiohttp", "urllib3")
HTTP_METHODS = {
    "get",
    "head",
    "options",
    "request",
    "post",
    "put",
    "patch",
    "delete",
    "stream",
    "urlopen",
    "fetch",
}
FILE_READS = {"read", "read_text", "read_bytes", "readlines", "readline"}
OPENERS = {"open", "io.open", "codecs.open", "pathlib.Path()"}
PAYLOAD_KEYWORDS = {
    "url",
    "params",
    "data",
    "json",
    "headers",
    "files",
    "cookies",
    "content",
    "body",
}


class FlowCheck:
    """Called by the Python walk for every assignment and call (it owns name resolution)."""

    def __init__(self, add: Add, qualname: Callable[[ast.AST], str | None]) -> None:
        self.add = add
        self.qualname = qualname
        self.from_files: set[str] = set()
        """Names bound to something read from a file in this cell."""

    def assigned(self, targets: list[ast.expr], value: ast.expr) -> None:
        names = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
        if self._reads_file(value) or any(
            isinstance(n, ast.Name) and n.id in self.from_files for n in ast.walk(value)
        ):
            self.from_files.update(names)

    def called(self, node: ast.Call, name: str, method: str) -> None:
        receiver = self.qualname(node.func.value) if isinstance(node.func, ast.Attribute) else None
        if (
            name in BACKGROUND_CALLS
            or (method in BACKGROUND_METHODS and receiver is not None)
            or (method == "register" and (receiver or "").endswith(".events"))
        ):
            self.add("background", name if name in BACKGROUND_CALLS else f".{method}()")
            return
        network = name in NETWORK_CALLS or (
            name.split(".")[0] in HTTP_ROOTS and method in HTTP_METHODS
        )
        if network and self._carries_data(node):
            self.add("network", f"{name.split('.')[-1] or method} of file or variable contents")

    def _carries_data(self, node: ast.Call) -> bool:
        values = list(node.args) + [
            k.value for k in node.keywords if k.arg is None or k.arg in PAYLOAD_KEYWORDS
        ]
        for value in values:
            if self._reads_file(value):
                return True
            if any(isinstance(n, ast.Name) and n.id in self.from_files for n in ast.walk(value)):
                return True
            if _assembled(value):
                return True
        return False

    def _reads_file(self, node: ast.AST) -> bool:
        for part in ast.walk(node):
            if not isinstance(part, ast.Call):
                continue
            func = part.func
            if isinstance(func, ast.Attribute) and func.attr in FILE_READS:
                return True
            name = (self.qualname(func) or "").removeprefix("builtins.")
            if name in OPENERS and not isinstance(func, ast.Attribute):
                return True
            if name.startswith(("pandas.read_", "numpy.load", "json.load", "pickle.load")):
                return True
        return False


def _assembled(node: ast.AST) -> bool:
    """Whether *node* builds text from pieces at least one of which is not a literal."""
    for part in ast.walk(node):
        if isinstance(part, ast.JoinedStr) and any(
            isinstance(v, ast.FormattedValue) for v in part.values
        ):
            return True
        if (
            isinstance(part, ast.BinOp)
            and isinstance(part.op, (ast.Add, ast.Mod))
            and not (isinstance(part.left, ast.Constant) and isinstance(part.right, ast.Constant))
        ):
            return True
        if (
            isinstance(part, ast.Call)
            and isinstance(part.func, ast.Attribute)
            and part.func.attr in ("format", "join", "encode", "b64encode", "urlencode", "dumps")
        ):
            return True
        if (
            isinstance(part, ast.Call)
            and isinstance(part.func, ast.Name)
            and part.func.id in ("urlencode", "b64encode", "str", "repr")
        ):
            return True
        if isinstance(part, ast.Dict) and any(not isinstance(v, ast.Constant) for v in part.values):
            return True
    return False
