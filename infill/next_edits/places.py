"""Where a change applies again: the other places of the document whose text and anchors match the change's.

A place is an occurrence of the core's old text (whole tokens: `sha1` is not found inside `sha10`) framed by the
same anchor tokens on its line as the place the user changed. For a suffix added at a line's end (`# type: ignore`,
a trailing comma), a place is a line that ends with the same token as the changed line did and looks like it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ..document import SyntaxDocument
from .change import Change, tokens
from .shape import shape

MAX_PLACES = 10  # more places than this: not a change to repeat everywhere (docs/benchmarks.md, "Tuned constants")


def _line_at(text: str, start: int, end: int) -> tuple[int, int]:
    lo = text.rfind("\n", 0, start) + 1
    hi = text.find("\n", end)
    return lo, len(text) if hi < 0 else hi


def _last_token(s: str) -> str:
    return next((t for t in reversed(tokens(s)) if not t.isspace()), "")


def _first_token(s: str) -> str:
    return next((t for t in tokens(s) if not t.isspace()), "")


def _occurrences(text: str, old: str) -> Iterator[int]:
    """Starts of `old` in `text` as whole tokens."""
    word_start, word_end = old[:1].isidentifier() or old[:1].isdigit(), old[-1:].isalnum() or old[-1:] == "_"
    pattern = (r"(?<![A-Za-z0-9_])" if word_start else "") + re.escape(old) + (r"(?![A-Za-z0-9_])" if word_end else "")
    for m in re.finditer(pattern, text):
        yield m.start()


def places(
    doc: SyntaxDocument, change: Change, origins: set[tuple[str, ...] | None], skip: tuple[int, int]
) -> list[tuple[int, int]]:
    """(start, end) of each place in `doc` where `change` applies, outside the `skip` range (the edit itself): the
    core's old text between the change's anchors, in a syntactic shape of a place the user made it at (`origins`).
    Widening the anchors to those of every place the user made it at, or to any once they differ, lost more
    precision than it gained recall on the tuning histories (docs/benchmarks.md, "Next edits")."""
    found = [(s, e) for s, e in _matches(doc.text, change, skip) if None in origins or shape(doc, s, e) in origins]
    if not change.old:
        model = change.line_before.rstrip()
        found = [(s, e) for s, e in found if _alike(_line(doc.text, s), model)]
    return found if len(found) <= MAX_PLACES else []


def _line(text: str, offset: int) -> str:
    lo, hi = _line_at(text, offset, offset)
    return text[lo:hi].rstrip()


def _matches(text: str, change: Change, skip: tuple[int, int]) -> list[tuple[int, int]]:
    """The places whose text and anchor tokens match the change's."""
    found: list[tuple[int, int]] = []
    if change.old:
        for start in _occurrences(text, change.old):
            end = start + len(change.old)
            if start < skip[1] and end > skip[0]:
                continue
            lo, hi = _line_at(text, start, end)
            if _last_token(text[lo:start]) == change.left and _first_token(text[end:hi]) == change.right:
                found.append((start, end))
    elif change.at_line_end and change.left:
        for m in re.finditer(r"[^\n]*", text):
            stripped = m.group().rstrip()
            start = m.start() + len(stripped)
            if not stripped or (m.start() <= skip[1] and start >= skip[0]):
                continue
            if _last_token(stripped) == change.left:
                found.append((start, start))
    return found


def _alike(line: str, model: str) -> bool:
    """Two lines of one shape: the same first token and the same indentation."""
    return line[: len(line) - len(line.lstrip())] == model[: len(model) - len(model.lstrip())] and _first_token(
        line
    ) == _first_token(model)
