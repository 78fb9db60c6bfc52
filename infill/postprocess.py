"""Turn a raw model completion into the edit the editor shows, by running the filters in order.

Order matters: take off a chat model's Markdown fence (its fence line would end a rest of line), cut at the span
(later filters should not see text past the construct), drop repetition
before re-indenting (cheaper, and it compares what the model wrote), normalise indentation before comparing with
the document's next lines, judge the names it uses on what is left (and the names it defines again, or imports
that the file never uses), close no bracket short nor one nothing opened, and check syntax last, on the final text
(what the syntax guard adds to an answer cut short is judged for its names again).
"""

from __future__ import annotations

from collections.abc import Callable

from diffill.infill.filters.balanced_brackets import keep_brackets_balanced
from diffill.infill.filters.base import Candidate
from diffill.infill.filters.extra_closers import no_extra_closers
from diffill.infill.filters.indentation import normalize_indentation
from diffill.infill.filters.markdown_fence import strip_markdown_fence
from diffill.infill.filters.names_in_scope import names_in_scope
from diffill.infill.filters.redefinition import no_redefinition
from diffill.infill.filters.repetition import drop_repetition
from diffill.infill.filters.stop_at_span import stop_at_span
from diffill.infill.filters.suffix_overlap import drop_suffix_overlap
from diffill.infill.filters.syntax_guard import syntax_guard
from diffill.infill.filters.unused_import import imports_used

Filter = Callable[[Candidate], Candidate]

NAME_JUDGES: tuple[Filter, ...] = (names_in_scope, no_redefinition, imports_used)


def judged_syntax_guard(candidate: Candidate) -> Candidate:
    """The syntax guard, whose run-on along the line an answer was cut from must pass the name judges too: the
    run-on comes after them, and must not put back what they would cut."""
    return syntax_guard(candidate, NAME_JUDGES)


FILTERS: tuple[Filter, ...] = (
    strip_markdown_fence,
    stop_at_span,
    drop_repetition,
    normalize_indentation,
    drop_suffix_overlap,
    *NAME_JUDGES,
    keep_brackets_balanced,
    no_extra_closers,
    judged_syntax_guard,
)


def postprocess(candidate: Candidate, filters: tuple[Filter, ...] = FILTERS) -> Candidate:
    """Run the filters in order, stopping early once one empties the suggestion."""
    for f in filters:
        candidate = f(candidate)
        if not candidate.text:
            return candidate.empty()
    return candidate
