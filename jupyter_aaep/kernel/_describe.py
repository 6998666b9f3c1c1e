"""Bounded, type-aware descriptions of kernel values, for the model and for people.

A description runs user code (``__repr__``, ``__len__``, properties), so it runs in a worker
thread with a time limit (:func:`run_limited`). pandas, numpy and matplotlib are never imported
here unless the value already is one of their objects (its class comes from that package), so
describing plain values keeps the kernel light.

Limits of the time limit, by design: a ``__repr__`` that loops in Python is stopped (an
exception is raised in the worker thread at its next bytecode); one blocked in C code that does
not release the GIL cannot be interrupted by any Python means and keeps its thread until it
returns, though the caller still gets its answer after the time limit.
"""

from __future__ import annotations

import ctypes
import inspect
import threading
import types
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from ..words import plural

T = TypeVar("T")

REPR_SECONDS = 2.0
"""How long one description may run user code before it is cut off."""
ITEMS = 8
"""How many items of a container, rows of a frame, or values of an array are shown."""
ITEM_CHARS = 120
"""Bound on the text of one shown item."""


class DescribeTimeout(Exception):
    """Raised by :func:`run_limited` when the work did not finish in time."""


class _Stop(BaseException):
    """Injected into a worker thread whose time is up (BaseException: user code rarely catches it)."""


def run_limited(func: Callable[[], T], seconds: float = REPR_SECONDS) -> T:
    """Run *func* in a daemon thread; its result, its exception, or :class:`DescribeTimeout`."""
    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            outcome["value"] = func()
        except _Stop:
            pass
        except BaseException as error:  # noqa: BLE001 - handed back to the caller
            outcome["error"] = error

    thread = threading.Thread(target=work, name="aaep-describe", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        _interrupt(thread)
        raise DescribeTimeout(f"it took more than {seconds:g} seconds")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]  # type: ignore[no-any-return]


def _interrupt(thread: threading.Thread) -> None:
    """Ask a runaway worker to stop at its next Python bytecode (CPython only)."""
    ident = thread.ident
    if ident is None:
        return
    try:
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), ctypes.py_object(_Stop))
    except (AttributeError, TypeError):  # not CPython: the thread runs on as a daemon
        pass


def clip(text: str, limit: int) -> str:
    """*text* cut to *limit* characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    note = f"… ({len(text) - limit} more characters)"
    keep = max(limit - len(note), 0)
    return text[:keep] + note


def type_name(value: Any) -> str:
    """``DataFrame``, ``int``, ``mymodule.Thing``: short for builtins and well-known libraries."""
    cls = type(value)
    module = cls.__module__ or ""
    if module == "builtins" or module.split(".")[0] in ("pandas", "numpy", "matplotlib"):
        return cls.__qualname__
    return f"{module}.{cls.__qualname__}"


def _is(value: Any, package: str, names: tuple[str, ...]) -> bool:
    """Whether *value*'s class (or a base class) is one of *names* from *package*, without importing it."""
    for cls in type(value).__mro__:
        if cls.__name__ in names and (cls.__module__ or "").split(".")[0] == package:
            return True
    return False


def safe_repr(value: Any, limit: int = ITEM_CHARS) -> str:
    """``repr(value)`` bounded; a ``repr`` that raises is named instead of raising."""
    try:
        text = repr(value)
    except _Stop:
        raise
    except Exception as error:  # noqa: BLE001 - user code
        return f"<{type_name(value)}: its repr raised {type(error).__name__}>"
    return clip(text, limit)


# -- the describers -----------------------------------------------------------------------------
def _frame(value: Any, limit: int) -> str:
    rows, columns = value.shape
    lines = [f"pandas DataFrame: {rows} rows x {columns} columns"]
    dtypes = list(value.dtypes.items())
    lines.append("Columns (dtype):")
    for name, dtype in dtypes[:40]:
        lines.append(f"  {safe_repr(name, 60)}: {dtype}")
    if len(dtypes) > 40:
        lines.append(f"  … and {len(dtypes) - 40} more columns")
    if rows:
        head = value.head(5).to_string(max_cols=12, max_colwidth=30, show_dimensions=False)
        lines.append(f"First {min(rows, 5)} rows:")
        lines.append(head)
    return "\n".join(lines)


def _series(value: Any, limit: int) -> str:
    name = f" {safe_repr(value.name, 60)}" if value.name is not None else ""
    lines = [f"pandas Series{name}: {len(value)} values, dtype {value.dtype}"]
    if len(value):
        lines.append(f"First {min(len(value), 5)} values:")
        lines.append(value.head(5).to_string(max_rows=5))
    return "\n".join(lines)


def _array(value: Any, limit: int) -> str:
    import numpy

    shape = "x".join(str(n) for n in value.shape) or "scalar"
    text = f"numpy ndarray: shape {tuple(value.shape)} ({shape}), dtype {value.dtype}"
    if value.size and (numpy.issubdtype(value.dtype, numpy.number) or value.dtype == bool):
        with numpy.errstate(all="ignore"):
            data = value.astype(float) if value.dtype == bool else value
            try:
                low, high = numpy.nanmin(data), numpy.nanmax(data)
                mean = numpy.nanmean(data)
                text += f"; min {low:.6g}, max {high:.6g}, mean {mean:.6g}"
            except (TypeError, ValueError):  # complex numbers, all-NaN slices
                pass
    if value.size:
        sample = numpy.array2string(value, threshold=ITEMS, edgeitems=3, max_line_width=100)
        text += "\nValues: " + sample
    return text


