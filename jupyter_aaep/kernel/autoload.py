"""Load ``%aaep`` in every IPython kernel of this Python environment, without ``%load_ext``.

IPython kernels read ``{sys.prefix}/etc/ipython/ipython_kernel_config.json`` at start (IPython's
``ENV_CONFIG_DIRS``; Jupyter's own config path is not read by kernels). Adding
``"jupyter_aaep"`` to ``InteractiveShellApp.extensions`` there loads the extension in each new
kernel of this environment. The file is not ours alone (another package or the user may keep
settings in it), so it is merged: its other content is kept, the entry is added once, the file
is replaced atomically, and a file that is not valid JSON is left alone with a sentence saying so.

Who writes it: the server extension at start (``c.AAEPExtension.kernel_autoload``, on by
default; off removes the entry again) and ``scripts/setup``. By hand::

    python -m jupyter_aaep.kernel.autoload enable | disable | status

Limits: a user's own profile config (``~/.ipython/profile_default/ipython_kernel_config.py``)
that *assigns* ``c.InteractiveShellApp.extensions = [...]`` replaces this list (traitlets gives
the profile precedence); kernels of another environment need the command run with their Python.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

EXTENSION = "jupyter_aaep"
CONFIG_NAME = "ipython_kernel_config.json"


class AutoloadError(Exception):
    """The config file could not be read or written; the message says which and why."""


def config_path(prefix: str | None = None) -> Path:
    """Where kernels of the environment at *prefix* (default: this one) read their config."""
    return Path(prefix or sys.prefix) / "etc" / "ipython" / CONFIG_NAME


def _read(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise AutoloadError(f"{path} could not be read ({error.strerror or error}).") from error
    if not text.strip():
        return {}
    try:
        config = json.loads(text)
    except ValueError as error:
        raise AutoloadError(
            f"{path} is not valid JSON ({error}); it was left as it is. Fix or remove it, "
            "or load the magic in each notebook with %load_ext jupyter_aaep."
        ) from error
    if not isinstance(config, dict):
        raise AutoloadError(f"{path} does not hold a JSON object; it was left as it is.")
    return config


def _extensions(config: dict[str, Any], path: Path) -> list[Any]:
    section = config.get("InteractiveShellApp", {})
    if not isinstance(section, dict):
        raise AutoloadError(f"{path}: InteractiveShellApp is not an object; it was left as it is.")
    extensions = section.get("extensions", [])
    if not isinstance(extensions, list):
        raise AutoloadError(
            f"{path}: InteractiveShellApp.extensions is not a list; it was left as it is."
        )
    return extensions


def _write(path: Path, config: dict[str, Any]) -> None:
    """Replace *path* atomically (a kernel starting meanwhile reads the old or the new file)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=".aaep-", suffix=".json", dir=path.parent)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as stream:
                json.dump(config, stream, indent=2)
                stream.write("\n")
            if path.exists():
                os.chmod(temporary, path.stat().st_mode & 0o777)
            else:
                os.chmod(temporary, 0o644)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except OSError as error:
        raise AutoloadError(f"{path} could not be written ({error.strerror or error}).") from error


def is_enabled(path: Path | None = None) -> bool:
    path = path or config_path()
    try:
        return EXTENSION in _extensions(_read(path), path)
    except AutoloadError:
        return False


def enable(path: Path | None = None) -> bool:
    """Add the extension to the kernels' config; whether the file changed."""
    path = path or config_path()
    config = _read(path)
    extensions = _extensions(config, path)
    if EXTENSION in extensions:
        return False
    section = config.setdefault("InteractiveShellApp", {})
    section["extensions"] = [*extensions, EXTENSION]
    _write(path, config)
    return True


def disable(path: Path | None = None) -> bool:
    """Take the extension out again, keeping everything else; whether the file changed."""
    path = path or config_path()
    config = _read(path)
    extensions = _extensions(config, path)
    if EXTENSION not in extensions:
        return False
    section = config["InteractiveShellApp"]
    section["extensions"] = [name for name in extensions if name != EXTENSION]
    if not section["extensions"]:
        del section["extensions"]
    if not section:
        del config["InteractiveShellApp"]
    if config:
        _write(path, config)
    else:
        try:
            path.unlink()
        except OSError as error:
            raise AutoloadError(
                f"{path} could not be removed ({error.strerror or error})."
            ) from error
    return True


def main(argv: list[str] | None = None) -> int:
    """``python -m jupyter_aaep.kernel.autoload enable|disable|status [--prefix DIR]``."""
    args = list(sys.argv[1:] if argv is None else argv)
    prefix = None
    if "--prefix" in args:
        at = args.index("--prefix")
        if at + 1 >= len(args):
            print("--prefix needs a directory.", file=sys.stderr)
            return 2
        prefix = args[at + 1]
        del args[at : at + 2]
    action = args[0] if len(args) == 1 else ""
    if action not in ("enable", "disable", "status"):
        print(
            "Usage: python -m jupyter_aaep.kernel.autoload enable|disable|status [--prefix DIR]",
            file=sys.stderr,
        )
        return 2
    path = config_path(prefix)
    try:
        if action == "enable":
            changed = enable(path)
            print(
                f"%aaep loads in every new kernel of this environment ({path}"
                f"{'' if changed else ', already set'})."
            )
        elif action == "disable":
            changed = disable(path)
            print(
                f"%aaep no longer loads by itself in new kernels ({path}{'' if changed else ', was not set'}); "
                "use %load_ext jupyter_aaep in a notebook."
            )
        else:
            state = "loads" if is_enabled(path) else "does not load"
            print(f"%aaep {state} by itself in new kernels of this environment ({path}).")
    except AutoloadError as error:
        print(str(error), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover - the command line
    raise SystemExit(main())
