"""A rest of line closes no bracket that nothing opened.

`prompt = path.read_text(encoding="utf-8"` got `))`: the first `)` ends the call, the second closes nothing, yet the
line parses no worse than it did half typed (one error before, one after), so the syntax guard lets it through. An
answer that closes a bracket its line does not open is cut before that closer when the cut parses no worse: a
closer for a bracket opened on a line above (one argument per line) makes the parse better, and stays. Strings and
comments are skipped; answers of several lines are left alone; a document too large to parse in time is not judged,
nor is an answer whose parses run out of their time (syntax_guard.CHECK_BUDGET_S).
"""

from __future__ import annotations

from diffill.infill.document import BUDGETED_PARSE_BYTES
from diffill.infill.filters.balanced_brackets import CLOSERS, OPENERS, code_brackets
from diffill.infill.filters.base import Candidate
from diffill.infill.filters.syntax_guard import parse_errors
from diffill.infill.text import EOL_RE


def no_extra_closers(c: Candidate) -> Candidate:
    """The candidate, or its text cut before the first bracket it closes that its line does not open, when that
    cut parses no worse (an answer that starts with such a closer leaves nothing)."""
    if not c.text or c.language is None or EOL_RE.search(c.text):
        return c
    if c.tree is None and len(c.doc_text) >= BUDGETED_PARSE_BYTES:
        return c
    before = c.before_cursor
    at = first_unopened_closer(before + c.text, len(before), c.language == "python")
    if at is None:
        return c
    shorter = c.with_text(c.text[: at - len(before)].rstrip())
    cut, whole = parse_errors(shorter), parse_errors(c)
    if cut is not None and whole is not None and cut <= whole:  # (None: a parse that ran out of time judges nothing)
        return shorter
    return c


def first_unopened_closer(line: str, own: int, hash_comments: bool) -> int | None:
    """The position (>= `own`: in the answer) of the first closing bracket of `line` that closes no bracket opened
    before it on the line, or that closes another kind than the last one open; outside strings (and `#` comments,
    with `hash_comments`)."""
    stack: list[str] = []
    for i, ch in code_brackets(line, hash_comments):
        if ch in OPENERS:
            stack.append(ch)
        elif stack and stack[-1] == CLOSERS[ch]:
            stack.pop()
        elif i >= own:
            return i
        else:
            stack.clear()  # the typed text closes a bracket opened above: what it left open is not known
    return None
