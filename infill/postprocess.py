"""Turn a raw model completion into the edit the editor shows, by running the filters in order.

Order matters: cut at the span first (later filters should not see text past the construct), drop repetition
before re-indenting (cheaper, and it compares what the model wrote), normalise indentation before comparing with
the document's next lines, and check syntax last, on the final text.
"""

from __future__ import annotations

from collections.abc import Callable

from diffill.infill.document import SyntaxDocument
from diffill.infill.filters.base import Candidate
from diffill.infill.filters.indentation import normalize_indentation
from diffill.infill.filters.repetition import drop_repetition
from diffill.infill.filters.stop_at_span import stop_at_span
from diffill.infill.filters.suffix_overlap import drop_suffix_overlap
from diffill.infill.filters.syntax_guard import syntax_guard
from diffill.infill.spans import Span, select_span

Filter = Callable[[Candidate], Candidate]

FILTERS: tuple[Filter, ...] = (
    stop_at_span,
    drop_repetition,
    normalize_indentation,
    drop_suffix_overlap,
    syntax_guard,
)


def postprocess(candidate: Candidate, filters: tuple[Filter, ...] = FILTERS) -> Candidate:
    """Run the filters in order, stopping early once one empties the suggestion."""
    for f in filters:
        candidate = f(candidate)
        if not candidate.text:
            return candidate.empty()
    return candidate


def complete(doc: SyntaxDocument, offset: int, raw: str, span: Span | None = None) -> Candidate:
    """Post-process raw model output for a completion at string offset `offset` of `doc`."""
    span = span if span is not None else select_span(doc, offset)
    return postprocess(Candidate.at(doc.text, offset, span, doc.language, raw, doc.tree))


def to_edit(candidate: Candidate) -> tuple[int, int, str] | None:
    """(start_offset, end_offset, new_text) in string offsets: replace text[start:end] with new_text; None when
    there is nothing to suggest. Convert offsets with `SyntaxDocument.position_at` for an LSP range."""
    if not candidate.text:
        return None
    return candidate.offset, candidate.replace_end, candidate.text
