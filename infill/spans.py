"""Choose what a completion at the cursor may fill: the rest of the line, a block body, or a few lines.

The span bounds the model's output (how many lines, at what indentation) so that post-processing can cut a
diffusion canvas that ran past the natural end of the construct. Syntax trees refine plain-text heuristics (an
opener inside a comment is not an opener; a body holding only `pass` is still empty); documents without a grammar
fall back to the heuristics alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from diffill.infill.document import SyntaxDocument
from diffill.infill.languages import INDENT_BLOCK_LANGUAGES, default_indent
from diffill.infill.text import (
    LINE_REACH,
    detect_indent_unit,
    indent_width,
    is_blank,
    is_line_end,
    is_line_start,
    leading_ws,
    line_window,
)

BLOCK_MAX_LINES = 12
LINES_MAX_LINES = 3

_LUA_OPENER = re.compile(r"(?:\b(?:then|do|else|repeat)|\bfunction\b[^()]*\([^()]*\)|\{)$")
_PY_EMPTY_BODY_OWNERS = frozenset({"function_definition", "class_definition"})


@dataclass(frozen=True)
class Span:
    """Region a completion may fill at the cursor.

    kind: "line" (rest of the current line), "block" (body after an opener / of an empty body) or "lines" (a few
    whole lines on an empty line). start is the cursor; end bounds what an edit may replace (end == start: pure
    insertion; for "line" it is the line end, so the text after the cursor may be overwritten). indent is the
    indentation of the filled lines. lead/trail wrap a multi-line body when the cursor does not sit on a line of
    its own, e.g. `f() {|}` gets lead "\\n" and trail "\\n" + the opener's indent so the body lands on its own lines.
    """

    kind: str
    start: int
    end: int
    multiline: bool
    indent: str
    max_lines: int
    lead: str = ""
    trail: str = ""


def select_span(doc: SyntaxDocument, offset: int) -> Span:
    """The span for a completion requested at string offset `offset` of `doc`."""
    text = doc.text
    offset = max(0, min(offset, len(text)))
    line_start, line_end = line_window(text, offset)  # (a long line: its window around the cursor)
    before, after = text[line_start:offset], text[offset:line_end]
    unit = detect_indent_unit(text, default_indent(doc.language))

    braces = _empty_braces(doc, offset)
    if braces is not None:
        opener_indent = leading_ws(_line_at(text, line_window(text, braces)[0]))
        body = _body_indent(opener_indent, before, None, unit)
        return Span(
            "block",
            offset,
            line_end if is_blank(after) else offset,
            True,
            body,
            BLOCK_MAX_LINES,
            lead="" if is_blank(before) else "\n",
            trail="" if is_blank(after) else "\n" + opener_indent,
        )

    if not (is_blank(before) and is_blank(after)):
        return Span("line", offset, line_end, False, leading_ws(text[line_start:line_end]), 1)

    prev_start = _prev_nonblank_line(text, line_start)
    next_line = _next_nonblank_line(text, line_end)
    if prev_start is not None:
        prev = _line_at(text, prev_start)
        if _is_opener(doc, prev_start, prev):
            body = _body_indent(leading_ws(prev), before, next_line, unit)
            return Span("block", offset, line_end, True, body, BLOCK_MAX_LINES)
        if _ends_empty_python_body(doc, prev_start, prev, before):
            # prev is the `pass`/`...`/docstring line, already at body depth
            return Span("block", offset, line_end, True, leading_ws(prev), BLOCK_MAX_LINES)

    return Span("lines", offset, line_end, True, _lines_indent(text, before, prev_start, next_line), LINES_MAX_LINES)


# -- helpers ---------------------------------------------------------------------------------------------------------
def _body_indent(opener_indent: str, before: str, next_line: str | None, unit: str) -> str:
    """Body indentation: trust an editor that already indented the cursor, then an existing body below the cursor,
    then one unit deeper than the opener."""
    depth = indent_width(opener_indent)
    if is_blank(before) and indent_width(before) > depth:
        return before
    if next_line is not None and indent_width(leading_ws(next_line)) > depth:
        return leading_ws(next_line)
    return opener_indent + unit


def _line_at(text: str, start: int) -> str:
    """The line starting at `start` (a line start, or a `line_window` cut), as far as its window reaches."""
    return text[start : line_window(text, start)[1]]


def _prev_nonblank_line(text: str, line_start: int) -> int | None:
    """Start offset of the closest non-blank line above the line starting at `line_start`; None also past a line
    cut by its window (`line_window`): what lies beyond is out of reach."""
    pos = line_start
    while pos > 0 and is_line_start(text, pos):
        start, end = line_window(text, pos - 1)
        if not is_blank(text[start:end]):
            return start
        pos = start
    return None


def _next_nonblank_line(text: str, line_end: int) -> str | None:
    """The closest non-blank line below the line ending at `line_end` (None also past a cut, as above)."""
    pos = line_end
    while pos < len(text) and is_line_end(text, pos):
        pos += 2 if text.startswith("\r\n", pos) else 1
        start, end = line_window(text, pos)
        if not is_blank(text[start:end]):
            return text[start:end]
        pos = end
    return None


def in_prose(doc: SyntaxDocument, offset: int) -> bool:
    """Whether the cursor writes prose: in a comment or a string, or at the end of a comment being typed (a line
    comment ends where its text does, so the cursor after it is outside it); answers there are judged harder
    (infill.doubt)."""
    if _in_comment_or_string(doc, offset):
        return True
    node = doc.node_at(offset - 1) if offset > 0 and doc.text[offset - 1] not in "\r\n" else None
    return node is not None and "comment" in node.type and doc.text[max(0, offset - 2) : offset] != "*/"


_TRIPLE_OPENER = re.compile(rb"[rbfuRBFU]{0,2}(?:\"\"\"|''')")


def in_docstring(doc: SyntaxDocument, offset: int) -> bool:
    """Whether `offset` is inside a triple-quoted string, from the syntax tree (False without one): the copies'
    test for prose, which would otherwise count the triple quotes of the whole text before it."""
    byte = doc.byte_offset(offset)
    node = doc.node_at(offset)
    while node is not None and node.type != "string":
        node = node.parent
    if node is None:
        return False
    opener = _TRIPLE_OPENER.match(doc.source, node.start_byte, node.start_byte + 5)
    return opener is not None and opener.end() <= byte < node.end_byte


def _in_comment_or_string(doc: SyntaxDocument, offset: int) -> bool:
    node = doc.node_at(offset)
    while node is not None:
        if "comment" in node.type or "string" in node.type:
            return True
        node = node.parent
    return False


def _is_opener(doc: SyntaxDocument, line_start: int, line: str) -> bool:
    """Whether a line ends with a block opener (":" for Python, "{" or Lua keywords, both for plain text)."""
    stripped = line.rstrip()
    if not stripped:
        return False
    last = line_start + len(stripped) - 1
    node = doc.node_at(last)
    if node is not None and "comment" in node.type:  # `if x:  # why` / `{ // why`: look before the comment
        stripped = doc.text[line_start : max(line_start, doc.offset_of_byte(node.start_byte))].rstrip()
        if not stripped:
            return False
        last = line_start + len(stripped) - 1
    lang = doc.language
    if lang is None:
        return stripped.endswith((":", "{"))
    if lang in INDENT_BLOCK_LANGUAGES:
        ok = stripped.endswith(":")
    elif lang == "lua":
        ok = bool(_LUA_OPENER.search(stripped))
    else:
        ok = stripped.endswith("{")
    return ok and not _in_comment_or_string(doc, last)


def _ends_empty_python_body(doc: SyntaxDocument, line_start: int, line: str, before: str) -> bool:
    """Whether `line` is the last statement of a def/class body holding only `pass`, `...` or a docstring,
    and the cursor (indented by `before`) is still inside that body."""
    if doc.language not in INDENT_BLOCK_LANGUAGES or doc.tree is None:
        return False
    if indent_width(before) < indent_width(leading_ws(line)) or not leading_ws(line):
        return False
    node = doc.node_at(line_start + len(leading_ws(line)))
    while node is not None and node.type != "block":
        node = node.parent
    if node is None or node.parent is None or node.parent.type not in _PY_EMPTY_BODY_OWNERS:
        return False
    statements = [c for c in node.named_children if c.type != "comment"]
    if not statements or doc.offset_of_byte(statements[-1].end_byte) > line_start + len(line):
        return False
    return all(_is_placeholder(s) for s in statements)


def _is_placeholder(node) -> bool:
    if node.type == "pass_statement":
        return True
    if node.type == "expression_statement" and node.named_child_count == 1:
        return node.named_children[0].type in ("ellipsis", "string")
    return False


_BODY_TYPES = ("block", "body", "declaration_list", "variant_list", "enumerator_list", "compound_statement")


def _empty_braces(doc: SyntaxDocument, offset: int) -> int | None:
    """Offset of the "{" when the cursor sits inside an empty `{}` body (only whitespace between the braces)."""
    if doc.language in INDENT_BLOCK_LANGUAGES:
        return None
    text = doc.text
    lo = max(0, offset - LINE_REACH)  # (whitespace is looked through this far: not the whole text each way)
    left = lo + len(text[lo:offset].rstrip()) - 1
    ahead = text[offset : offset + LINE_REACH]
    right = offset + len(ahead) - len(ahead.lstrip())
    if left < 0 or right >= len(text) or text[left] != "{" or text[right] != "}":
        return None
    if doc.tree is None:
        return left
    node = doc.node_at(left)
    if node is None or _in_comment_or_string(doc, left):
        return None
    parent = node.parent if node.type == "{" else node
    if parent is None or parent.type == "ERROR" or parent.type.endswith(_BODY_TYPES):
        return left
    return None


def _lines_indent(text: str, before: str, prev_start: int | None, next_line: str | None) -> str:
    """Indentation for free lines: the cursor's own whitespace when the editor indented it, else the shallower of
    the surrounding lines (a blank line between a body and a dedented statement belongs to the outer level)."""
    if before:
        return before
    if next_line is None:
        return ""
    candidates = [leading_ws(next_line)]
    if prev_start is not None:
        candidates.append(leading_ws(_line_at(text, prev_start)))
    return min(candidates, key=indent_width)
