"""Explorable figures: every matplotlib (and seaborn) figure a kernel shows carries its data.

Next to the figure's ``image/png`` the kernel sends a MIME bundle of our own,
:data:`~jupyter_aaep.notebook.figure_data.MAIDR_MIME`, holding maidr's description of the chart
(axes, series, values). The panel renders it with maidr's script, served by the Jupyter server,
so a screen-reader user can walk the chart value by value; the agent reads the same data.

Why this shape:

- **maidr records a chart while it is drawn** (it wraps ``Axes.bar``, ``plot``, seaborn, …), so
  it must be imported before the user plots. Importing it costs about half a second, so it is
  imported when ``matplotlib.pyplot`` is (a post-import hook), not at every kernel start.
- **The user's backend stays theirs.** ``import maidr`` switches matplotlib to maidr's own
  backend and stashes its 2 MB script in the notebook; both are prevented here (the backend by
  naming a non-inline backend in ``MPLBACKEND`` while it imports, the stash by capturing the
  display it makes) and its notebook hooks are removed again. The figure is still shown by
  matplotlib_inline as an image; only our formatter adds the data.
- **An IPython formatter**, not a wrapper of ``show``: every way a figure reaches the notebook
  (the end of a cell, ``plt.show()``, a figure as a cell's value, ``display(fig)``) goes through
  the display formatter, which asks each formatter for its MIME type.

Off with ``AAEP_EXPLORABLE_FIGURES=0`` in the kernel's environment (the server sets it from
``c.AAEPExtension.explorable_figures``), or :func:`disable` in a running kernel.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import math
import os
import sys
import warnings
from typing import Any

from ..figure_mime import MAIDR_MIME, MAX_DATA_CHARS
from .figure_marks import figure_marks

__all__ = ["ENV_SWITCH", "disable", "enable", "enabled_by_environment", "figure_bundle"]

ENV_SWITCH = "AAEP_EXPLORABLE_FIGURES"
_log = logging.getLogger(__name__)
_state: dict[str, Any] = {"shell": None, "hooked": False, "maidr": None}


def enabled_by_environment() -> bool:
    """Whether the environment leaves explorable figures on (the default)."""
    value = os.environ.get(ENV_SWITCH, "1").strip().lower()
    return value not in ("0", "false", "no", "off")


def _import_maidr() -> Any:
    """``import maidr`` without its side effects on the user's notebook (see the module doc)."""
    if _state["maidr"] is not None:
        return _state["maidr"]
    if "maidr" in sys.modules:
        # The user imported maidr first: its backend is their choice (once imported here, a
        # later ``import maidr`` changes nothing; ``maidr.set_backend(use_maidr=True)`` does).
        _state["maidr"] = sys.modules["maidr"]
        return _state["maidr"]
    from IPython.utils.capture import capture_output

    before = os.environ.get("MPLBACKEND")
    # maidr leaves the backend alone when MPLBACKEND names one that is not the inline one.
    os.environ["MPLBACKEND"] = "module://jupyter_aaep.keep-the-backend"
    try:
        with capture_output(stdout=False, stderr=False, display=True), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import maidr  # type: ignore[import-untyped, unused-ignore]
    finally:
        if before is None:
            os.environ.pop("MPLBACKEND", None)
        else:
            os.environ["MPLBACKEND"] = before
    _undo_notebook_display(_state["shell"])
    _state["maidr"] = maidr
    return maidr


def _undo_notebook_display(shell: Any) -> None:
    """Remove the hooks ``import maidr`` adds to show figures as its own charts (they do nothing
    while its backend is not matplotlib's, but the notebook stays as it was without them)."""
    if shell is None:
        return
    try:
        from maidr.util import notebook_display  # type: ignore[import-untyped, unused-ignore]
        from matplotlib.figure import Figure

        callbacks = shell.events.callbacks.get("post_execute", [])
        while notebook_display.flush_figures in callbacks:
            callbacks.remove(notebook_display.flush_figures)
        shell.display_formatter.ipython_display_formatter.pop(Figure, None)
    except Exception:  # noqa: BLE001 - never why a plot fails
        _log.debug("could not remove maidr's notebook display", exc_info=True)


