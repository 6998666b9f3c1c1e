"""Where a big output's memory stays in the server, for ``output_flood.py``.

Measures, in this (the server's) process: resident memory; the collaboration rooms still open
and the size of each one's shared document (its full update, what a new client would be sent);
the Python objects holding long strings (``gc``); what ``tracemalloc`` still counts as allocated
since a start snapshot (Python allocations only: pycrdt's Rust heap is not traced); and what
``malloc_trim(0)`` gives back (memory that is freed but kept by glibc, as opposed to still in use).
"""

from __future__ import annotations

import ctypes
import gc
import os
import sys
import tracemalloc
import types
import weakref
from pathlib import Path
from typing import Any

BIG_STRING = 1_000_000
"""Characters from which a string counts as a copy of the output."""


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def trim() -> float:
    """Give glibc's free pages back to the system; the resident memory afterwards."""
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    return rss_mb()


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def c_heap_mb() -> tuple[float, float, float] | None:
    """glibc's ``mallinfo2`` over all arenas: (MB in use, MB freed but kept, MB in big blocks
    mapped on their own); ``None`` without glibc. In use covers C and Rust allocations (pycrdt's
    documents, zmq's buffers) and Python objects over 512 bytes; Python's small objects live in
    its own 1 MB arenas, counted by ``sys.getallocatedblocks``."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = _MallInfo2
    except (OSError, AttributeError):
        return None
    info = libc.mallinfo2()
    return info.uordblks / 1e6, info.fordblks / 1e6, info.hblkhd / 1e6


def mappings_mb() -> dict[str, float]:
    """Resident MB by kind of mapping (``/proc/self/smaps``): the main heap, other anonymous
    memory (threads' malloc arenas, big blocks, Python's arenas), and files."""
    kinds: dict[str, float] = {"heap": 0.0, "anonymous": 0.0, "files": 0.0}
    kind = "files"
    try:
        lines = Path("/proc/self/smaps").read_text().splitlines()
    except OSError:
        return kinds
    for line in lines:
        first = line.split(maxsplit=1)[0]
        if "-" in first and not first.endswith(":"):
            parts = line.split()
            name = parts[5] if len(parts) > 5 else ""
            kind = "heap" if name == "[heap]" else "anonymous" if not name else "files"
            if name.startswith("[") and name != "[heap]":
                kind = "files"  # stack, vdso: not what a big output leaves
        elif first == "Rss:":
            kinds[kind] += int(line.split()[1]) / 1024
    return kinds


def allocator_settings(tuned: bool) -> str:
    """How glibc's allocator was set up for this run: the environment's and the extension's."""
    chosen = [
        f"{name}={os.environ[name]}"
        for name in ("MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_", "GLIBC_TUNABLES")
        if name in os.environ
    ]
    extension = "tuned by the extension" if tuned else "not tuned by the extension"
    return f"{', '.join(chosen) or 'glibc defaults in the environment'}; {extension}"


def heap_line() -> str:
    """One line on the C heap and the resident mappings (see :func:`c_heap_mb`)."""
    heap, maps = c_heap_mb(), mappings_mb()
    used = (
        ""
        if heap is None
        else f"C heap (mallinfo2): in use {heap[0]:.0f} MB, freed but kept {heap[1]:.0f} MB, "
        f"big blocks {heap[2]:.0f} MB; "
    )
    return (
        f"{used}resident: main heap {maps['heap']:.0f} MB, other anonymous "
        f"{maps['anonymous']:.0f} MB"
    )


def rooms(app: Any) -> list[tuple[str, int, int]]:
    """``(room id, clients, bytes of its shared document)`` of each open collaboration room."""
    extension = app.web_app.settings.get("jupyter_server_ydoc")
    server = getattr(extension, "ywebsocket_server", None)
    found = []
    for name, room in dict(getattr(server, "rooms", {})).items():
        try:
            size = len(room.ydoc.get_update())
        except Exception:  # noqa: BLE001 - a room without a document (awareness)
            size = 0
        found.append((name, len(room.clients), size))
    return found


def room_document(app: Any, path: str) -> weakref.ref[Any] | None:
    """A weak reference to the shared document of *path*'s room, to see when it is freed."""
    extension = app.web_app.settings.get("jupyter_server_ydoc")
    file_id = app.web_app.settings["file_id_manager"].get_id(path)
    room = extension.ywebsocket_server.rooms.get(f"json:notebook:{file_id}")
    document = getattr(room, "_document", None)
    return None if document is None else weakref.ref(document)


