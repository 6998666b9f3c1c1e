"""Load ``%aaep`` in kernels this server starts when the environment's config cannot say so.

The usual way (``kernel/autoload.py``) writes ``{sys.prefix}/etc/ipython/ipython_kernel_config.json``.
In a shared environment (a root-owned conda or venv on JupyterHub) a user's server cannot write
there, and before this every user had to run ``%load_ext jupyter_aaep``. Instead, the server adds
``--InteractiveShellApp.extra_extensions=jupyter_aaep`` to the command line of each IPython kernel
*it* starts (IPython's option for extensions named on the command line; it adds to the configured
list instead of replacing it). Kernels of other languages are left alone, and a restarted kernel
keeps the argument (jupyter_client reuses the launch arguments). Nothing is written anywhere.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from ..kernel.autoload import EXTENSION

__all__ = ["ARGUMENT", "add_extension_to_ipython_kernels", "is_ipython_kernel"]

ARGUMENT = f"--InteractiveShellApp.extra_extensions={EXTENSION}"
log = logging.getLogger(__name__)


def is_ipython_kernel(argv: list[str]) -> bool:
    """Whether a kernel spec's command starts ipykernel (``-m ipykernel_launcher`` or ``ipykernel``)."""
    return any(
        part in ("ipykernel_launcher", "ipykernel") or part.endswith("ipykernel_launcher.py")
        for part in argv
    )


def add_extension_to_ipython_kernels(kernel_manager: Any) -> bool:
    """Wrap *kernel_manager*'s ``start_kernel`` so new IPython kernels load the extension.

    Returns whether the wrapper was installed (once per manager).
    """
    if getattr(kernel_manager, "_aaep_extension_argument", False):
        return False
    original = kernel_manager.start_kernel

    @functools.wraps(original)
    async def start_kernel(*args: Any, **kwargs: Any) -> Any:
        name = kwargs.get("kernel_name") or getattr(kernel_manager, "default_kernel_name", None)
        try:
            spec = kernel_manager.kernel_spec_manager.get_kernel_spec(name)
            ipython = is_ipython_kernel(list(spec.argv))
        except Exception:  # noqa: BLE001 - an unknown spec fails in the original call, with its own error
            ipython = False
        if ipython:
            extra = list(kwargs.get("extra_arguments") or [])
            if ARGUMENT not in extra:
                kwargs["extra_arguments"] = [*extra, ARGUMENT]
        return await original(*args, **kwargs)

    kernel_manager.start_kernel = start_kernel
    kernel_manager._aaep_extension_argument = True
    return True
