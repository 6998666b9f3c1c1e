"""The kernel side: ``%aaep``, kernel tools, and what the server runs in a notebook's kernel.

``runtime`` (tool registry, ``describe``, the ``*_json`` functions the server calls), ``client``
(signed calls to the server's kernel API), ``magic`` (``%aaep``), ``autoload`` (loading the
extension in every kernel of the environment) and ``view`` (the ipywidgets live view). Nothing
is imported here, so the server can import ``runtime`` in a kernel without loading the rest.
"""

from __future__ import annotations

__all__ = ["autoload", "client", "magic", "runtime", "view"]
