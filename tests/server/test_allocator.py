"""glibc's allocator set at the extension's load to give a big output's memory back
(``server/allocator.py``): what is set, what the environment keeps, and the option that turns
it off. The memory it saves is measured in ``benchmarks/output_flood.py``, not here."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from jupyter_aaep.server import allocator
from jupyter_aaep.server import app as app_module

CALLS: list[tuple[int, int]] = []


def _recording(param: int, value: int) -> int:
    CALLS.append((param, value))
    return 1


@pytest.fixture
def mallopt(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    CALLS.clear()
    monkeypatch.setattr(allocator, "_mallopt", lambda: _recording)
    return CALLS


def test_both_values_are_set_where_the_environment_left_them(mallopt: list[Any]) -> None:
    said = allocator.tune_allocator({})
    assert mallopt == [(allocator.M_ARENA_MAX, 2), (allocator.M_MMAP_THRESHOLD, 1 << 20)]
    assert said == (
        "memory allocator set to give memory back after big outputs: at most 2 malloc arenas "
        "and blocks of 1 MB or more mapped on their own"
    )


@pytest.mark.parametrize(
    ("environ", "kept"),
    [
        ({"MALLOC_ARENA_MAX": "4"}, allocator.M_ARENA_MAX),
        ({"GLIBC_TUNABLES": "glibc.malloc.arena_max=8"}, allocator.M_ARENA_MAX),
        ({"MALLOC_MMAP_THRESHOLD_": "65536"}, allocator.M_MMAP_THRESHOLD),
        ({"GLIBC_TUNABLES": "glibc.malloc.mmap_threshold=65536"}, allocator.M_MMAP_THRESHOLD),
    ],
)
def test_a_value_the_person_set_is_kept(
    mallopt: list[Any], environ: dict[str, str], kept: int
) -> None:
    said = allocator.tune_allocator(environ)
    assert [param for param, _ in mallopt] == [
        p for p in (allocator.M_ARENA_MAX, allocator.M_MMAP_THRESHOLD) if p != kept
    ]
    assert said is not None and ("arenas" in said) == (kept != allocator.M_ARENA_MAX)


def test_nothing_is_said_when_the_environment_chose_both(mallopt: list[Any]) -> None:
    environ = {"MALLOC_ARENA_MAX": "2", "MALLOC_MMAP_THRESHOLD_": "131072"}
    assert allocator.tune_allocator(environ) is None and mallopt == []


def test_a_refused_value_is_not_claimed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(allocator, "_mallopt", lambda: lambda _param, _value: 0)
    assert allocator.tune_allocator({}) is None


def test_only_linux_with_glibc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    assert allocator._mallopt() is None and allocator.tune_allocator({}) is None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_the_real_mallopt_takes_both_values() -> None:
    """The test machines run glibc: the values are accepted (mallopt returns 1)."""
    mallopt = allocator._mallopt()
    assert mallopt is not None
    assert mallopt(allocator.M_MMAP_THRESHOLD, allocator.MMAP_THRESHOLD) == 1
    assert mallopt(allocator.M_ARENA_MAX, allocator.ARENA_MAX) == 1


@pytest.fixture
def aaep_config(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Set before the server starts: records whether its load tuned the allocator."""
    CALLS.clear()
    monkeypatch.setattr(
        app_module, "tune_allocator", lambda: CALLS.append((0, 0)) or "allocator tuned"
    )
    return {"tune_memory_allocator": request.param}


@pytest.mark.parametrize("aaep_config", [True, False], indirect=True)
async def test_the_server_tunes_it_at_load_unless_turned_off(
    aaep_config: dict[str, Any], extension: Any
) -> None:
    assert extension.tune_memory_allocator is aaep_config["tune_memory_allocator"]
    assert len(CALLS) == (1 if aaep_config["tune_memory_allocator"] else 0)
