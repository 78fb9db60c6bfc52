"""Whether a name is a local of the function around a place: a change to a local (a parameter renamed, a variable
assigned) is a rename of that one variable (infill.edits carries it), not a change to repeat in other functions,
and a same-named local elsewhere is another variable."""

from __future__ import annotations

import re

from ..document import SyntaxDocument
from ..edits import FUNCTION_SCOPES

PARAMETER_LISTS = ("parameters", "parameter_list", "formal_parameters", "parameter")
MAX_HEAD_DEPTH = 4  # declarators around a C function's parameter list
BODIES = frozenset({"block", "compound_statement", "statement_block", "body"})


def bound_locally(doc: SyntaxDocument, offset: int, name: str) -> bool:
    """Whether `name` is a parameter of, or assigned in, the innermost function around `offset`."""
    node = doc.node_at(offset)
    while node is not None and node.type not in FUNCTION_SCOPES:
        node = node.parent
    if node is None:
        return False
    word = rf"(?<![A-Za-z0-9_.]){re.escape(name)}(?![A-Za-z0-9_])"
    for params in _parameter_lists(node):
        if re.search(word, _text(doc, params)):
            return True
    body = _text(doc, node)
    assigned = rf"{word}\s*(?::[^=\n]*)?(?:=(?!=)|:=)|\bfor\s+{word}|\bas\s+{word}|\blocal\s+{word}|\b(?:let|const|var)\s+{word}"
    return re.search(assigned, body) is not None


def _parameter_lists(function) -> list:
    """The parameter lists of a function's head, however deep its declarators hold them (C: `static T *f(...)`)."""
    found, todo = [], [(c, 1) for c in function.children if c.type not in BODIES]
    while todo:
        node, depth = todo.pop()
        if any(kind in node.type for kind in PARAMETER_LISTS):
            found.append(node)
        elif depth < MAX_HEAD_DEPTH:
            todo += [(c, depth + 1) for c in node.children if c.type not in BODIES]
    return found


def _text(doc: SyntaxDocument, node) -> str:
    return doc.source[node.start_byte : node.end_byte].decode("utf-8", "replace")
