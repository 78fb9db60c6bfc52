"""Helpers for the infill tests: documents written with the cursor marked by `<CURSOR>` (or `|`), and a tiny
engine (engine_doubles)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from engine_doubles import tiny_engine

from diffill.infill.document import SyntaxDocument
from diffill.infill.engine import CompletionEngine
from diffill.infill.filters.base import Candidate
from diffill.infill.spans import select_span


def split_cursor(src: str) -> tuple[str, int]:
    """(text, cursor offset) from a source with one cursor marker; `<CURSOR>` wins over `|` (code may hold `|`)."""
    marker = "<CURSOR>" if "<CURSOR>" in src else "|"
    offset = src.index(marker)
    return src[:offset] + src[offset + len(marker) :], offset


@pytest.fixture
def cursor_doc() -> Callable[[str | None, str], tuple[SyntaxDocument, int]]:
    def make(language: str | None, src: str) -> tuple[SyntaxDocument, int]:
        text, offset = split_cursor(src)
        return SyntaxDocument(text, language), offset

    return make


@pytest.fixture
def candidate() -> Callable[[str | None, str, str], Candidate]:
    """Build the raw candidate a filter sees: model output at the cursor, span chosen by `select_span`."""

    def make(language: str | None, src: str, raw: str, with_tree: bool = False) -> Candidate:
        text, offset = split_cursor(src)
        doc = SyntaxDocument(text, language)
        return Candidate.at(text, offset, select_span(doc, offset), language, raw, tree=doc.tree if with_tree else None)

    return make


@pytest.fixture(scope="module")
def engine() -> CompletionEngine:
    """An engine over a random tiny model (engine_doubles.tiny_engine), one per test module."""
    return tiny_engine()
