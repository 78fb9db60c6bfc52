"""An answer does not define again what its block already defines (Python).

A line copied from elsewhere in the file, or a model that has read the file, often writes a definition the block
has: `def is_dir(self):` in a class whose `is_dir` is a few lines up, `from .core import _BaseCommand` in a module
that imports it. Nobody wants those twice. Such an answer is cut before the name it defines again (`def `), or
dropped when the name started before the cursor. The block is the run of lines at the cursor's indentation
between the lines indented less (so the two arms of an `if`/`else` or a `try`/`except ImportError` are different
blocks); definitions that come in groups by design are left alone (`@overload`, a property's `.setter`,
`.getter`, `.deleter`, `.register`), as is a name the user typed whole before the cursor.
"""

from __future__ import annotations

import re

from diffill.infill.document import BUDGETED_PARSE_BYTES
from diffill.infill.filters.base import Candidate

_DEF = re.compile(r"^([ \t]*)(?:async[ \t]+)?(?:def|class)[ \t]+([A-Za-z_]\w*)")
_IMPORT = re.compile(r"^([ \t]*)import[ \t]+([\w. \t,]+?)[ \t]*(?:#.*)?$")
_FROM = re.compile(r"^([ \t]*)from[ \t]+([\w.]+)[ \t]+import[ \t]+([\w \t,]+?)[ \t]*(?:#.*)?$")
_GROUPED = re.compile(r"^[ \t]*@\S*\b(?:overload|setter|getter|deleter|register)\b")


def no_redefinition(c: Candidate) -> Candidate:
    """The candidate, or its text cut before the name it defines again (nothing, if that name began before the
    cursor)."""
    if c.language != "python" or not c.text.strip():
        return c
    before = c.before_cursor
    line = before + c.text.split("\n", 1)[0]
    found = _definition(line)
    if found is None:
        return c
    indent, name_at, names = found
    if names[0][0] == "def" and name_at + len(names[0][1]) <= len(before):
        return c  # the user typed this name whole: theirs to choose
    if len(c.doc_text) >= BUDGETED_PARSE_BYTES:  # reading its blocks would cost a keystroke more than it saves
        return c
    lines, here = _block(c.doc_text, c.offset, indent)
    if _above_is_grouped(lines, here):
        return c
    others = [(i, _definition(text)) for i, text in enumerate(lines) if i != here]
    defined = {key for i, d in others if d is not None and d[0] == indent and not _above_is_grouped(lines, i)
               for key in d[2]}  # fmt: skip
    if not all(key in defined for key in names):
        return c
    cut = name_at - len(before)
    return c.with_text(c.text[:cut]) if cut > 0 else c.empty()


def _definition(line: str) -> tuple[str, int, list[tuple[str, str]]] | None:
    """(indentation, where the first name defined starts, the names it binds as (kind, name)) of a `def`,
    `class` or one-line import on `line`; None for anything else."""
    m = _DEF.match(line)
    if m:
        return m.group(1), m.start(2), [("def", m.group(2))]
    m = _FROM.match(line)
    if m:
        names = [("from " + m.group(2), n.strip()) for n in m.group(3).split(",") if n.strip()]
        return (m.group(1), m.start(3), names) if names else None
    m = _IMPORT.match(line)
    if m:
        names = [("import", n.strip()) for n in m.group(2).split(",") if n.strip()]
        return (m.group(1), m.start(2), names) if names else None
    return None


def _indent_of(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _block(text: str, offset: int, indent: str) -> tuple[list[str], int]:
    """The lines of the block the cursor's line is in (see the module's docstring) and the cursor line's index."""
    start = text.rfind("\n", 0, offset) + 1
    end = text.find("\n", offset)
    end = len(text) if end < 0 else end
    width = len(indent)
    above: list[str] = []
    pos = start
    while pos > 0:
        prev = text.rfind("\n", 0, pos - 1) + 1
        line = text[prev : pos - 1]
        if line.strip() and _indent_of(line) < width:
            break
        above.append(line)
        pos = prev
    below: list[str] = []
    pos = end
    while pos < len(text):
        nxt = text.find("\n", pos + 1)
        nxt = len(text) if nxt < 0 else nxt
        line = text[pos + 1 : nxt]
        if line.strip() and _indent_of(line) < width:
            break
        below.append(line)
        pos = nxt
    return above[::-1] + [text[start:end]] + below, len(above)


def _above_is_grouped(lines: list[str], i: int) -> bool:
    """Whether the decorators right above line `i` make it one of a group of same-named definitions."""
    i -= 1
    while i >= 0 and lines[i].lstrip().startswith("@"):
        if _GROUPED.match(lines[i]):
            return True
        i -= 1
    return False
