"""Turns a stream of model text deltas into ``output.streaming`` events at natural boundaries.

Screen readers cannot announce tokens; they need whole words, better whole sentences. The
coalescer buffers deltas and emits a chunk only at the chosen boundary (word, sentence or
paragraph), then exactly one final chunk with ``complete: true``. ``position`` is the start
offset of each chunk within its output, so it never decreases.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Literal

from .events import Extension, OutputStreaming
from .ids import new_output_id
from .redaction import mask_secrets
from .session import Session

Boundary = Literal["word", "sentence", "paragraph"]

_ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "Mr.", "Mrs.", "Ms.", "Dr.", "approx.", "cf.")

# End of a sentence: terminal punctuation (optionally closing quotes/brackets) then whitespace,
# or a line break (list items, code lines and headings end there too).
_SENTENCE_END = re.compile(r"""[.!?…]["')\]]*\s+|\n+""")
_LIST_NUMBER = re.compile(r"(^|\n)\s*\d+$")
_PARAGRAPH_END = re.compile(r"\n\s*\n+")
_WORD_END = re.compile(r"\s+")


Rewrite = Callable[[str, bool], tuple[str, tuple[Extension, ...]]]
"""(piece, final) → (the text listeners get, extension data about it)."""


class OutputCoalescer:
    """Buffers text for one output and emits it in announceable pieces.

    Parameters
    ----------
    session
        The session the ``output.streaming`` events belong to.
    boundary
        The smallest unit emitted before completion.
    content_type
        MIME type of the text (the agent writes Markdown).
    max_buffer
        Above this many buffered characters a chunk is emitted at the last word boundary even
        without a sentence end (long code blocks), so listeners are not left waiting.
    rewrite
        Turns each masked piece into what listeners get, with extension data about it (the
        producer's markup into words); ``final`` is true for the completing piece, so a rewrite
        that held back an unfinished tail gives it up.
    """

    def __init__(
        self,
        session: Session,
        *,
        boundary: Boundary = "sentence",
        content_type: str = "text/markdown",
        max_buffer: int = 1500,
        output_id: str | None = None,
        rewrite: Rewrite | None = None,
    ) -> None:
        self.session = session
        self.boundary = boundary
        self.content_type = content_type
        self.max_buffer = max_buffer
        self.output_id = output_id or new_output_id()
        self.rewrite = rewrite
        self._buffer = ""
        self._position = 0
        self.text = ""
        """Everything emitted so far (after masking)."""
        self.completed = False
        self.chunks_emitted = 0

    def feed(self, delta: str) -> None:
        if self.completed:
            raise RuntimeError("output already complete")
        if not delta:
            return
        self._buffer += delta
        cut = self._last_boundary(self._buffer)
        if cut == 0 and len(self._buffer) > self.max_buffer:
            cut = self._last_match_end(_WORD_END, self._buffer) or len(self._buffer)
        if cut:
            piece, self._buffer = self._buffer[:cut], self._buffer[cut:]
            self._emit(piece, complete=False, hint=self.boundary)

    def finish(self) -> None:
        """Emit what is left as the single ``complete: true`` chunk."""
        if self.completed:
            return
        piece, self._buffer = self._buffer, ""
        self._emit(piece, complete=True, hint="completion")
        self.completed = True

    def _last_boundary(self, text: str) -> int:
        if self.boundary == "paragraph":
            return self._last_match_end(_PARAGRAPH_END, text)
        if self.boundary == "word":
            return self._last_match_end(_WORD_END, text)
        end = 0
        for match in _SENTENCE_END.finditer(text):
            if match.group(0)[0] == "." and self._is_abbreviation(text, match.start()):
                continue
            end = match.end()
        return end

    @staticmethod
    def _is_abbreviation(text: str, dot_index: int) -> bool:
        head = text[: dot_index + 1]
        if _LIST_NUMBER.search(text[:dot_index]):
            return True  # "1. " opening a numbered list item
        return any(head.endswith(abbr) for abbr in _ABBREVIATIONS)

    @staticmethod
    def _last_match_end(pattern: re.Pattern[str], text: str) -> int:
        end = 0
        for match in pattern.finditer(text):
            end = match.end()
        return end

    def _emit(self, piece: str, *, complete: bool, hint: str) -> None:
        chunk = mask_secrets(piece)
        extensions: tuple[Extension, ...] = ()
        if self.rewrite is not None:
            chunk, extensions = self.rewrite(chunk, complete)
            if not chunk and not complete:
                return  # all held back: nothing to say yet
        self.session.emit(
            OutputStreaming(
                chunk=chunk,
                position=self._position,
                complete=complete,
                coalesce_hint=hint,  # type: ignore[arg-type]
                output_id=self.output_id,
                content_type=self.content_type,
                extensions=extensions,
            )
        )
        self._position += len(chunk)
        self.text += chunk
        self.chunks_emitted += 1
