"""For JupyterHub: the model gateway service and its usage ledger (docs/JUPYTERHUB.md).

Nothing here is imported by the server extension; the gateway runs as its own hub service.
"""

from __future__ import annotations

__all__: list[str] = []
