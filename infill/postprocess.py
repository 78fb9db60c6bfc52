"""Turn a raw model completion into the edit the editor shows, by running the filters in order.

Order matters: cut at the span first (later filters should not see text past the construct), drop repetition
before re-indenting (cheaper, and it compares what the model wrote), normalise indentation before comparing with
the document's next lines, judge the names it uses on what is left (and the names it defines again, or imports
that the file never uses), close no bracket short, and check syntax last, on the final text.
"""

from __future__ import annotations

from collections.abc import Callable

from diffill.infill.filters.balanced_brackets import keep_brackets_balanced
from diffill.infill.filters.base import Candidate
from diffill.infill.filters.indentation import normalize_indentation
from diffill.infill.filters.names_in_scope import names_in_scope
from diffill.infill.filters.redefinition import no_redefinition
from diffill.infill.filters.repetition import drop_repetition
from diffill.infill.filters.stop_at_span import stop_at_span
from diffill.infill.filters.suffix_overlap import drop_suffix_overlap
from diffill.infill.filters.syntax_guard import syntax_guard
from diffill.infill.filters.unused_import import imports_used

Filter = Callable[[Candidate], Candidate]

FILTERS: tuple[Filter, ...] = (
    stop_at_span,
    drop_repetition,
    normalize_indentation,
    drop_suffix_overlap,
    names_in_scope,
    no_redefinition,
    imports_used,
    keep_brackets_balanced,
    syntax_guard,
)


def postprocess(candidate: Candidate, filters: tuple[Filter, ...] = FILTERS) -> Candidate:
    """Run the filters in order, stopping early once one empties the suggestion."""
    for f in filters:
        candidate = f(candidate)
        if not candidate.text:
            return candidate.empty()
    return candidate
