"""An import answer imports what the file uses (Python).

Which module a file imports, and which of its names, is a guess unless the code says so: the model (or a line
copied from a file beside) writes `import sys` where the file needs `traceback`, `from .core import _BaseCommand`
where it needs `_MultiCommand`. A name the rest of the document uses (its code, its `__all__`, a docstring) is a
name the file needs; one it never mentions is a guess, so the answer is cut before it (`import `), or dropped when
that name began before the cursor. What the user typed whole before the cursor is theirs, and so is an alias
after it (`import numpy as |`): a name to choose, not a guess of what the file needs; and so is a name they have
typed TYPED_NAME_CHARS of (`from units import conv|`: the answer finishes their word). Modules that import to
re-export (most of their imported names are not used in them: `importlib.machinery`) are left alone, as are
`__future__` and star imports.
"""

from __future__ import annotations

import re
from collections import Counter

from diffill.infill.document import BUDGETED_PARSE_BYTES
from diffill.infill.filters.base import Candidate
from diffill.infill.filters.redefinition import import_names

_WORD = re.compile(r"(?<![\w.])[A-Za-z_]\w*")
_IMPORT_LINE = re.compile(r"^[ \t]*(?:from[ \t]+[\w.]+[ \t]+)?import[ \t][^\n]*", re.M)
_TYPED_WHOLE = re.compile(r"[\w.]+\s")  # an imported module or name typed before the cursor, a space after it
TYPED_NAME_CHARS = 3  # a name begun with this many characters before the cursor is the user's, not a guess
_REEXPORT_SHARE = 0.5  # a module whose imported names go unused at least this often re-exports them
_REEXPORT_MIN = 3  # ... once it imports at least this many


def imports_used(c: Candidate) -> Candidate:
    """The candidate, or its text cut before the first name its import line binds that the document never uses."""
    if c.language != "python" or not c.text.strip() or len(c.doc_text) >= BUDGETED_PARSE_BYTES:
        return c
    before = c.before_cursor
    found = import_names(before + c.text.split("\n", 1)[0])
    if found is None or found[0] == "from __future__":
        return c
    _, bound = found
    rest = c.doc_text[: c.line_start] + c.doc_text[c.line_end :]
    uses = Counter(_WORD.findall(rest))
    imports = _IMPORT_LINE.findall(rest)
    for line in imports:  # a name on an import line is imported there, not used
        uses.subtract(_WORD.findall(line))
    if _reexports(imports, uses):
        return c
    for at, name in bound:
        if _TYPED_WHOLE.match(before, at):
            continue  # the user typed what is imported: its alias (`numpy as np`) is a name to choose, not a guess
        if len(before) - at >= TYPED_NAME_CHARS:
            continue  # the user is typing this name (`from units import conv|`): the answer finishes their word
        if uses[name] <= 0:
            cut = at - len(before)
            return c.with_text(c.text[:cut]) if cut > 0 else c.empty()
    return c


def _reexports(imports: list[str], uses: Counter[str]) -> bool:
    """Whether the document's own import lines mostly bind names it does not use (a module that gathers them for
    others)."""
    imported = [name for line in imports if (f := import_names(line)) for _, name in f[1]]
    unused = sum(uses[name] <= 0 for name in imported)
    return len(imported) >= _REEXPORT_MIN and unused >= _REEXPORT_SHARE * len(imported)
