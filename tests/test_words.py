"""The one words module: counts and durations as people hear them."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from jupyter_aaep import words
from jupyter_aaep.words import duration_words, elapsed_words, noun, plural


@pytest.mark.parametrize(
    ("count", "word", "many", "said"),
    [
        (0, "cell", None, "0 cells"),
        (1, "cell", None, "1 cell"),
        (2, "cell", None, "2 cells"),
        (1, "axes", "axes", "1 axes"),
        (3, "analysis", "analyses", "3 analyses"),
        (2, "old tool result", None, "2 old tool results"),
    ],
)
def test_plural(count: int, word: str, many: str | None, said: str) -> None:
    assert plural(count, word, many) == said


def test_plural_with_thousands() -> None:
    assert plural(12400, "input token", thousands=True) == "12,400 input tokens"
    assert plural(1, "token", thousands=True) == "1 token"
    assert plural(12400, "token") == "12400 tokens"


def test_noun_is_the_word_alone() -> None:
    assert noun(1, "function") == "function" and noun(2, "function") == "functions"
    assert noun(1.0, "second") == "second" and noun(0, "datum", "data") == "data"


@pytest.mark.parametrize(
    ("seconds", "short", "said"),
    [
        (0.2, True, "less than a second"),
        (0.5, True, "1 s"),  # rounds half to even would give 0: never an empty duration
        (40, True, "40 s"),
        (130, True, "2 min 10 s"),
        (120, True, "2 min"),
        (3600 + 5 * 60 + 9, True, "1 h 5 min"),  # past an hour the seconds no longer matter
        (2 * 3600 + 30, True, "2 h"),
        (1, False, "1 second"),
        (61, False, "1 minute 1 second"),
        (130, False, "2 minutes 10 seconds"),
        (180, False, "3 minutes"),
        (3600 + 60, False, "1 hour 1 minute"),
    ],
)
def test_duration_words(seconds: float, short: bool, said: str) -> None:
    assert duration_words(seconds, short=short) == said


@pytest.mark.parametrize(
    ("seconds", "said"),
    [
        (0.04, "0.0 seconds"),
        (0.4, "0.4 seconds"),
        (9.94, "9.9 seconds"),
        (12.3, "12 seconds"),
        (95, "95 seconds"),
        (125, "2 minutes 5 seconds"),
        (180.2, "3 minutes"),  # never "3 minutes 0 seconds"
        (181, "3 minutes 1 second"),  # never "1 seconds"
    ],
)
def test_elapsed_words(seconds: float, said: str) -> None:
    assert elapsed_words(seconds) == said


def test_the_module_imports_nothing_so_every_layer_may_use_it() -> None:
    tree = ast.parse(Path(words.__file__).read_text())
    imported = [
        node
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        and not (isinstance(node, ast.ImportFrom) and node.module == "__future__")
    ]
    assert imported == []
