"""A rest of line does not stop inside a bracket it opened, nor on a comma inside a bracket its line opened.

An answer cut short (at doubt, or a copy that went wrong part way) can end mid-call: `os.path.exists(path` leaves
`(` open, and an editor then flags every line below. The answer may end right after the bracket it opens (`exists(`:
the user types the arguments) but not inside it: it is cut back to just after its last bracket left open, unless
the rest of the line closes it. An answer that ends on a comma inside a bracket opened on its own line
(`socket.socket(af, socktype, proto,`) says the call goes on below, which a rest of line never shows: the comma is
dropped (`..., proto`), the user types what ends it. A comma inside a bracket opened on an earlier line (one argument
per line) is how such lines end, and stays. Strings are skipped; answers of several lines may close their brackets
on a later line and are left alone.
"""

from __future__ import annotations

from collections.abc import Iterator

from diffill.infill.filters.base import Candidate
from diffill.infill.text import EOL_RE

OPENERS = {"(": ")", "[": "]", "{": "}"}
CLOSERS = {v: k for k, v in OPENERS.items()}
_QUOTES = "'\"`"


def keep_brackets_balanced(c: Candidate) -> Candidate:
    """The candidate, or its text cut back to just after the last bracket it opens and nothing closes."""
    if not c.text or EOL_RE.search(c.text):
        return c
    hash_comments = c.language == "python"
    rest = c.doc_text[c.replace_end : c.line_end]
    opened = _left_open(c.text + rest, len(c.text), hash_comments)
    if opened:
        end = opened[-1] + 1
        if end >= len(c.text.rstrip()):
            return c  # it ends right after the bracket it opens
        return c.with_text(c.text[:end], replace_end=c.offset)
    return _no_dangling_comma(c, rest, hash_comments)


def _no_dangling_comma(c: Candidate, rest: str, hash_comments: bool) -> Candidate:
    """The candidate, or its text without the comma it ends on when that comma is inside a bracket opened on the
    cursor's line and nothing follows on the line."""
    body = c.text.rstrip()
    if not body.endswith(",") or rest.strip():
        return c
    before = c.before_cursor
    if not _left_open(before + body, len(before) + len(body), hash_comments):
        return c  # no bracket of this line is open: a comma inside one opened above (an argument per line)
    return c.with_text(body[:-1].rstrip())


def _left_open(line: str, own: int, hash_comments: bool) -> list[int]:
    """Positions (< `own`: in the answer) of the brackets `line` opens and does not close, outside strings (and
    `#` comments, with `hash_comments`)."""
    stack: list[tuple[str, int]] = []
    for i, ch in code_brackets(line, hash_comments):
        if ch in OPENERS:
            stack.append((ch, i))
        elif stack and stack[-1][0] == CLOSERS[ch]:
            stack.pop()
    return [at for _, at in stack if at < own]


def code_brackets(line: str, hash_comments: bool) -> Iterator[tuple[int, str]]:
    """(position, bracket) for each bracket of `line` outside strings (and `#` comments, with `hash_comments`)."""
    quote = ""
    i = 0
    while i < len(line):
        ch = line[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in _QUOTES:
            quote = ch
        elif ch == "#" and hash_comments:  # a comment: nothing after it is code
            return
        elif ch in OPENERS or ch in CLOSERS:
            yield i, ch
        i += 1
