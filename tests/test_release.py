"""What a release ships: the sdist and wheel as ``python -m build`` makes them (RELEASE.md).

The build runs in a copy of the working tree (tracked and new files, nothing git ignores), so
the developer's own panel build is never touched: the sdist is built from the copy, the wheel
from the sdist, as PyPI users and distributions do. Then the wheel is checked file by file and
installed into fresh virtual environments, once with the lowest supported versions of what
it depends on and once with the newest (uv resolves them, pip installs the wheel itself and
checks the whole: ``_venv``), where a smoke test runs. Only PyPI and npm are reached (pip, uv
and jlpm use their caches).
"""

from __future__ import annotations

import email
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest
from readme_renderer.markdown import render

REPO = Path(__file__).resolve().parents[1]
LAB = "share/jupyter/labextensions/jupyter-aaep"

pytestmark = pytest.mark.slow

# The lowest versions pyproject.toml allows for what matters most to the extension.
LOWEST = [
    "jupyterlab==4.6.0",
    "jupyter-collaboration==5.0.0",
    "anthropic==2.0.0",
    "jupyter-server==2.19.0",
]


def _run(
    command: list[str], *, cwd: Path, timeout: float = 900, env: dict[str, str] | None = None
) -> str:
    done = subprocess.run(
        command, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False, env=env
    )
    output = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + done.stderr)
    assert done.returncode == 0, (
        f"{' '.join(command)} failed ({done.returncode}):\n{output[-6000:]}"
    )
    return output


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    if shutil.which("node") is None:
        pytest.skip("Node.js is needed to build the panel")
    copy = tmp_path_factory.mktemp("source") / "jupyter-aaep"
    listed = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=REPO,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, copy / name)
    _leave_a_development_bundle(copy / "jupyter_aaep" / "labextension")
    out = copy / "dist"
    # jlpm comes with JupyterLab in this environment; the isolated build finds it on PATH.
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    _run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(copy)],
        cwd=copy,
        env=env,
        timeout=1500,
    )
    (wheel,) = out.glob("*.whl")
    (sdist,) = out.glob("*.tar.gz")
    return {"wheel": wheel, "sdist": sdist}


DEVELOPMENT_MAP = "static/remoteEntry.development.js.map"


def _leave_a_development_bundle(folder: Path) -> None:
    """What ``jlpm build`` leaves in a developer's checkout: a bundle with source maps and no
    production marker. A release built from that checkout must replace it, not ship it."""
    static = folder / "static"
    static.mkdir(parents=True)
    (static / "style.js").write_text("// development build\n")
    (static / "remoteEntry.development.js").write_text(
        "// development build\n//# sourceMappingURL=remoteEntry.development.js.map\n"
    )
    (folder / DEVELOPMENT_MAP).write_text("{}")
    (folder / "package.json").write_text(json.dumps({"name": "jupyter-aaep"}))
    (folder / "install.json").write_text((REPO / "install.json").read_text())


