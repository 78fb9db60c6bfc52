"""Do not duplicate what already follows the cursor.

The model sees the text after the cursor and often writes it again: the closing `)` of `print(|)`, or, for a body,
the statement that already sits below the cursor.

Rule for the rest of the line: when the completion ends with the characters right after the cursor (the closing
brackets, quotes, `;`/`,`/`:` that follow it, or the whole rest of the line), the edit REPLACES them: the text is
kept as written and `replace_end` moves over those characters. So `print(|)` + `"hi")` becomes the edit "replace
`)` with `"hi")`". A match counts only if bracket balance says the completion's closer is the one that closes the
existing construct: `print(|)` + `len(x)` stays a plain insertion (its `)` closes `len(`).

For multi-line completions, trailing lines that equal the document's next non-blank lines are dropped.
"""

from __future__ import annotations

from diffill.infill.filters.base import Candidate
from diffill.infill.text import EOL_RE, is_blank, is_line_end, split_lines

# Characters below the cursor whose lines are compared with a multi-line answer's last lines: far more than the
# lines of any answer, and a fixed cost whatever follows in the document.
BELOW_CHARS = 16_384
_CLOSERS = set(")]}>\"'`;,:") | {" ", "\t"}
_PAIRS = {")": "(", "]": "[", "}": "{"}


def drop_suffix_overlap(c: Candidate) -> Candidate:
    """Replace the duplicated rest of the line instead of inserting it twice; drop lines already below the cursor."""
    if not c.text:
        return c
    if c.span.multiline or EOL_RE.search(c.text):
        return _lines_overlap(c)
    return _line_overlap(c)


def _line_overlap(c: Candidate) -> Candidate:
    """The edit over the characters after the cursor that the answer ends with (only as many as the answer is
    long: a head longer than it cannot end it, and a line of megabytes must not cost its length squared). On a
    line cut around the cursor (`Candidate.line_end`) the answer cannot retype the whole rest of the line."""
    end = max(c.offset, min(c.span.end, c.line_end))
    suffix = c.doc_text[c.offset : end]
    whole = suffix.rstrip() if is_line_end(c.doc_text, end) else None
    want = _balance(suffix)
    best = 0
    for k in range(1, min(len(suffix), len(c.text)) + 1):
        head = suffix[:k]
        if not c.text.endswith(head):
            continue
        if not (set(head) <= _CLOSERS or head == whole):
            continue
        if _balance(c.text + suffix[k:]) == want:
            best = k
    if best == 0:
        return c
    if c.text == suffix[:best]:  # the completion only retypes what is there: nothing to suggest
        return c.empty()
    return c.with_text(c.text, replace_end=c.offset + best)


def _lines_overlap(c: Candidate) -> Candidate:
    body, trail = c.split_trail()
    lines = split_lines(body)
    below = _next_nonblank_lines(c, len(lines))
    for m in range(len(lines), 0, -1):
        tail = [x.strip() for x in lines[-m:]]
        if "" in tail or tail != below[:m]:
            continue
        kept = lines[:-m]
        while kept and is_blank(kept[-1]):
            kept.pop()
        if not kept or all(is_blank(x) for x in kept):
            return c.empty()
        return c.with_text(c.eol.join(kept) + trail)
    return c


def _next_nonblank_lines(c: Candidate, count: int) -> list[str]:
    """Up to `count` stripped non-blank lines after the cursor's line (or after the text following the cursor)."""
    out: list[str] = []
    rest = c.doc_text[c.replace_end : c.replace_end + BELOW_CHARS]
    first, *others = split_lines(rest)
    if others and not is_line_end(c.doc_text, c.replace_end + len(rest)):
        others.pop()  # a line cut short is not the line below
    if not is_blank(first) and not is_blank(c.suffix_on_line):  # `{|}`: the `}` after the cursor comes first
        out.append(first.strip())
    for line in others:
        if len(out) >= count:
            break
        if not is_blank(line):
            out.append(line.strip())
    return out


def _balance(s: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(unmatched closers, unmatched openers) of a string, brackets only."""
    stack: list[str] = []
    closers: list[str] = []
    for ch in s:
        if ch in "([{":
            stack.append(ch)
        elif ch in _PAIRS:
            if stack and stack[-1] == _PAIRS[ch]:
                stack.pop()
            else:
                closers.append(ch)
    return tuple(closers), tuple(stack)
