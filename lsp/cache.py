"""The suggestion last shown in each document, and what typing along it means.

A completion popup keeps its item while the user types the word it completes: there the rest of the suggestion is
served with no model call. Ghost text is accepted with one key, so a user who types its next character instead
has declined it (infill.declined: its rest is not shown again).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Suggestion:
    before: str  # document text before the cursor when the suggestion was made
    after: str  # document text from the cursor on
    text: str  # the suggested replacement of after[:replaced]
    replaced: int  # how many characters after the cursor the suggestion replaces


class TypedAheadCache:
    """One suggestion per document: the latest."""

    def __init__(self) -> None:
        self._by_uri: dict[str, Suggestion] = {}

    def remember(self, uri: str, text: str, offset: int, suggestion: str, replace_end: int) -> None:
        self._by_uri[uri] = Suggestion(text[:offset], text[offset:], suggestion, replace_end - offset)

    def lookup(self, uri: str, text: str, offset: int) -> tuple[str, int] | None:
        """(rest of the suggestion, end offset it replaces) if the edit since is exactly typing a prefix of it: the
        user typed along it."""
        s = self._by_uri.get(uri)
        if s is None or offset < len(s.before) or not text.startswith(s.before):
            return None
        typed = text[len(s.before) : offset]
        if not typed or len(typed) >= len(s.text) or not s.text.startswith(typed):
            return None
        if text[offset:] != s.after:
            return None
        return s.text[len(typed) :], offset + s.replaced

    def declined(self, uri: str, text: str, offset: int) -> str | None:
        """The rest of the ghost text the user typed along to `offset` instead of accepting it, or None."""
        typed_along = self.lookup(uri, text, offset)
        return typed_along[0] if typed_along is not None else None

    def forget(self, uri: str) -> None:
        self._by_uri.pop(uri, None)
