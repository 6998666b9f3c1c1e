"""`pip install` alone gives the server extension and the prebuilt JupyterLab extension."""

from __future__ import annotations

import re
import subprocess
import sys


def _run(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, timeout=120, check=True)
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
        cwd=root, capture_output=True, text=True, check=False,
    )
    assert ignored.stdout == "", f"gitignored, so left out of the wheel:\n{ignored.stdout}"
