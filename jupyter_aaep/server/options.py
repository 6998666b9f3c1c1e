"""List the agent's server options with their help: ``python -m jupyter_aaep.server.options``.

``jupyter server --help-all`` only describes the server's own classes, never an extension's,
so the options of :class:`~jupyter_aaep.server.app.AAEPExtension` would otherwise be found
only in the source. This prints each of them (the traitlets of its option classes, not the
ones every Jupyter application inherits) with its type, help and default, either in
the command-line form or, with ``--config``, as a commented ``jupyter_server_config.py``
section to copy from.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from typing import Any

from traitlets import TraitType

from .app import AAEPExtension
from .server_options import ServerOptions

__all__ = ["config_text", "help_text", "main", "own_options"]

_HOW_TO_SET = (
    "Set them on the command line (jupyter lab --AAEPExtension.approval_mode=ask_all) or in "
    "jupyter_server_config.py (c.AAEPExtension.approval_mode = 'ask_all'). The API key is not an "
    "option: the Anthropic SDK reads ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL) from the "
    "server's environment."
)


def own_options() -> list[tuple[str, TraitType[Any, Any]]]:
    """The extension's own configurable traitlets (declared in its option classes), by name."""
    return sorted(ServerOptions.class_traits(config=True).items())


def _computed_defaults() -> dict[str, str]:
    """The reprs of defaults computed at start-up (``@default``) that differ from the static
    one ``--help-all`` would print (for example ``db_path``'s data directory), by name."""
    fresh = AAEPExtension()
    computed = {name: repr(fresh.trait_defaults(name)) for name, _trait in own_options()}
    return {
        name: value
        for name, trait in own_options()
        if (value := computed[name]) != trait.default_value_repr()
    }


def help_text() -> str:
    """Every option in the form of ``--help-all``: flag, help, default."""
    blocks = [
        f"Options of the jupyter-aaep server extension (AAEPExtension), {len(own_options())} in all.",
        textwrap.fill(_HOW_TO_SET, 88),
    ]
    dynamic = _computed_defaults()
    for name, trait in own_options():
        block = AAEPExtension.class_get_trait_help(trait)
        computed = dynamic.get(name)
        if computed is not None:
            static = f"Default: {trait.default_value_repr()}"
            block = block.replace(
                static, f"Default: computed at start-up; on this machine {computed}"
            )
        blocks.append(block)
    return "\n\n".join(blocks) + "\n"


def config_text() -> str:
    """A commented ``jupyter_server_config.py`` section with every option at its default."""
    lines = [
        "# Options of the jupyter-aaep server extension (python -m jupyter_aaep.server.options).",
        "# Uncomment and change the ones you need.",
    ]
    dynamic = _computed_defaults()
    for name, trait in own_options():
        lines.append("")
        for paragraph in (trait.help or "(no help text)").split("\n\n"):
            lines += textwrap.wrap(paragraph, 86, initial_indent="## ", subsequent_indent="#  ")
        computed = dynamic.get(name)
        if computed is None:
            lines.append(f"#  Default: {trait.default_value_repr()}")
        else:
            lines.append(f"#  Default: computed at start-up; on this machine {computed}")
        lines.append(f"# c.AAEPExtension.{name} = {computed or trait.default_value_repr()}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m jupyter_aaep.server.options",
        description="List the jupyter-aaep server extension's options with their help and defaults.",
    )
    parser.add_argument(
        "--config",
        action="store_true",
        help="print them as a commented jupyter_server_config.py section instead",
    )
    args = parser.parse_args(argv)
    sys.stdout.write(config_text() if args.config else help_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
