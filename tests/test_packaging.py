"""`pip install` alone gives the server extension and the prebuilt JupyterLab extension."""

from __future__ import annotations

import re
import subprocess
import sys


def _run(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", *args], capture_output=True, text=True, timeout=120, check=True
    )
    return re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + done.stderr)


def test_labextension_is_installed_enabled_and_ok() -> None:
    listing = _run("jupyter", "labextension", "list")
    assert re.search(r"jupyter-aaep v[\d.]+ enabled OK", listing), listing


def test_server_extension_is_enabled() -> None:
    listing = _run("jupyter", "server", "extension", "list")
    assert re.search(r"jupyter_aaep enabled", listing), listing
    assert re.search(r"jupyter_aaep .*OK", listing), listing


def test_shipped_schemas_are_package_files_the_wheel_keeps() -> None:
    """The wheel carries every file under ``jupyter_aaep/`` that git does not ignore (hatch's
    rule), so the AAEP schemas and their NOTICE ship as long as none of them is ignored."""
    from pathlib import Path

    import jupyter_aaep

    package = Path(jupyter_aaep.__file__).resolve().parent
    folder = package / "aaep" / "schemas"
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    names = {p.relative_to(folder).as_posix() for p in files}
    assert {"NOTICE.md", "envelope.schema.json", "context/aaep-v1.jsonld"} <= names
    assert len([n for n in names if n.startswith("core/")]) == 12
    assert len([n for n in names if n.startswith("handshake/")]) == 5
    root = package.parent
    if not (root / ".git").exists():
        return  # an installed wheel: the files above are already the shipped ones
    ignored = subprocess.run(
        ["git", "check-ignore", "--no-index", *(str(p.relative_to(root)) for p in files)],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    assert ignored.stdout == "", f"gitignored, so left out of the wheel:\n{ignored.stdout}"


# -- what PyPI shows, and what a release promises ---------------------------------------------

REPO = __import__("pathlib").Path(__file__).resolve().parents[1]
README = REPO / "README.md"


def _readme_html() -> str:
    from readme_renderer.markdown import render

    html = render(README.read_text(encoding="utf-8"), variant="GFM")
    assert html is not None, "readme_renderer could not render README.md"
    return html


def test_the_readme_renders_as_pypi_renders_it_with_absolute_links_and_the_screenshot() -> None:
    html = _readme_html()
    links = re.findall(r'<a href="([^"]+)"', html)
    images = re.findall(r'<img [^>]*src="([^"]+)"', html)
    assert len(links) >= 10 and images, (links, images)
    relative = [
        url for url in links + images if not url.startswith(("https://", "#"))
    ]  # "#": heading anchors
    assert relative == [], f"relative links break on PyPI: {relative}"
    assert images == [
        "https://raw.githubusercontent.com/jupyter-aaep/jupyter-aaep/main/docs/images/panel.png"
    ]
    assert (REPO / "docs" / "images" / "panel.png").is_file()
    # Every link into this repository names a file that exists.
    prefix = "https://github.com/jupyter-aaep/jupyter-aaep/blob/main/"
    for url in links:
        if url.startswith(prefix):
            assert (REPO / url.removeprefix(prefix).split("#")[0]).exists(), url


def test_the_readme_keeps_the_contributors_two_commands_and_the_pip_path() -> None:
    text = README.read_text(encoding="utf-8")
    assert "pip install jupyter-aaep" in text and "jupyter aaep-demo" in text
    assert "scripts/start    #" in text and "scripts/test     #" in text


def test_the_keys_in_the_readme_and_the_demo_notebook_are_the_real_shortcuts() -> None:
    import json

    schema = json.loads((REPO / "labextension" / "schema" / "plugin.json").read_text())
    keys = {s["command"].split(":")[1]: s["keys"][0] for s in schema["jupyter.lab.shortcuts"]}

    def spoken(key: str) -> str:
        return "+".join({"Accel": "Ctrl"}.get(part, part) for part in key.split())

    text = README.read_text(encoding="utf-8")
    for command in (
        "open-panel",
        "jump-to-confirmation",
        "approve",
        "reject",
        "stop",
        "toggle-pause",
    ):
        assert f"**{spoken(keys[command])}**" in text, (command, keys[command])
    notebook = (REPO / "notebooks" / "demo.ipynb").read_text(encoding="utf-8")
    for command in ("open-panel", "jump-to-confirmation", "approve", "reject", "stop"):
        assert spoken(keys[command]) in notebook, (command, keys[command])


def test_the_version_lives_in_one_place_and_the_panel_agrees() -> None:
    import json

    import jupyter_aaep
    from jupyter_aaep._version import __version__

    package = json.loads((REPO / "labextension" / "package.json").read_text())
    npm = re.sub(
        r"-(alpha|beta|rc)\.(\d+)$",
        lambda m: {"alpha": "a", "beta": "b", "rc": "rc"}[m[1]] + m[2],
        package["version"],
    )
    assert jupyter_aaep.__version__ == __version__ == npm
    pyproject = (REPO / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in pyproject and '\nversion = "' not in pyproject


def test_the_offline_demo_command_is_installed() -> None:
    from importlib.metadata import entry_points

    (found,) = [e for e in entry_points(group="console_scripts") if e.name == "jupyter-aaep-demo"]
    assert found.value == "jupyter_aaep.offline_demo:main"
    from jupyter_aaep.offline_demo import demo_notebooks

    assert {p.name for p in demo_notebooks()} == {"demo.ipynb", "kernel-tools.ipynb"}