def _axes(axes: Any, index: int | None = None) -> str:
    parts = []
    title = axes.get_title()
    if title:
        parts.append(f"title {title!r}")
    xlabel, ylabel = axes.get_xlabel(), axes.get_ylabel()
    if xlabel:
        parts.append(f"x label {xlabel!r}")
    if ylabel:
        parts.append(f"y label {ylabel!r}")
    lines = axes.get_lines()
    parts.append(plural(len(lines), "line"))
    labels = [str(line.get_label()) for line in lines if not str(line.get_label()).startswith("_")]
    if labels:
        parts.append("labelled " + ", ".join(repr(label) for label in labels[:ITEMS]))
    bars = sum(len(container) for container in getattr(axes, "containers", []))
    if bars:
        parts.append(f"{bars} bars")
    if axes.collections:
        parts.append(f"{len(axes.collections)} collections (scatter points, areas)")
    if axes.images:
        parts.append(f"{len(axes.images)} images")
    name = f"Axes {index}" if index is not None else "matplotlib Axes"
    return f"{name}: " + ", ".join(parts)


def _figure(value: Any, limit: int) -> str:
    axes = list(value.axes)
    head = f"matplotlib Figure with {plural(len(axes), 'axes', 'axes')}"
    suptitle = getattr(value, "_suptitle", None)
    if suptitle is not None and suptitle.get_text():
        head += f", titled {suptitle.get_text()!r}"
    return "\n".join([head] + [_axes(ax, i + 1) for i, ax in enumerate(axes[:ITEMS])])


def _mapping(value: Mapping[Any, Any], limit: int) -> str:
    items = []
    for count, (key, item) in enumerate(value.items()):
        if count == ITEMS:
            items.append("…")
            break
        items.append(f"{safe_repr(key, 40)}: {safe_repr(item, ITEM_CHARS)}")
    return f"{type_name(value)} with {plural(len(value), 'item')}: {{" + ", ".join(items) + "}"


def _sequence(value: Any, limit: int) -> str:
    shown = []
    for count, item in enumerate(value):
        if count == ITEMS:
            shown.append("…")
            break
        shown.append(safe_repr(item, ITEM_CHARS))
    opening, closing = (
        ("[", "]")
        if isinstance(value, list)
        else ("(", ")")
        if isinstance(value, tuple)
        else ("{", "}")
    )
    return (
        f"{type_name(value)} with {plural(len(value), 'item')}: {opening}"
        + ", ".join(shown)
        + closing
    )


def _text(value: str | bytes, limit: int) -> str:
    unit = "characters" if isinstance(value, str) else "bytes"
    head = value[:300]
    more = "…" if len(value) > 300 else ""
    return f"{type_name(value)} of {len(value)} {unit}: {head!r}{more}"


def _callable(value: Any, limit: int) -> str:
    func = getattr(value, "func", value)  # a ToolSpec describes its function
    try:
        signature = str(inspect.signature(func))
    except (TypeError, ValueError):
        signature = "(…)"
    doc = (inspect.getdoc(func) or "").strip().splitlines()
    kind = "kernel tool" if func is not value else "function"
    name = getattr(func, "__name__", type_name(value))
    return f"{kind} {name}{signature}" + (f": {doc[0]}" if doc else "")


def _describe(value: Any, limit: int) -> str:
    if value is None or isinstance(value, (bool, int, float, complex)):
        return f"{type_name(value)}: {safe_repr(value, limit)}"
    if isinstance(value, (str, bytes)):
        return _text(value, limit)
    if _is(value, "pandas", ("DataFrame",)):
        return _frame(value, limit)
    if _is(value, "pandas", ("Series",)):
        return _series(value, limit)
    if _is(value, "numpy", ("ndarray",)):
        return _array(value, limit)
    if _is(value, "matplotlib", ("Figure",)):
        return _figure(value, limit)
    if _is(value, "matplotlib", ("Axes",)):
        return _axes(value)
    if isinstance(value, Mapping):
        return _mapping(value, limit)
    if isinstance(value, (list, tuple, set, frozenset)):
        return _sequence(value, limit)
    if isinstance(value, types.ModuleType):
        return f"module {value.__name__}"
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType, types.MethodType)) or (
        _is(value, "jupyter_aaep", ("ToolSpec",))
    ):
        return _callable(value, limit)
    if isinstance(value, type):
        return f"class {value.__module__}.{value.__qualname__}"
    return f"{type_name(value)}: {safe_repr(value, limit)}"


def describe(value: Any, limit: int = 2000) -> str:
    """A bounded, type-aware description of *value*; never raises and never runs over 2 s.

    DataFrame: shape, columns with dtypes, the first rows; Series; ndarray: shape, dtype,
    min/max/mean; figures: their axes' titles, labels and lines; containers: length and a few
    items; strings: length and head; anything else a bounded ``repr``.
    """
    limit = max(int(limit), 80)
    if value is None or type(value) in (bool, int, float, str):
        return clip(_describe(value, limit), limit)  # no user code: no thread needed
    try:
        return clip(run_limited(lambda: _describe(value, limit)), limit)
    except DescribeTimeout as timeout:
        return f"{type_name(value)}: not described, because {timeout} (its __repr__ or a property may hang)."
    except Exception as error:  # noqa: BLE001 - user code
        return clip(
            f"{type_name(value)}: not described, because describing it raised "
            f"{type(error).__name__}: {safe_repr_text(error)}",
            limit,
        )


def safe_repr_text(error: BaseException) -> str:
    """``str(error)`` bounded, even when ``__str__`` raises."""
    try:
        return clip(str(error), 300)
    except Exception:  # noqa: BLE001 - user code
        return "(its message could not be read)"


def short(value: Any, limit: int = 200) -> str:
    """The first line of :func:`describe`, for listings."""
    return clip(describe(value, max(limit, 400)).splitlines()[0], limit)
