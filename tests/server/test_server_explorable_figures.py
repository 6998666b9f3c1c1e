"""Explorable figures through the server: maidr's script served from the wheel (and nothing
fetched from elsewhere), and the agent reading a figure's values beside its image."""

from __future__ import annotations

import base64
import importlib.util
import io
import ipaddress
import json
import socket
from pathlib import Path
from typing import Any

import nbformat
import pytest
from kernel_helpers import _private_cwd, jp_server_config  # noqa: F401  (the same live-notebook server)
from PIL import Image
from server_helpers import of_type, wait_until
from tornado.httpclient import AsyncHTTPClient

from jupyter_aaep.figure_mime import MAIDR_MIME
from jupyter_aaep.testing.fake_anthropic import ToolUse, Turn


def wheel_script() -> bytes:
    spec = importlib.util.find_spec("maidr")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("maidr is not installed")
    return (Path(next(iter(spec.submodule_search_locations))) / "static" / "maidr.js").read_bytes()


async def test_the_server_serves_maidrs_script_from_the_wheel_and_nothing_else(
    jp_fetch, jp_http_port, jp_base_url, monkeypatch
) -> None:
    expected = wheel_script()
    reached: list[Any] = []
    connect = socket.socket.connect

    def watched(self: socket.socket, address: Any) -> Any:
        reached.append(address)
        return connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", watched)
    response = await jp_fetch("aaep", "v1", "figures", "maidr.js")
    assert response.code == 200 and response.body == expected
    assert response.headers["Content-Type"] == "text/javascript; charset=utf-8"
    assert b"maidr" in response.body[-2000:]
    # A reload asks again with the ETag and gets "not modified", not 2 MB.
    again = await jp_fetch(
        "aaep",
        "v1",
        "figures",
        "maidr.js",
        headers={"If-None-Match": response.headers["Etag"]},
        raise_error=False,
    )
    assert again.code == 304
    hosts = [a[0] for a in reached if isinstance(a, tuple)]
    assert hosts and all(h == "localhost" or ipaddress.ip_address(h).is_loopback for h in hosts), (
        hosts
    )

    # Behind Jupyter's login like every AAEP route.
    anonymous = await AsyncHTTPClient().fetch(
        f"http://127.0.0.1:{jp_http_port}{jp_base_url}aaep/v1/figures/maidr.js",
        raise_error=False,
        follow_redirects=False,
    )
    assert anonymous.code in (302, 403) and anonymous.body != expected  # to the login page


def png() -> str:
    out = io.BytesIO()
    Image.new("RGB", (320, 200), (250, 250, 250)).save(out, format="PNG")
    return base64.b64encode(out.getvalue()).decode()


BARS = {
    "version": 1,
    "explorable": True,
    "maidr": {
        "id": "f1",
        "subplots": [
            [
                {
                    "id": "p1",
                    "layers": [
                        {
                            "id": "l1",
                            "type": "bar",
                            "title": "Sales",
                            "axes": {"x": {"label": "X"}, "y": {"label": "Units"}},
                            "data": [
                                {"x": "North", "y": 12.0},
                                {"x": "South", "y": 17.0},
                                {"x": "East", "y": 9.0},
                            ],
                        }
                    ],
                }
            ]
        ],
    },
}


def figures_notebook(root: Path, path: str = "bars.ipynb") -> str:
    nb = nbformat.v4.new_notebook()
    bars = nbformat.v4.new_code_cell("plt.bar(['North', 'South', 'East'], [12, 17, 9])")
    bars["id"] = "bars"
    bars["outputs"] = [
        nbformat.v4.new_output(
            "display_data", data={"image/png": png(), "text/plain": "<Figure>", MAIDR_MIME: BARS}
        )
    ]
    arrows = nbformat.v4.new_code_cell("ax.quiver(...)")
    arrows["id"] = "arrows"
    arrows["outputs"] = [
        nbformat.v4.new_output(
            "display_data",
            data={
                "image/png": png(),
                "text/plain": "<Figure>",
                MAIDR_MIME: {"version": 1, "explorable": False, "reason": "unsupported"},
            },
        )
    ]
    nb.cells = [bars, arrows]
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    (root / path).write_text(nbformat.writes(nb))
    return path


def tool_text(request: Any) -> str:
    """The text blocks of the tool result the model received in *request*."""
    result = request.body["messages"][-1]["content"][0]
    return "\n".join(b.get("text", "") for b in result["content"] if b.get("type") == "text")


async def test_the_agent_reads_a_figures_values_beside_its_image(
    api, sse, new_chat, fake_model, jp_root_dir
) -> None:
    path = figures_notebook(jp_root_dir)
    chat_id = await new_chat(path)
    fake_model.add(
        Turn(tool_uses=[ToolUse("view_figure", {"cell_id": "bars"})]),
        Turn(tool_uses=[ToolUse("view_figure", {"cell_id": "arrows"})]),
        Turn(text="South is highest at 17."),
    )
    async with sse(chat_id) as stream:
        status, body, _ = await api(
            "chats",
            chat_id,
            "messages",
            method="POST",
            body={"kind": "user_input", "text": "Which region sold most?"},
        )
        assert status == 202, body
        await stream.until(of_type("session.completed"), timeout=30)

    looked = tool_text(fake_model.requests[1])
    assert fake_model.requests[1].images  # the image itself, as before
    assert "bar chart 'Sales'; y axis 'Units'" in looked
    assert "3 values: North: 12; South: 17; East: 9" in looked
    assert MAIDR_MIME not in looked and '"subplots"' not in looked  # words, not the raw JSON
    unsupported = tool_text(fake_model.requests[2])
    assert "cannot be explored by keyboard" in unsupported

    # The description kept as alt text sits beside the data, which stays in the notebook.
    status, body, _ = await api(
        "chats",
        chat_id,
        "messages",
        method="POST",
        body={"kind": "figure_alt_text", "cell_id": "bars", "alt_text": "South is highest at 17."},
    )
    assert status == 200, body

    def saved() -> dict[str, Any] | None:
        try:
            output = json.loads((jp_root_dir / path).read_text())["cells"][0]["outputs"][0]
        except (json.JSONDecodeError, OSError):
            return None
        alt = output.get("metadata", {}).get("image/png", {}).get("alt")
        return output if alt == "South is highest at 17." else None

    await wait_until(saved, timeout=10, what="the alt text on disk")
    assert (saved() or {})["data"][MAIDR_MIME] == BARS


@pytest.mark.parametrize("on", [True, False])
def test_the_option_reaches_the_kernels_through_their_environment(monkeypatch, on: bool) -> None:
    import os
    from types import SimpleNamespace

    from jupyter_aaep.server.app import EXPORTED, AAEPExtension

    monkeypatch.delenv("AAEP_EXPLORABLE_FIGURES", raising=False)
    monkeypatch.setenv("AAEP_SERVER_URL", "http://127.0.0.1:1/")  # restored after the test
    fake = SimpleNamespace(
        explorable_figures=on,
        server=SimpleNamespace(connection_url="http://127.0.0.1:8888/"),
        built=None,
    )
    AAEPExtension._export_environment(fake)  # type: ignore[arg-type]
    assert os.environ["AAEP_EXPLORABLE_FIGURES"] == ("1" if on else "0")
    assert "AAEP_EXPLORABLE_FIGURES" in EXPORTED  # put back as it was when the server stops
    assert AAEPExtension().explorable_figures is True  # on unless turned off
