"""``jupyter aaep-demo``: JupyterLab with the agent on the offline demo model, in one command.

Works from a pip install as from a clone (``scripts/start --offline`` runs it): the scripted
stand-in for Claude (:mod:`jupyter_aaep.testing.demo_model`) is served on 127.0.0.1 in this
process, JupyterLab is started in a work folder (``$AAEP_WORKDIR``, by default
``~/jupyter-aaep-work``) that gets a copy of the demo notebooks the first time, and stopping
JupyterLab (Ctrl+C) stops the model too. No account, no network. Arguments this command does
not know go to ``jupyter lab`` (``jupyter aaep-demo --no-browser --port 8890``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from types import FrameType

from .testing.demo_model import MODEL_ID, MODEL_LABEL, demo_model
from .testing.fake_anthropic import FakeAnthropic
from .testing.serve_model import DEFAULT_API_KEY

__all__ = ["demo_notebooks", "main"]

_PACKAGE = Path(__file__).resolve().parent


def demo_notebooks() -> list[Path]:
    """The demo notebooks: shipped in the wheel (``jupyter_aaep/demo_notebooks``), or the
    repository's ``notebooks/`` in an editable install."""
    for folder in (_PACKAGE / "demo_notebooks", _PACKAGE.parent / "notebooks"):
        found = sorted(folder.glob("*.ipynb"))
        if found:
            return found
    return []


def _work_folder(given: str | None) -> Path:
    folder = Path(given or os.environ.get("AAEP_WORKDIR") or Path.home() / "jupyter-aaep-work")
    folder = folder.expanduser().resolve()
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _copy_notebooks(folder: Path) -> list[str]:
    copied = []
    for notebook in demo_notebooks():
        target = folder / notebook.name
        if not target.exists():
            shutil.copyfile(notebook, target)
            copied.append(notebook.name)
    return copied


def _lab_command(folder: Path, extra: list[str]) -> list[str]:
    command = [
        sys.executable,
        "-m",
        "jupyter",
        "lab",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.root_dir={folder}",
        f"--AAEPExtension.model={MODEL_ID}",
    ]
    # Jupyter refuses to start as root without --allow-root; containers and CI often run as root.
    if hasattr(os, "geteuid") and os.geteuid() == 0 and "--allow-root" not in extra:
        command.append("--allow-root")
    command.extend(extra)
    # The printed address and the browser both open the demo notebook, not the Launcher.
    opens_own = any(not a.startswith("-") or "default_url" in a for a in extra)
    if (folder / "demo.ipynb").exists() and not opens_own:
        command.append("--LabApp.default_url=/lab/tree/demo.ipynb")
    return command


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="jupyter aaep-demo",
        description="Start JupyterLab with the jupyter-aaep agent on the offline demo model "
        "(a scripted stand-in for Claude on 127.0.0.1: no account, no network). "
        "Other arguments go to `jupyter lab`.",
    )
    parser.add_argument(
        "--workdir",
        help="folder to work in (default: $AAEP_WORKDIR or ~/jupyter-aaep-work); "
        "the demo notebooks are copied there when missing",
    )
    args, extra = parser.parse_known_args(argv)
    folder = _work_folder(args.workdir)
    copied = _copy_notebooks(folder)
    note = f" (copied {', '.join(copied)})" if copied else ""
    print(
        f"Working in {folder}{note}; set AAEP_WORKDIR or --workdir to use another folder.",
        flush=True,
    )

    model = FakeAnthropic(
        responder=demo_model, api_key=DEFAULT_API_KEY, models=[(MODEL_ID, MODEL_LABEL)]
    ).start()
    env = {**os.environ, "ANTHROPIC_BASE_URL": model.base_url, "ANTHROPIC_API_KEY": DEFAULT_API_KEY}
    env.pop("ANTHROPIC_AUTH_TOKEN", None)
    print(
        f"Offline demo model at {model.base_url} (a scripted stand-in for Claude; "
        'ask it "what can you do").',
        flush=True,
    )
    # JupyterLab runs in its own process group, so Ctrl+C (or SIGINT sent to this process alone)
    # reaches only us, and we stop it without its "Shutdown this Jupyter server?" question.
    lab = subprocess.Popen(_lab_command(folder, extra), cwd=folder, env=env, start_new_session=True)

    def forward(signum: int, _frame: FrameType | None) -> None:
        if lab.poll() is None:
            if signum == signal.SIGINT:
                print("Stopping JupyterLab and the offline demo model…", flush=True)
            lab.send_signal(signal.SIGTERM if signum == signal.SIGINT else signum)

    stops = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
    previous = {s: signal.signal(s, forward) for s in stops}
    try:
        return lab.wait()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if lab.poll() is None:
            lab.terminate()
            try:
                lab.wait(30)
            except subprocess.TimeoutExpired:
                lab.kill()
        model.stop()


if __name__ == "__main__":
    sys.exit(main())
