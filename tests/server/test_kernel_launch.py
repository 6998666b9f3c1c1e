"""%aaep in kernels of an environment the server cannot write (server/kernel_launch.py)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from jupyter_aaep.server.kernel_launch import (
    ARGUMENT,
    add_extension_to_ipython_kernels,
    is_ipython_kernel,
)

SPECS = {
    "python3": ["/env/bin/python", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
    "ir": ["R", "--slave", "-e", "IRkernel::main()", "--args", "{connection_file}"],
}


class Manager:
    default_kernel_name = "python3"

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.kernel_spec_manager = SimpleNamespace(
            get_kernel_spec=lambda name: SimpleNamespace(argv=SPECS[name])
        )

    async def start_kernel(self, **kwargs: Any) -> str:
        self.calls.append(kwargs)
        return "k1"


def test_only_ipython_kernels_get_the_argument_once() -> None:
    manager = Manager()
    assert add_extension_to_ipython_kernels(manager) is True
    assert add_extension_to_ipython_kernels(manager) is False  # wrapped once
    asyncio.run(manager.start_kernel(kernel_name="python3", extra_arguments=["--x"]))
    asyncio.run(manager.start_kernel())
    asyncio.run(manager.start_kernel(kernel_name="ir"))
    assert manager.calls[0]["extra_arguments"] == ["--x", ARGUMENT]
    assert manager.calls[1]["extra_arguments"] == [ARGUMENT]
    assert "extra_arguments" not in manager.calls[2]
    assert is_ipython_kernel(["python", "-m", "ipykernel", "-f", "c"]) and not is_ipython_kernel(
        SPECS["ir"]
    )
