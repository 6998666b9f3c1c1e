"""``python -m jupyter_aaep.server.options`` lists every option of the extension with its help."""

from __future__ import annotations

import subprocess
import sys

import pytest
from traitlets import TraitError
from traitlets.config import Config

from jupyter_aaep.server import agent_options, service_options
from jupyter_aaep.server.app import AAEPExtension
from jupyter_aaep.server.options import config_text, help_text, main, own_options


def test_lists_every_own_option_with_help_and_default_and_nothing_inherited() -> None:
    names = [name for name, _trait in own_options()]
    assert {"model", "approval_mode", "max_turns", "extra_tools"} <= set(names)
    assert "log_level" not in names and "config_file" not in names  # inherited by every app
    text = help_text()
    assert f"{len(names)} in all" in text
    for name, trait in own_options():
        block = next(b for b in text.split("\n\n") if b.startswith(f"--AAEPExtension.{name}="))
        assert trait.help and trait.help.split()[0] in block, name
        computed = AAEPExtension().trait_defaults(name)
        assert (
            f"Default: {trait.default_value_repr()}" in block
            or f"on this machine {computed!r}" in block
        ), name
    assert "Default: computed at start-up; on this machine '" in text  # db_path, not ''


def test_config_section_is_valid_python_that_restores_every_default() -> None:
    text = config_text()
    config = Config()
    uncommented = text.replace("# c.AAEPExtension.", "c.AAEPExtension.")
    exec(uncommented, {"c": config})  # noqa: S102 - what Jupyter does with a config file
    assert set(config.AAEPExtension) == {name for name, _trait in own_options()}
    extension = AAEPExtension(config=config)
    fresh = AAEPExtension()
    for name, _trait in own_options():
        assert getattr(extension, name) == getattr(fresh, name), name


def test_main_prints_help_or_config(capsys) -> None:
    assert main([]) == 0
    assert "--AAEPExtension.approval_mode=<Enum>" in capsys.readouterr().out
    assert main(["--config"]) == 0
    assert "# c.AAEPExtension.approval_mode = 'ask'" in capsys.readouterr().out


def test_runs_as_a_module() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "jupyter_aaep.server.options"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "--AAEPExtension.model=<Unicode>" in done.stdout


BOUNDS = {**agent_options.LOWEST, **service_options.LOWEST}


@pytest.mark.parametrize("name", sorted(BOUNDS))
def test_each_bounded_option_refuses_less_than_its_lowest_value_in_a_sentence(name: str) -> None:
    """Both options classes check their bounds; one must not hide the other's check."""
    low = BOUNDS[name]
    app = AAEPExtension()
    with pytest.raises(TraitError, match=rf"^{name} must be .+, not "):
        setattr(app, name, low.value if low.above else low.value - 1)
    ok = low.value + 1 if low.above else low.value
    setattr(app, name, ok)
    assert getattr(app, name) == ok