def test_the_wheel_holds_the_production_panel_schemas_and_config(dist: dict[str, Path]) -> None:
    with zipfile.ZipFile(dist["wheel"]) as wheel:
        names = wheel.namelist()
        data = next(n.split("/", 1)[0] for n in names if ".data/" in n) + "/data/"
        lab = [n.removeprefix(data) for n in names if n.startswith(data + LAB)]
        package_json = json.loads(wheel.read(data + LAB + "/package.json"))
        install = json.loads(wheel.read(data + LAB + "/install.json"))
        bundle = {
            n: wheel.getinfo(n).file_size for n in names if n.startswith(data + LAB + "/static/")
        }
        scripts = {n: wheel.read(n).decode() for n in bundle if n.endswith(".js")}
        metadata = email.message_from_bytes(
            wheel.read(next(n for n in names if n.endswith(".dist-info/METADATA")))
        )
        entry_points = wheel.read(
            next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
        ).decode()

    # The production bundle: minified, no source maps anywhere, and the marker only it writes.
    assert f"{LAB}/PRODUCTION_BUNDLE.txt" in lab
    # The development bundle the checkout held (see the fixture) was replaced, not shipped.
    assert not [n for n in lab if "development" in n], lab
    assert not [n for n in names if n.endswith(".map")], "source maps in the wheel"
    assert any(re.search(r"static/remoteEntry\.[0-9a-f]+\.js$", n) for n in lab), lab
    largest = max(scripts, key=lambda n: len(scripts[n]))
    text = scripts[largest]
    assert len(text) / max(1, text.count("\n")) > 1000, f"{largest} is not minified"
    linked = [
        n for n, js in scripts.items() if re.search(r"^//# sourceMappingURL=", js, re.MULTILINE)
    ]
    assert linked == [], f"scripts that point at source maps: {linked}"
    assert package_json["name"] == "jupyter-aaep" and package_json["jupyterlab"]["_build"]["load"]
    assert install == json.loads((REPO / "install.json").read_text())
    # The settings schema of the panel, with its shortcuts.
    schema = f"{LAB}/schemas/jupyter-aaep/plugin.json"
    assert schema in lab
    # The server extension is enabled by the wheel itself.
    assert data + "etc/jupyter/jupyter_server_config.d/jupyter_aaep.json" in names
    # The AAEP schemas and their attribution, the demo notebooks, py.typed.
    assert "jupyter_aaep/aaep/schemas/envelope.schema.json" in names
    assert len([n for n in names if n.startswith("jupyter_aaep/aaep/schemas/core/")]) == 12
    assert "jupyter_aaep/aaep/schemas/NOTICE.md" in names
    assert {
        "jupyter_aaep/demo_notebooks/demo.ipynb",
        "jupyter_aaep/demo_notebooks/kernel-tools.ipynb",
        "jupyter_aaep/py.typed",
        "jupyter_aaep/_version.py",
    } <= set(names)
    # Nothing of the development tree: no tests, no TypeScript sources, no node_modules.
    assert not [
        n
        for n in names
        if n.startswith("tests/")
        or "/tests/" in n
        or "node_modules" in n
        or n.endswith((".ts", ".tsx"))
    ]
    # Honest metadata.
    assert metadata["License-Expression"] == "BSD-3-Clause AND CC-BY-4.0"
    assert {"LICENSE", "NOTICE.md"} <= {Path(f).name for f in metadata.get_all("License-File")}
    classifiers = set(metadata.get_all("Classifier"))
    assert "Framework :: Jupyter :: JupyterLab :: Extensions :: Prebuilt" in classifiers
    assert "Framework :: Jupyter :: JupyterLab :: 4" in classifiers
    requires = set(metadata.get_all("Requires-Dist"))
    assert {"jupyterlab<5,>=4.6", "anthropic<3,>=2", "jupyter-collaboration<6,>=5"} <= requires, (
        requires
    )
    assert not [
        r for r in requires if r.startswith("pytest") and "extra ==" not in r
    ]  # only in the test extra
    assert metadata["Version"] == _version()
    # The long description as PyPI (and `twine check`) renders it: Markdown, with the picture.
    assert metadata["Description-Content-Type"] == "text/markdown"
    description = render(metadata.get_payload(), variant="GFM")
    assert description is not None and "docs/images/panel.png" in description
    assert "jupyter-aaep-demo = jupyter_aaep.offline_demo:main" in entry_points
    total = sum(bundle.values())
    print(f"\nproduction bundle: {total:,} bytes in {len(bundle)} files")


def test_the_sdist_builds_without_node_and_holds_the_sources(dist: dict[str, Path]) -> None:
    with tarfile.open(dist["sdist"]) as sdist:
        names = {n.split("/", 1)[1] for n in sdist.getnames() if "/" in n}
    assert {
        "LICENSE",
        "README.md",
        "pyproject.toml",
        "labextension/package.json",
        "labextension/yarn.lock",
        "jupyter_aaep/labextension/PRODUCTION_BUNDLE.txt",
        "install.json",
    } <= names
    assert not [n for n in names if "node_modules" in n or n.endswith(".map")]
    assert not [n for n in names if "development" in n]  # the checkout's bundle was rebuilt
    # The wheel above was built from this sdist; the marker let it skip the JavaScript build.


def _version() -> str:
    text = (REPO / "jupyter_aaep" / "_version.py").read_text()
    found = re.search(r'__version__ = "([^"]+)"', text)
    assert found
    return found.group(1)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


INSTALLED = (
    "import importlib.metadata as m, json;"
    "print(json.dumps({d.metadata['Name'].lower(): d.version for d in m.distributions()}))"
)
"""Prints what an environment holds, whichever installer filled it."""


def _venv(folder: Path, wheel: Path, pins: list[str]) -> Path:
    """A fresh virtual environment with the wheel and what it depends on installed.

    uv resolves and installs the dependencies (``uv pip install``: the same wheel metadata and
    pins as pip, at a tenth of its CPU, 4 s against 44-48 s here); pip's own resolving of the
    newest versions runs wherever ``scripts/setup`` installs the checkout. Then pip installs
    the wheel file itself again (``--no-deps --force-reinstall``: its RECORD, data files and
    entry points, as a person's ``pip install`` meets them) and ``pip check`` reads the whole
    environment's requirements. Dependencies are not byte-compiled (half of pip's CPU, and not
    what a release of ours can break); our own package is, so a file the interpreter cannot
    compile still fails here."""
    from uv import find_uv_bin

    uv = find_uv_bin()
    _run(
        [uv, "venv", "--quiet", "--seed", "--python", sys.executable, str(folder)],
        cwd=folder.parent,
    )
    python = folder / "bin" / "python"
    _run(
        [uv, "pip", "install", "--quiet", "--python", str(python), str(wheel), *pins],
        cwd=folder.parent,
        timeout=1500,
    )
    pip = [str(python), "-m", "pip", "--disable-pip-version-check"]
    _run(
        [*pip, "install", "--quiet", "--no-deps", "--force-reinstall", "--no-compile", str(wheel)],
        cwd=folder.parent,
    )
    _run([*pip, "check"], cwd=folder.parent)
    package = _run(
        [
            str(python),
            "-c",
            "import importlib.util as u; print(u.find_spec('jupyter_aaep').origin)",
        ],
        cwd=folder.parent,
    )
    _run(
        [str(python), "-m", "compileall", "-q", str(Path(package.strip()).parent)],
        cwd=folder.parent,
    )
    return python


