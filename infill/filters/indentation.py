"""Normalise the whitespace of a completion to the document's conventions.

The model's indentation is only trustworthy relative to itself: its first line starts at the cursor, its levels may
be 4 spaces in a 2-space or tab file. Lines are re-based on the span's indent, re-rendered in the file's unit and
line endings, stripped of trailing whitespace and trailing blank lines, and wrapped in the span's lead/trail.
"""

from __future__ import annotations

from math import gcd

from diffill.infill.filters.base import Candidate
from diffill.infill.text import indent_width, is_blank, leading_ws, render_indent, split_lines


def normalize_indentation(c: Candidate) -> Candidate:
    """Re-indent a multi-line completion under the span's indent; tidy a single-line one."""
    if not c.text:
        return c
    if not c.span.multiline:
        # Trailing spaces only matter at the end of the line; before existing text they may be intended.
        return c.with_text(c.text.rstrip() if is_blank(c.suffix_on_line) else c.text)

    lines = [x.rstrip() for x in split_lines(c.text)]
    fresh = is_blank(c.before_cursor)  # does the first line start at a line's own indentation?
    while lines and not lines[0]:
        lines.pop(0)
        fresh = True
    while lines and not lines[-1]:
        lines.pop()
    if not lines:
        return c.empty()

    # Visual width of each line as the model wrote it (None: unknown, the first line glued after code).
    widths: list[int | None] = []
    for i, line in enumerate(lines):
        ws = leading_ws(line)
        if i == 0:
            widths.append(indent_width(c.before_cursor + ws) if fresh else None)
        else:
            widths.append(indent_width(ws) if line else None)
    # Anchor on the first line (it sits at the cursor, so its depth is certain); shallower lines clamp to it.
    known = [w for w in widths if w is not None]
    base = widths[0] if widths[0] is not None else (min(known) if known else 0)
    step = _model_step([w - base for w in known if w > base])
    unit_width = indent_width(c.indent_unit)

    out: list[str] = []
    for i, line in enumerate(lines):
        content = line.lstrip(" \t")
        if not content:
            out.append("")
            continue
        rel = max(0, (widths[i] if widths[i] is not None else base) - base)
        if step and step != unit_width:
            rel = rel * unit_width // step
        indent = c.span.indent + render_indent(rel, c.indent_unit)
        if i == 0 and not c.span.lead:
            before = c.before_cursor if fresh else ""
            indent = indent[len(before) :] if indent.startswith(before) else ""
        out.append(indent + content)

    lead = c.span.lead.replace("\n", c.eol)
    return c.with_text(lead + c.eol.join(out) + c.trail_text)


def _model_step(rel_widths: list[int]) -> int:
    """The model's own indentation step (gcd of its positive relative indents) when it looks like a unit."""
    g = 0
    for w in rel_widths:
        g = gcd(g, w)
    return g if g in (2, 3, 4, 8) else 0
