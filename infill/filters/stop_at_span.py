"""Cut a raw completion where its span ends.

A diffusion canvas has a fixed length, so the model keeps writing past the natural end of the construct: into the
next line for a line completion, or out of the block (a dedented line) for a body. Everything from that point is
dropped here, before the other filters spend work on it.
"""

from __future__ import annotations

from diffill.infill.filters.base import Candidate
from diffill.infill.text import EOL_RE, indent_width, is_blank, leading_ws, split_lines_keepends


def stop_at_span(c: Candidate) -> Candidate:
    """Keep the first line for "line" spans; for multi-line spans keep at most `max_lines` lines (leading blank
    lines do not count) and stop at the first line indented less than the span's indent. The first non-blank line
    is never treated as a dedent: it starts at the cursor, wherever the model put its indentation."""
    if not c.text:
        return c
    if not c.span.multiline:
        m = EOL_RE.search(c.text)
        return c.with_text(c.text[: m.start()] if m else c.text)

    limit = indent_width(c.span.indent)
    kept: list[str] = []
    counted = 0
    for line in split_lines_keepends(c.text):
        content = line.rstrip("\r\n")
        if counted == 0 and is_blank(content):
            kept.append(line)
            continue
        if counted >= c.span.max_lines:
            break
        if counted > 0 and not is_blank(content) and indent_width(leading_ws(content)) < limit:
            break
        kept.append(line)
        counted += 1
    return c.with_text(_strip_trailing_blank_lines("".join(kept)))


def _strip_trailing_blank_lines(text: str) -> str:
    lines = split_lines_keepends(text)
    while lines and is_blank(lines[-1]):
        lines.pop()
    if lines:
        lines[-1] = lines[-1].rstrip("\r\n")
    return "".join(lines) if any(not is_blank(x) for x in lines) else ""
