"""The syntactic shape of a place: the kinds of the nodes around a piece of text, which must agree between the
place the user changed and a place the change is carried to (`self, ` in a call's arguments is not `self, ` in a
function's parameters; a word in a comment is not the same word in code)."""

from __future__ import annotations

from ..document import SyntaxDocument

DEPTH = 2  # enclosing nodes compared (the replay of the tuning histories chose it: docs/benchmarks.md)


def shape(doc: SyntaxDocument, start: int, end: int) -> tuple[str, ...] | None:
    """The types of the DEPTH nodes that enclose doc.text[start:end] and are larger than it; None where the
    document has no tree there."""
    if doc.tree is None:
        return None
    b0, b1 = doc.byte_offset(start), doc.byte_offset(end)
    node = doc.tree.root_node.descendant_for_byte_range(b0, b1)
    while node is not None and node.start_byte == b0 and node.end_byte == b1 and b0 < b1:
        node = node.parent  # the text itself is a node: its kind changes with the edit, what holds it does not
    kinds: list[str] = []
    while node is not None and len(kinds) < DEPTH:
        kinds.append(node.type)
        node = node.parent
    return tuple(kinds) if kinds else None
