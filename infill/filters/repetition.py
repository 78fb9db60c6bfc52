"""Drop degenerate repetition, a typical failure of a model that has run out of things to say.

Four checks: a group of 1-3 lines repeated three or more times in a row, a group of 1-3 tokens (holding an
identifier) repeated three or more times in a row, a piece of a word stuttering (`status_code_code_code`,
`rnnnnnnn`: a greedy draft caught in a loop inside one token run), and a completion whose first line copies the line
above the cursor. Repeats are cut before their second copy; a copied line drops the whole suggestion.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable

from diffill.infill.filters.base import Candidate
from diffill.infill.text import is_blank, is_line_start, line_window, split_lines, split_lines_keepends

MIN_REPEATS = 3
MAX_GROUP = 3
_TOKEN_RE = re.compile(r"\w+|[^\w\s]")
_IDENT_RE = re.compile(r"[^\W\d]")
_LONE_WORD_RE = re.compile(r"\w+;?")
# One character eight or more times in a row, or a unit of 2-8 characters three or more times.
_STUTTER_RE = re.compile(r"(\S)\1{7,}|(\S{2,8}?)\2{2,}")
_HEX_OR_RULER = frozenset("0123456789abcdefABCDEF-=*#~_+/.<>^|)]}")  # `0xffffffff`, `# -----`, `)))`: code
MIN_STUTTER = 8  # characters a stutter must span


def _degenerate(line: str) -> bool:
    """Whether a line repeats its tokens or stutters (an answer must not run on along it)."""
    return min(_repeated_tokens_cut(line), _stutter_cut(line)) < len(line)


def _forgetting_degenerate(rest_of_whole: Callable[[], str]) -> Callable[[], str]:
    """`rest_of_whole`, giving "" where the whole line it writes is degenerate."""

    def whole() -> str:
        line = rest_of_whole()
        return "" if _degenerate(line) else line

    return whole


def drop_repetition(c: Candidate) -> Candidate:
    """Cut repeated lines / token groups after their first copy; empty the suggestion if it copies the line above.
    A degenerate line an answer was cut from (`Candidate.whole`) is forgotten: later filters must not run the
    answer on along it (`fr|` -> `omromromrom`)."""
    if c.whole and _degenerate(c.whole):
        c = dataclasses.replace(c, whole="", rest_of_whole=None)
    elif c.rest_of_whole is not None:  # the rest, when it is written, is judged alike
        c = dataclasses.replace(c, rest_of_whole=_forgetting_degenerate(c.rest_of_whole))
    if not c.text.strip():
        return c
    if _copies_line_above(c):
        return c.empty()
    first_indent = c.before_cursor if is_blank(c.before_cursor) else ""
    cut = min(_repeated_lines_cut(c.text, first_indent), _repeated_tokens_cut(c.text), _stutter_cut(c.text))
    if cut >= len(c.text):
        return c
    text = c.text[:cut].rstrip()
    return c.with_text(text if text.strip() else "")


def _repeated_lines_cut(text: str, first_indent: str) -> int:
    """Offset of the second copy of the first line group repeated MIN_REPEATS times, else len(text).

    Lines compare with their indentation (the first line's includes the cursor's column), so `end`/`}` closing
    nested blocks at decreasing depths is not a repeat."""
    lines = split_lines_keepends(text)
    keys = [x.rstrip() for x in lines]
    if keys:
        keys[0] = first_indent + keys[0]
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    for i in range(len(keys)):
        for size in range(1, MAX_GROUP + 1):
            group = keys[i : i + size]
            if len(group) < size or all(is_blank(x) for x in group):
                continue
            if all(keys[i + k * size : i + (k + 1) * size] == group for k in range(1, MIN_REPEATS)):
                return starts[i + size]
    return len(text)


def _repeated_tokens_cut(text: str) -> int:
    """Offset of the second copy of the first token group (with an identifier) repeated MIN_REPEATS times on one
    line, else len(text). Lines are checked separately: `end` closing three nested Lua blocks is no repeat."""
    pos = 0
    for line in split_lines_keepends(text):
        tokens = [(m.group(), m.start()) for m in _TOKEN_RE.finditer(line)]
        words = [t for t, _ in tokens]
        for i in range(len(words)):
            for size in range(1, MAX_GROUP + 1):
                group = words[i : i + size]
                if len(group) < size or not any(_IDENT_RE.match(w) for w in group):
                    continue
                if all(words[i + k * size : i + (k + 1) * size] == group for k in range(1, MIN_REPEATS)):
                    return pos + tokens[i + size][1]
        pos += len(line)
    return len(text)


def _stutter_cut(text: str) -> int:
    """Offset of the second copy of the first unit that stutters, else len(text). Units made only of hex digits
    or ruler characters are left alone: `ffffffff` and `--------` are code, `udioudioudio` is not."""
    for m in _STUTTER_RE.finditer(text):
        unit = m.group(1) or m.group(2)  # the single character first: `rnnnn` keeps `rn`
        if m.end() - m.start() >= MIN_STUTTER and not set(unit) <= _HEX_OR_RULER:
            return m.start() + len(unit)
    return len(text)


def _copies_line_above(c: Candidate) -> bool:
    """Whether the completed cursor line equals the closest non-blank line above it (ignoring indentation).

    Lines without an identifier or made of one word (`}`, `end`, `break;`) legitimately repeat and are exempt.
    """
    first = next((x for x in split_lines(c.text) if not is_blank(x)), "")
    if c.span.kind == "line":
        lines = {(c.before_cursor + first).strip(), (c.before_cursor + first + c.suffix_on_line).strip()}
    else:
        lines = {first.strip()}
    lines = {x for x in lines if x and _IDENT_RE.search(x) and not _LONE_WORD_RE.fullmatch(x)}
    if not lines:
        return False
    pos = c.line_start
    while pos > 0 and is_line_start(c.doc_text, pos):  # (a line cut by its window: the line above is out of reach)
        start, end = line_window(c.doc_text, pos - 1)
        above = c.doc_text[start:end]
        if not is_blank(above):
            return is_line_start(c.doc_text, start) and above.strip() in lines
        pos = start
    return False