def big_string_holders() -> list[str]:
    """What holds a string of more than ``BIG_STRING`` characters: each holder's type and, for
    a dict, its keys (strings are not tracked by gc; their containers are)."""
    found = []
    for holder in gc.get_objects():
        values: Any = ()
        if isinstance(holder, dict):
            values = holder.values()
        elif isinstance(holder, (list, tuple)):
            values = holder
        big = [v for v in values if isinstance(v, str) and len(v) > BIG_STRING]
        if big:
            keys = sorted(str(k) for k in holder)[:6] if isinstance(holder, dict) else []
            found.append(
                f"{type(holder).__name__} {keys} holds {sum(map(len, big)) / 1e6:.1f} M chars"
            )
    return found


def live_documents() -> list[str]:
    """Every shared notebook (``YNotebook``) still alive over 1 MB, and what keeps it alive."""
    from jupyter_ydoc import YNotebook

    found = []
    for doc in [o for o in gc.get_objects() if isinstance(o, YNotebook)]:
        size = len(doc.ydoc.get_update())
        if size > 1_000_000:
            found.append(f"live shared notebook {size / 1e6:.1f} MB, kept by:")
            found.extend(f"  {chain}" for chain in _holders(doc))
    return found


def _label(obj: Any) -> str:
    if isinstance(obj, types.FrameType):
        return f"frame {obj.f_code.co_name}"
    if isinstance(obj, types.CoroutineType):
        return f"coroutine {obj.cr_code.co_qualname}"
    return type(obj).__qualname__


def _holders(target: Any, depth: int = 6) -> list[str]:
    """Chains of referrers (an instance's ``__dict__`` named as the instance, frames by their
    function) that keep *target* alive, up to *depth* steps, without this module's own."""
    chains: list[str] = []
    skip = {id(sys._getframe())}

    def walk(obj: Any, path: list[str], level: int) -> None:
        skip.add(id(path))
        if level >= depth or len(chains) > 12:
            chains.append(" <- ".join(path))
            return
        referrers = [r for r in gc.get_referrers(obj) if id(r) not in skip]
        referrers = [
            r
            for r in referrers
            if not (isinstance(r, types.FrameType) and r.f_code.co_filename == __file__)
        ]
        if not referrers:
            chains.append(" <- ".join(path) + " (nothing: garbage)")
        for ref in referrers[:5]:
            skip.add(id(ref))
            owner, label = ref, _label(ref)
            if isinstance(ref, dict):
                owners = [o for o in gc.get_referrers(ref) if getattr(o, "__dict__", None) is ref]
                if owners:
                    owner, label = owners[0], f"{_label(owners[0])}.__dict__"
                    skip.add(id(owner))
            walk(owner, [*path, label], level + 1)

    walk(target, [_label(target)], 0)
    return chains


def start_tracing() -> tracemalloc.Snapshot:
    tracemalloc.start(8)
    return tracemalloc.take_snapshot()


def traced_growth(start: tracemalloc.Snapshot, top: int = 8) -> list[str]:
    """The allocation sites with the most memory still held since *start* (Python heap)."""
    gc.collect()
    now = tracemalloc.take_snapshot()
    tracemalloc.stop()
    stats = now.compare_to(start, "traceback")
    lines = [f"traced Python heap now +{sum(s.size_diff for s in stats) / 1e6:.1f} MB"]
    for stat in stats[:top]:
        if stat.size_diff < 1_000_000:
            break
        frames = [f"{f.filename.split('site-packages/')[-1]}:{f.lineno}" for f in stat.traceback]
        lines.append(f"  +{stat.size_diff / 1e6:6.1f} MB  {' < '.join(frames[-3:][::-1])}")
    return lines


def report(app: Any, before: float, label: str) -> None:
    """Print the breakdown at this moment (resident memory relative to *before*)."""
    gc.collect()
    now = rss_mb()
    open_rooms = rooms(app)
    print(
        f"  [{label}] RSS {now:6.0f} MB (+{now - before:.0f}); Python objects' blocks "
        f"{sys.getallocatedblocks() / 1e6:.2f} M",
        file=sys.stdout,
    )
    print(f"    {heap_line()}")
    for name, clients, size in open_rooms:
        print(f"    room {name}: {clients} client(s), shared document {size / 1e6:.1f} MB")
    for line in [*live_documents(), *big_string_holders()[:6]]:
        print(f"    {line}")


async def close_idle_rooms_by_hand(app: Any) -> int:
    """Delete the document rooms nobody is connected to, as jupyter-collaboration's own cleaner
    does when the last client leaves (saving first): to tell what such a room holds."""
    extension = app.web_app.settings["jupyter_server_ydoc"]
    server = extension.ywebsocket_server
    closed = 0
    for name, room in list(server.rooms.items()):
        if room.clients or not hasattr(room, "_save_to_disc"):
            continue
        saving = room._save_to_disc()
        if saving is not None:
            await saving
        await server.delete_room(room=room)
        file_id = name.split(":", 2)[-1]
        if file_id in extension.file_loaders and not (
            extension.file_loaders[file_id].number_of_subscriptions
        ):
            await extension.file_loaders.remove(file_id)
        closed += 1
    return closed