def _demo_answers(python: Path, tmp: Path) -> dict[str, object]:
    """``jupyter aaep-demo`` from the installed wheel: JupyterLab starts, the extension answers."""
    port = _free_port()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ANTHROPIC_", "JUPYTER_", "AAEP_", "PYTHONPATH"))
    }
    env.update(HOME=str(tmp / "home"), JUPYTER_RUNTIME_DIR=str(tmp / "runtime"))
    log = (tmp / "demo.log").open("w+")
    process = subprocess.Popen(
        [
            str(python.parent / "jupyter"),
            "aaep-demo",
            "--workdir",
            str(tmp / "work"),
            "--no-browser",
            f"--ServerApp.port={port}",
            "--ServerApp.port_retries=0",
            "--IdentityProvider.token=smoke",
        ],
        cwd=tmp,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            assert process.poll() is None, (tmp / "demo.log").read_text()
            try:
                url = f"http://127.0.0.1:{port}/aaep/v1/models?token=smoke"
                with urllib.request.urlopen(url, timeout=30) as answer:
                    models: dict[str, object] = json.load(answer)
                with urllib.request.urlopen(
                    f"http://127.0.0.1:{port}/lab?token=smoke", timeout=30
                ) as page:
                    assert page.status == 200
                return models
            except (urllib.error.URLError, ConnectionError):
                assert time.monotonic() < deadline, (tmp / "demo.log").read_text()
                time.sleep(0.5)
    finally:
        os.killpg(process.pid, 15)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            process.wait(10)
        log.close()
        assert (tmp / "work" / "demo.ipynb").exists()


@pytest.fixture(scope="module")
def venvs(
    dist: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Future[Path]]]:
    """Both fresh environments, installed at once: an install mostly waits on the package
    index, so the second one's wait is spent while the first is checked."""
    installs = {"lowest": LOWEST, "newest": ["--upgrade"]}
    with ThreadPoolExecutor(max_workers=2) as pool:
        yield {
            name: pool.submit(_venv, tmp_path_factory.mktemp(name) / "venv", dist["wheel"], pins)
            for name, pins in installs.items()
        }


@pytest.mark.parametrize("versions", ["lowest", "newest"])
def test_the_wheel_installs_and_runs_in_a_fresh_environment(
    venvs: dict[str, Future[Path]], versions: str, tmp_path: Path
) -> None:
    python = venvs[versions].result()
    installed = _run([str(python), "-c", INSTALLED], cwd=tmp_path)
    found = json.loads(installed.splitlines()[0])
    if versions == "lowest":
        assert found["jupyterlab"] == "4.6.0" and found["anthropic"] == "2.0.0", found
    assert "matplotlib" in found, found  # a dependency: the demo's plot is a real figure
    jupyter = str(python.parent / "jupyter")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER_", "PYTHONPATH"))}
    labextensions = _run([jupyter, "labextension", "list"], cwd=tmp_path, env=env)
    assert re.search(rf"jupyter-aaep v{re.escape(_version())} enabled OK", labextensions), (
        labextensions
    )
    servers = _run([jupyter, "server", "extension", "list"], cwd=tmp_path, env=env)
    assert re.search(r"jupyter_aaep enabled", servers) and re.search(
        r"jupyter_aaep .*OK", servers
    ), servers
    imported = _run(
        [str(python), "-c", "import jupyter_aaep; print(jupyter_aaep.__version__)"],
        cwd=tmp_path,
        env=env,
    )
    assert imported.strip() == _version()
    # One agent session through the installed anthropic SDK against the scripted model.
    session = _run(
        [str(python), "-m", "jupyter_aaep.demo", "--yes"], cwd=tmp_path, env=env, timeout=120
    )
    assert "-- Approved." in session and "-- Done." in session, session
    models = _demo_answers(python, tmp_path)
    assert models["models"] == [{"id": "aaep-offline-demo", "label": "Offline demo model"}], models
