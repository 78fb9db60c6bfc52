"""The suggestion last shown in each document, and what typing along it means.

A completion popup keeps its item while the user types the word it completes: there the rest of the suggestion is
served with no model call. Ghost text is accepted with one key, so a user who types its next character instead
has declined it (infill.declined: its rest is not shown again).

A suggestion keeps the text around its cursor, MATCHED_CHARS each way, and the lengths of what lies before and
after: the document is not copied (two copies of a 5 MB document per answer) nor compared whole at each keystroke.
"""

from __future__ import annotations

from dataclasses import dataclass

MATCHED_CHARS = 4096  # characters on each side of the cursor that must be as they were for the cache to answer


@dataclass
class Suggestion:
    before: str  # the document's last MATCHED_CHARS characters before the cursor when the suggestion was made
    after: str  # ... and its first MATCHED_CHARS from the cursor on
    offset: int  # where the cursor was
    after_length: int  # how many characters followed it
    text: str  # the suggested replacement of after[:replaced]
    replaced: int  # how many characters after the cursor the suggestion replaces


class TypedAheadCache:
    """One suggestion per document: the latest."""

    def __init__(self) -> None:
        self._by_uri: dict[str, Suggestion] = {}

    def remember(self, uri: str, text: str, offset: int, suggestion: str, replace_end: int) -> None:
        before = text[max(0, offset - MATCHED_CHARS) : offset]
        after = text[offset : offset + MATCHED_CHARS]
        self._by_uri[uri] = Suggestion(before, after, offset, len(text) - offset, suggestion, replace_end - offset)

    def lookup(self, uri: str, text: str, offset: int) -> tuple[str, int] | None:
        """(rest of the suggestion, end offset it replaces) if the edit since is exactly typing a prefix of it (as
        far as the text around the cursor and the lengths tell): the user typed along it."""
        s = self._by_uri.get(uri)
        if s is None or offset <= s.offset or len(text) - offset != s.after_length:
            return None
        typed = text[s.offset : offset]
        if len(typed) >= len(s.text) or not s.text.startswith(typed):
            return None
        if text[s.offset - len(s.before) : s.offset] != s.before or text[offset : offset + len(s.after)] != s.after:
            return None
        return s.text[len(typed) :], offset + s.replaced

    def forget(self, uri: str) -> None:
        self._by_uri.pop(uri, None)
