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
    text, line_start, line_end = c.doc_text, c.line_start, c.line_end
    if _grouped_above(text, line_start):
        return c
    lo, hi = _block(text, line_start, line_end, len(indent))
    head = r"(?:async[ \t]+)?(?:def|class)[ \t]+" if names[0][0] == "def" else r"(?:import|from)[ \t]"
    statement = re.compile(rf"^{re.escape(indent)}{head}[^\n]*", re.M)
    defined = set()
    for part_lo, part_hi in ((lo, line_start), (line_end, hi)):  # the block without the cursor's line
        for m in statement.finditer(text, part_lo, part_hi):
            d = _definition(m.group(0))
            if d is not None and d[0] == indent and not _grouped_above(text, m.start()):
                defined.update(d[2])
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


def import_names(line: str) -> tuple[str, list[tuple[int, str]]] | None:
    """("import" or "from MODULE", [(where each imported clause starts, the name it binds)]) of a one-line
    import on `line` (`import a.b` binds `a`, `x as y` binds `y`); None for anything else."""
    m = _FROM.match(line) or _IMPORT.match(line)
    if m is None:
        return None
    kind, group = ("from " + m.group(2), 3) if m.re is _FROM else ("import", 2)
    bound = []
    for part in re.finditer(r"[^,]+", m.group(group)):
        words = part.group(0).split()
        if words:
            name = words[-1] if len(words) == 3 and words[1] == "as" else words[0].split(".")[0]
            bound.append((m.start(group) + part.start() + len(part.group(0)) - len(part.group(0).lstrip()), name))
    return (kind, bound) if bound else None


def _block(text: str, line_start: int, line_end: int, width: int) -> tuple[int, int]:
    """Where the block of the line at `line_start`..`line_end` starts and ends (see the module's docstring):
    between the nearest non-blank lines above and below indented less than `width` characters (none at the
    module's level)."""
    if width == 0:
        return 0, len(text)
    outer = re.compile(rf"^(?![ \t]{{{width}}})[ \t]*\S", re.M)  # a non-blank line indented less
    above = [m.end() for m in outer.finditer(text, 0, line_start)]
    below = outer.search(text, line_end)
    return (above[-1] if above else 0), (below.start() if below else len(text))


def _grouped_above(text: str, at: int) -> bool:
    """Whether the decorators right above the line starting at `at` make it one of a group of same-named
    definitions."""
    while at > 0:
        prev = text.rfind("\n", 0, at - 1) + 1
        line = text[prev : at - 1]
        if not line.lstrip().startswith("@"):
            return False
        if _GROUPED.match(line):
            return True
        at = prev
    return False