def _finite(value: Any) -> Any:
    """*value* with NaN and infinities as ``None``: JSON has no words for them (a gap in a
    line, a missing bar)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


def figure_bundle(figure: Any) -> dict[str, Any] | None:
    """Our MIME bundle for *figure*: maidr's data, or why the figure cannot be explored.

    ``{"version": 1, "explorable": true, "maidr": {...}, "marks": {layer id: boxes}}`` (where
    each value is drawn, as fractions of the image: ``figure_marks.py``) or
    ``{"version": 1, "explorable": false, "reason": "unsupported" | "too_large" | "failed"}``,
    both with ``styles``: how its series are told apart (:mod:`._styles`), when readable.
    """
    bundle = _maidr_bundle(figure)
    if bundle is not None:
        from ._styles import figure_styles

        styles = figure_styles(figure)
        if styles is not None:
            bundle["styles"] = styles
    return bundle


def _maidr_bundle(figure: Any) -> dict[str, Any] | None:
    from matplotlib.figure import Figure

    if not isinstance(figure, Figure):
        return {"version": 1, "explorable": False, "reason": "unsupported"}
    if not figure.axes:
        return None  # an empty figure is no chart (matplotlib_inline shows no image of it)
    try:
        maidr = _import_maidr()
        from maidr.core.figure_manager import FigureManager  # type: ignore[import-untyped, unused-ignore]
        from maidr.util.figure_lock import figure_lock  # type: ignore[import-untyped, unused-ignore]
    except ImportError:  # maidr is not installed here: the figure is an image, as without us
        return None
    except Exception:  # noqa: BLE001 - maidr broken: the image is shown as always
        _log.debug("maidr is not available", exc_info=True)
        return {"version": 1, "explorable": False, "reason": "failed"}
    if figure not in FigureManager.figs:
        return {"version": 1, "explorable": False, "reason": "unsupported"}
    try:
        record = FigureManager.get_maidr(figure)
        with figure_lock(figure), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # Private in maidr 1.28: the schema maidr.js reads, without rendering its SVG.
            schema = record._flatten_maidr()
    except KeyError:
        return {"version": 1, "explorable": False, "reason": "unsupported"}
    except Exception:  # noqa: BLE001 - a chart maidr fails on is shown, not explorable
        _log.debug("maidr could not read the figure", exc_info=True)
        return {"version": 1, "explorable": False, "reason": "failed"}
    text = json.dumps(_finite(schema), allow_nan=False, default=str)
    if len(text) > MAX_DATA_CHARS:
        return {"version": 1, "explorable": False, "reason": "too_large"}
    return {
        "version": 1,
        "explorable": True,
        "maidr": json.loads(text),
        "marks": figure_marks(figure, record, schema),
        "library": f"maidr {getattr(maidr, '__version__', '?')}",
    }


def _importing() -> bool:
    """Whether a module is half imported now (``import seaborn`` imports pyplot on its way)."""
    return any(
        getattr(getattr(module, "__spec__", None), "_initializing", False)
        for module in list(sys.modules.values())
    )


def _bring_in_maidr() -> None:
    try:
        _import_maidr()
    except Exception:  # noqa: BLE001 - never break the user's import or figure
        _log.debug("maidr could not be imported", exc_info=True)


def _on_pyplot(_module: Any = None) -> None:
    """When pyplot is imported: bring in maidr, so the figures about to be drawn are recorded.

    Not while another import is under way: maidr patches seaborn as soon as it finds it in
    ``sys.modules``, and a seaborn still importing (it imports pyplot first) has no functions
    yet. Then maidr comes in when the first figure is made, after every import has finished.
    """
    if _state["shell"] is None or _state["maidr"] is not None:
        return
    if not _importing():
        _bring_in_maidr()
        return
    from matplotlib.figure import Figure

    original = Figure.__init__

    def first_figure(self: Any, *args: Any, **kwargs: Any) -> None:
        Figure.__init__ = original  # type: ignore[method-assign]
        if _state["shell"] is not None:
            _bring_in_maidr()
        original(self, *args, **kwargs)

    Figure.__init__ = first_figure  # type: ignore[method-assign]


def _formatter(shell: Any) -> Any:
    """The display formatter for our MIME type (made once per shell)."""
    formatters = shell.display_formatter.formatters
    if MAIDR_MIME in formatters:
        return formatters[MAIDR_MIME]
    from IPython.core.formatters import BaseFormatter
    from traitlets import ObjectName, Unicode

    class MaidrFormatter(BaseFormatter):
        """Formats a figure as our MIME bundle (a dict, sent as JSON)."""

        format_type = Unicode(MAIDR_MIME)
        _return_type = dict
        print_method = ObjectName("_repr_aaep_maidr_")

    formatter = MaidrFormatter(parent=shell.display_formatter)
    formatters[MAIDR_MIME] = formatter
    return formatter


def enable(shell: Any) -> bool:
    """Turn explorable figures on in *shell* (loading twice changes nothing). False when
    matplotlib is not installed (nothing to explore). Looked up, not imported: importing
    matplotlib took 0.35 s, at every kernel start, for notebooks that never plot."""
    if importlib.util.find_spec("matplotlib") is None:
        return False
    _state["shell"] = shell
    formatter = _formatter(shell)
    # Registered for FigureBase, which Figure derives from: matplotlib_inline removes every
    # formatter's entry for Figure itself whenever the inline backend is set up (at the first
    # figure, and on every %config InlineBackend.figure_formats), which would drop ours.
    formatter.for_type_by_name("matplotlib.figure", "FigureBase", figure_bundle)
    formatter.enabled = True
    if "matplotlib.pyplot" in sys.modules:
        _on_pyplot()
    elif not _state["hooked"]:
        try:
            import wrapt  # type: ignore[import-untyped, unused-ignore]
        except ImportError:  # maidr (which brings wrapt) is missing: figures stay images
            return True
        wrapt.register_post_import_hook(_on_pyplot, "matplotlib.pyplot")
        _state["hooked"] = True
    return True


def disable(shell: Any) -> None:
    """Turn explorable figures off in *shell*: figures are images only again."""
    formatter = shell.display_formatter.formatters.get(MAIDR_MIME)
    if formatter is not None:
        formatter.enabled = False
    _state["shell"] = None
