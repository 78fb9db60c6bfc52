"""The value every post-processing filter takes and returns: a proposed edit at the cursor plus its context.

Filters are pure functions `Candidate -> Candidate` so they can be tested one by one on golden cases and reordered
without hidden state; an empty `text` means "no suggestion".
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from diffill.infill.languages import default_indent
from diffill.infill.spans import Span
from diffill.infill.text import detect_indent_unit, dominant_eol, line_window


@dataclass(frozen=True)
class Candidate:
    """Edit proposal: replace doc_text[offset:replace_end] with text (replace_end >= offset)."""

    text: str
    doc_text: str
    offset: int
    span: Span
    language: str | None
    replace_end: int
    # The document's current tree-sitter tree (doc_text parsed), when known: filters then re-parse edits
    # incrementally instead of parsing the whole file again.
    tree: Any = field(default=None, compare=False, repr=False)
    # The line this text was deliberately cut from (the engine keeps only the start the model is sure of), or "":
    # the syntax guard judges that whole line, since a short answer is a start to type on from, not a line.
    whole: str = ""
    # Where the engine wrote that line only as far as it was shown (`whole` then holds that start, the character
    # after the cut included): writes the rest, returning the whole line (`whole_line`).
    rest_of_whole: Callable[[], str] | None = field(default=None, compare=False, repr=False)
    # doc_text's UTF-8 bytes and the cursor's byte offset in them, when the document keeps them (SyntaxDocument):
    # the syntax guard then places its edits without a pass over a large file's text.
    source: bytes | None = field(default=None, compare=False, repr=False)
    offset_byte: int | None = None

    @classmethod
    def at(
        cls,
        doc_text: str,
        offset: int,
        span: Span,
        language: str | None,
        text: str,
        *,
        tree: Any = None,
        whole: str = "",
        rest_of_whole: Callable[[], str] | None = None,
        source: bytes | None = None,
        offset_byte: int | None = None,
    ) -> Candidate:
        """A raw model output inserted at the cursor, replacing nothing yet."""
        return cls(text, doc_text, offset, span, language, offset, tree, whole, rest_of_whole, source, offset_byte)

    def whole_line(self) -> str:
        """The line this text was cut from, all of it: `whole`, its rest written now where the engine wrote only
        its start (`rest_of_whole`)."""
        return self.rest_of_whole() if self.rest_of_whole is not None else self.whole

    def with_text(self, text: str, replace_end: int | None = None) -> Candidate:
        """Same context, new text; replace_end defaults to the current one (an empty text replaces nothing)."""
        end = self.offset if not text else (self.replace_end if replace_end is None else replace_end)
        return dataclasses.replace(self, text=text, replace_end=max(self.offset, end))

    def empty(self) -> Candidate:
        """The "no suggestion" candidate."""
        return self.with_text("")

    def edited_text(self) -> str:
        """The document as it would read after accepting the edit."""
        return self.doc_text[: self.offset] + self.text + self.doc_text[self.replace_end :]

    @cached_property
    def _line(self) -> tuple[int, int]:
        """The cursor's line, as far as the filters read it (`line_window`: a long line is cut around the cursor)."""
        return line_window(self.doc_text, self.offset)

    @property
    def line_start(self) -> int:
        """String offset of the start of the cursor's line (of its window, on a long line)."""
        return self._line[0]

    @property
    def line_end(self) -> int:
        """String offset of the end of the cursor's line, before its terminator (of its window, on a long line)."""
        return self._line[1]

    @property
    def before_cursor(self) -> str:
        """Text of the cursor's line before the cursor."""
        return self.doc_text[self._line[0] : self.offset]

    @property
    def suffix_on_line(self) -> str:
        """Text of the cursor's line after the cursor."""
        return self.doc_text[self.offset : self._line[1]]

    @cached_property
    def eol(self) -> str:
        """The document's line terminator."""
        return dominant_eol(self.doc_text)

    @cached_property
    def indent_unit(self) -> str:
        """The document's indentation step."""
        return detect_indent_unit(self.doc_text, default_indent(self.language))

    @property
    def trail_text(self) -> str:
        """The span's trail in the document's line endings (what the indentation filter appends)."""
        return self.span.trail.replace("\n", self.eol)

    def split_trail(self) -> tuple[str, str]:
        """(body, trail) when the text ends with the span's trail, else (text, "")."""
        trail = self.trail_text
        if trail and self.text.endswith(trail) and len(self.text) > len(trail):
            return self.text[: -len(trail)], trail
        return self.text, ""
