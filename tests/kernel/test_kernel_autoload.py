"""Auto-loading ``%aaep`` in kernels: the merged ipython_kernel_config.json, the command, the server hook."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from jupyter_aaep.kernel import autoload


def test_enable_creates_the_file_once(tmp_path: Path) -> None:
    path = tmp_path / "etc" / "ipython" / "ipython_kernel_config.json"
    assert not autoload.is_enabled(path)
    assert autoload.enable(path) is True
    assert json.loads(path.read_text()) == {"InteractiveShellApp": {"extensions": ["jupyter_aaep"]}}
    assert oct(path.stat().st_mode & 0o777) == oct(0o644)
    assert autoload.enable(path) is False  # idempotent
    assert autoload.is_enabled(path)
    assert [p.name for p in path.parent.iterdir()] == [
        "ipython_kernel_config.json"
    ]  # no temporary left


def test_enable_and_disable_keep_what_others_wrote(tmp_path: Path) -> None:
    path = tmp_path / "ipython_kernel_config.json"
    theirs = {
        "InteractiveShellApp": {"extensions": ["autoreload"], "exec_lines": ["%autoreload 2"]},
        "IPKernelApp": {"matplotlib": "inline"},
    }
    path.write_text(json.dumps(theirs))
    os.chmod(path, 0o600)
    assert autoload.enable(path)
    merged = json.loads(path.read_text())
    assert merged["InteractiveShellApp"] == {
        "extensions": ["autoreload", "jupyter_aaep"],
        "exec_lines": ["%autoreload 2"],
    }
    assert merged["IPKernelApp"] == {"matplotlib": "inline"}
    assert path.stat().st_mode & 0o777 == 0o600  # the owner's permissions are kept
    assert autoload.disable(path) is True
    assert json.loads(path.read_text()) == theirs
    assert autoload.disable(path) is False


def test_disable_removes_a_file_that_only_held_our_entry(tmp_path: Path) -> None:
    path = tmp_path / "ipython_kernel_config.json"
    autoload.enable(path)
    assert autoload.disable(path) is True
    assert not path.exists()
    assert autoload.disable(path) is False  # no file: nothing to do


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("{not json", "is not valid JSON"),
        ("[1, 2]", "does not hold a JSON object"),
        ('{"InteractiveShellApp": []}', "InteractiveShellApp is not an object"),
        ('{"InteractiveShellApp": {"extensions": "autoreload"}}', "extensions is not a list"),
    ],
)
def test_a_file_we_do_not_understand_is_left_alone(
    tmp_path: Path, content: str, problem: str
) -> None:
    path = tmp_path / "ipython_kernel_config.json"
    path.write_text(content)
    with pytest.raises(autoload.AutoloadError, match=problem):
        autoload.enable(path)
    assert path.read_text() == content
    assert not autoload.is_enabled(path)


def test_an_empty_file_counts_as_empty(tmp_path: Path) -> None:
    path = tmp_path / "ipython_kernel_config.json"
    path.write_text("\n")
    assert autoload.enable(path)
    assert json.loads(path.read_text())["InteractiveShellApp"]["extensions"] == ["jupyter_aaep"]


def test_an_unwritable_folder_is_a_sentence(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        blocker = tmp_path / "file"
        blocker.write_text("")
        path = (
            blocker / "ipython_kernel_config.json"
        )  # a folder that is a file: fails even for root
    else:
        tmp_path.chmod(0o500)
        path = tmp_path / "sub" / "ipython_kernel_config.json"
    with pytest.raises(autoload.AutoloadError, match="could not be written"):
        autoload.enable(path)


def test_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prefix = ["--prefix", str(tmp_path)]
    assert autoload.main(["status", *prefix]) == 0
    assert "does not load" in capsys.readouterr().out
    assert autoload.main(["enable", *prefix]) == 0
    assert "loads in every new kernel" in capsys.readouterr().out
    assert autoload.main(["enable", *prefix]) == 0
    assert "already set" in capsys.readouterr().out
    assert autoload.main(["status", *prefix]) == 0
    assert "%aaep loads by itself" in capsys.readouterr().out
    assert autoload.main(["disable", *prefix]) == 0
    assert "%load_ext jupyter_aaep" in capsys.readouterr().out
    assert autoload.main(["bogus"]) == 2 and "Usage" in capsys.readouterr().err
    assert autoload.main(["enable", "--prefix"]) == 2
    (tmp_path / "etc" / "ipython" / "ipython_kernel_config.json").write_text("{oops")
    assert autoload.main(["enable", *prefix]) == 1
    assert "not valid JSON" in capsys.readouterr().err
    assert (
        autoload.config_path(str(tmp_path))
        == tmp_path / "etc" / "ipython" / "ipython_kernel_config.json"
    )


def test_python_dash_m(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "jupyter_aaep.kernel.autoload", "enable", "--prefix", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert autoload.is_enabled(autoload.config_path(str(tmp_path)))


@pytest.mark.parametrize("enabled", [True, False])
def test_the_server_sets_it_at_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, enabled: bool
) -> None:
    from jupyter_aaep.server.app import AAEPExtension

    path = tmp_path / "ipython_kernel_config.json"
    path.write_text(json.dumps({"IPKernelApp": {"matplotlib": "inline"}}))
    if not enabled:
        autoload.enable(path)
    monkeypatch.setattr(autoload, "config_path", lambda prefix=None: path)
    kernels = SimpleNamespace(start_kernel=None)
    fake = SimpleNamespace(
        kernel_autoload=enabled,
        log=logging.getLogger("test-autoload"),
        server=SimpleNamespace(kernel_manager=kernels),
    )
    with caplog.at_level(logging.INFO, "test-autoload"):
        AAEPExtension._configure_kernel_autoload(fake)  # type: ignore[arg-type]
    assert autoload.is_enabled(path) is enabled
    assert json.loads(path.read_text())["IPKernelApp"] == {"matplotlib": "inline"}
    assert ("load %aaep by themselves" if enabled else "no longer load %aaep") in caplog.text
    path.write_text("{broken")
    with caplog.at_level(logging.WARNING, "test-autoload"):
        AAEPExtension._configure_kernel_autoload(fake)  # type: ignore[arg-type]
    assert "is not valid JSON" in caplog.text
    if enabled:  # the server's own kernels still get %aaep, through their command line
        assert (
            "through their command line instead" in caplog.text and kernels.start_kernel is not None
        )
    else:
        assert "%load_ext jupyter_aaep" in caplog.text and kernels.start_kernel is None


OFF = re.compile(r"""kernel_autoload["']?\s*[=:]\s*False""")
"""The option turned off, as a keyword, a config key or a trait assignment."""


def test_no_test_server_takes_the_magic_out_of_the_shared_environment() -> None:
    """A server started with ``kernel_autoload=False`` takes ``%aaep`` out of its environment's
    kernel config at start, for every server of that environment until one starts with the
    default again: a server test run beside the browser tests (CI runs the layers side by side,
    on one ``.venv``) made their kernels answer ``%aaep`` with "Line magic function `%aaep` not
    found" (test_approve_with_the_keyboard_only waited 60 s for a view that never came). Test
    servers keep the default; the option itself is tested above on a file of its own."""
    tests = Path(__file__).resolve().parents[1]
    offenders = [
        str(path.relative_to(tests))
        for path in sorted(tests.rglob("*.py"))
        if path.resolve() != Path(__file__).resolve()
        and OFF.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == [], offenders
