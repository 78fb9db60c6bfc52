"""Inline edits: when the code just changed and nearby code must follow, rewrite that code on the canvas.

The case handled is a rename in progress: the user edits an identifier (a variable, a parameter) and the lines
below still use the old name. The region from the cursor to the last line that uses the old name is put on the
canvas with every other token kept and the old name's slots noised; the model, reading the prompt that holds
the edited line, scores the new and the old name in each slot (engine.edit). The answer is an inline completion
whose range replaces the region (editors show it as a replacement).
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .document import SyntaxDocument

WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MAX_REGION_LINES = 20
MAX_NAME_CHARS = 256  # an identifier being renamed is at most this long (see `_word_at`)
# Node types whose body holds its own local names (any language): a rename inside one stops at its end, so a
# same-named local of the next function is left alone.
FUNCTION_SCOPES = frozenset(
    {
        "function_definition",  # python, c, cpp, lua
        "lambda",
        "function_declaration",  # javascript, typescript, go, lua
        "function_expression",
        "arrow_function",
        "method_definition",
        "generator_function_declaration",
        "method_declaration",  # go, java
        "func_literal",
        "function_item",  # rust
        "closure_expression",
        "constructor_declaration",
        "lambda_expression",
    }
)


def _word_at(text: str, pos: int) -> tuple[int, int]:
    """Span of the identifier touching `pos` (start == end when there is none, nor for a run of word characters
    longer than MAX_NAME_CHARS: a base64 blob is no name, and each keystroke must not walk it)."""
    start = pos
    while start > 0 and pos - start <= MAX_NAME_CHARS and (text[start - 1].isalnum() or text[start - 1] == "_"):
        start -= 1
    end = pos
    while end < len(text) and end - start <= MAX_NAME_CHARS and (text[end].isalnum() or text[end] == "_"):
        end += 1
    if end - start > MAX_NAME_CHARS or (start < end and not (text[start].isalpha() or text[start] == "_")):
        return pos, pos
    return start, end


@dataclass
class RenameSession:
    old: str  # the identifier before the user started editing it
    start: int  # its span in the current text
    end: int


class RenameTracker:
    """Follows keystrokes inside one identifier and remembers what it was called before they began."""

    def __init__(self) -> None:
        self.session: RenameSession | None = None
        self._cursor = -1  # where the previous change ended: typing continues there

    def observe(self, before: str, after: str, p: int) -> None:
        """Called with the document text before and after one change that starts at string offset `p`."""
        old_lo, old_hi = _word_at(before, p)
        new_lo, new_hi = _word_at(after, p)
        deleting = len(after) < len(before)
        # A word being typed from scratch is no rename: a session starts only when the user goes back to an
        # existing name (the edit does not continue the previous one) or deletes part of it.
        continuing = p == self._cursor and not deleting
        self._cursor = p + max(0, len(after) - len(before))
        sess = self.session
        if new_lo == new_hi:  # no identifier touches the edit any more
            if sess is not None and sess.start <= p <= sess.end:
                sess.start = sess.end = p  # the whole name was deleted: the next keystrokes retype it
            else:
                self.session = None
            return
        if sess is not None and sess.start <= p <= sess.end:
            sess.start, sess.end = new_lo, new_hi
        elif old_lo < old_hi and not continuing:
            self.session = RenameSession(before[old_lo:old_hi], new_lo, new_hi)
        else:
            self.session = None

    def rename_at(self, text: str, offset: int) -> tuple[str, str] | None:
        """(old, new) when the cursor sits at the end of an identifier the user renamed."""
        sess = self.session
        if sess is None or not (sess.start <= offset <= sess.end) or sess.end > len(text):
            return None
        new = text[sess.start : sess.end]
        if offset != sess.end or not WORD.fullmatch(new) or new == sess.old or not sess.old:
            return None
        return sess.old, new


@dataclass
class EditRegion:
    start: int  # string offsets of the region to rewrite (starts at the cursor)
    end: int
    occurrences: list[tuple[int, int]]  # spans of the old name inside text[start:end] (absolute offsets)


def scope_end(doc, offset: int) -> int | None:
    """String offset where the innermost function around `offset` ends (None at top level or without a tree)."""
    node = doc.node_at(offset)
    while node is not None and node.type not in FUNCTION_SCOPES:
        node = node.parent
    return None if node is None else doc.offset_of_byte(node.end_byte)


def lines_below(text: str, offset: int, max_lines: int) -> int:
    """String offset of the end of the `max_lines`-th line below `offset` (the text's end if it comes first)."""
    limit = offset
    for _ in range(max_lines):
        nl = text.find("\n", limit + 1)
        if nl < 0:
            return len(text)
        limit = nl
    return limit


def find_region(
    text: str, offset: int, old: str, max_lines: int = MAX_REGION_LINES, limit_at: int | None = None
) -> EditRegion | None:
    """The text from the cursor to the end of the last line (within `max_lines`, and before `limit_at`, the end
    of the enclosing scope) that still uses `old`."""
    limit = lines_below(text, offset, max_lines)
    if limit_at is not None:
        limit = min(limit, limit_at)
    pattern = re.compile(rf"(?<![A-Za-z0-9_]){re.escape(old)}(?![A-Za-z0-9_])")
    occ = [(m.start(), m.end()) for m in pattern.finditer(text, offset, limit)]
    return _to_last_line(text, offset, occ)


def _to_last_line(text: str, start: int, occ: list[tuple[int, int]]) -> EditRegion | None:
    """The region from `start` to the end of the line of the last occurrence, or None without occurrences."""
    if not occ:
        return None
    end = text.find("\n", occ[-1][1])
    return EditRegion(start, len(text) if end < 0 else end, occ)


def is_name(doc: SyntaxDocument, start: int, end: int) -> bool:
    """Whether doc.text[start:end] is a name in the code: one identifier node of the syntax tree (the word of a
    string or a comment is not, nor a keyword). Without a tree nothing is known to be a name."""
    if doc.tree is None or start >= end:
        return False
    lo, hi = doc.byte_offset(start), doc.byte_offset(end)
    node = doc.tree.root_node.descendant_for_byte_range(lo, hi)
    return node is not None and "identifier" in node.type and (node.start_byte, node.end_byte) == (lo, hi)


def is_variable(doc: SyntaxDocument, start: int, end: int) -> bool:
    """Whether doc.text[start:end] is a name in the code that a local variable's rename renames: not a keyword
    argument's name (`f(dataset=dataset)` renames only the value)."""
    if not is_name(doc, start, end):
        return False
    node = doc.tree.root_node.descendant_for_byte_range(doc.byte_offset(start), doc.byte_offset(end))
    parent = node.parent
    return not (parent is not None and parent.type == "keyword_argument" and parent.child_by_field_name("name") == node)


def names_only(doc: SyntaxDocument, region: EditRegion, renamed: tuple[int, int], old: str) -> EditRegion | None:
    """The region cut down to the old name's uses as a name in the code, or None when there are none or the
    new word (`renamed`: its span) is no new name: a word typed in a docstring, or a keyword lengthened (`in` ->
    `info`), renames nothing, and prose that happens to hold the old word keeps it. Nor does the start of a name
    the document has (`func` -> `funct` in a file that uses `functools`): the user is typing that name."""
    text = doc.text
    new = text[renamed[0] : renamed[1]]
    if not is_name(doc, *renamed) or (doc.language == "python" and keyword.iskeyword(new)):
        return None
    named = _to_last_line(text, region.start, [(lo, hi) for lo, hi in region.occurrences if is_variable(doc, lo, hi)])
    if named is None:
        return None
    longer = re.compile(rf"(?<![A-Za-z0-9_]){re.escape(new)}[A-Za-z0-9_]+")  # searched last: the whole document
    if any(m.group(0) != old for m in longer.finditer(text)):
        return None
    return named


def canvas_layout(
    text: str, region: EditRegion, new_ids: list[int], encode
) -> tuple[list[int], list[bool], list[tuple[int, int]]]:
    """(canvas ids, pinned flags, slot spans): the region tokenized piece by piece, each occurrence of the old
    name replaced by len(new_ids) open slots (placeholders, noised by the sampler), everything else pinned."""
    ids: list[int] = []
    pinned: list[bool] = []
    slots: list[tuple[int, int]] = []
    pos = region.start
    for lo, hi in region.occurrences:
        piece = encode(text[pos:lo]) if lo > pos else []
        ids += piece
        pinned += [True] * len(piece)
        slots.append((len(ids), len(ids) + len(new_ids)))
        ids += list(new_ids)  # placeholder values; the sampler starts these slots from noise
        pinned += [False] * len(new_ids)
        pos = hi
    tail = encode(text[pos : region.end]) if region.end > pos else []
    ids += tail
    pinned += [True] * len(tail)
    return ids, pinned, slots


def apply_fill(text: str, region: EditRegion, fills: list[str]) -> str:
    """The region's new text with each occurrence replaced by its filled slot text."""
    out = []
    pos = region.start
    for (lo, hi), fill in zip(region.occurrences, fills, strict=True):
        out.append(text[pos:lo])
        out.append(fill)
        pos = hi
    out.append(text[pos : region.end])
    return "".join(out)
