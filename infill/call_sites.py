"""Inline edits that follow a changed signature: a parameter added to (or dropped from) a function's list is
passed on (or dropped) at the calls of that function below the cursor.

The syntax tree does the work, not the model: which calls name the function, where their arguments sit and
whether the caller has a value of that name to pass on (the caller's own parameter or a local it set before
the call: the "new parameter to pass on" case) are facts of the code. A rule that reads them is instant and
never invents an argument; the model would only add doubt. A call is left alone when it cannot be read with
certainty (`*args`/`**kwargs`, spreads, fewer positional arguments than the slot, no value in scope).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .document import SyntaxDocument, count_errors
from .edits import FUNCTION_SCOPES, lines_below
from .signatures import Signature, SignatureChange, node_text, param_names

MAX_LINES = 80  # how far below the cursor calls are followed: the edit is one inline replacement
CALLS = frozenset({"call", "call_expression", "method_invocation", "function_call"})
ARGUMENT_LISTS = frozenset({"argument_list", "arguments"})
SPLAT_ARGUMENTS = frozenset({"list_splat", "dictionary_splat", "spread_element", "variadic_argument"})
OBJECTS = frozenset({"self", "cls", "this"})  # how a method calls its class's other methods

CALLEE = re.compile(r"^(?:(\w+)\s*(?:\.|->)\s*)?([A-Za-z_]\w*)$")


def _calls_it(doc: SyntaxDocument, call, sig: Signature) -> bool:
    """The call names this function: `f(...)` for a function; `self.f(...)`, `this.f(...)` for a method (and a
    bare `f(...)` where the language allows it, as Java does). `other.f(...)` may be anything: left alone."""
    callee = call.child_by_field_name("function")
    obj = call.child_by_field_name("object")  # java: object.name(...)
    if callee is None:
        callee = call.child_by_field_name("name")
        if callee is None:
            return False
        text = (node_text(doc, obj) + "." if obj is not None else "") + node_text(doc, callee)
    else:
        text = node_text(doc, callee)
    m = CALLEE.match(text.strip())
    if m is None or m.group(2) != sig.name:
        return False
    if m.group(1) is None:
        return not sig.method or doc.language in ("java", "cpp", "c_sharp")
    return sig.method and (m.group(1) in OBJECTS or doc.language == "go")


def _calls(node, lo: int, hi: int, sig: Signature, doc: SyntaxDocument, out: list) -> None:
    if node.end_byte <= lo or node.start_byte >= hi:
        return
    if node.type in CALLS and node.start_byte >= lo and node.end_byte <= hi and _calls_it(doc, node, sig):
        out.append(node)
    for child in node.children:
        _calls(child, lo, hi, sig, doc, out)


def calls_of(doc: SyntaxDocument, sig: Signature, lo: int, hi: int) -> list:
    """Call nodes of the function `sig` inside bytes [lo, hi), in document order."""
    found: list = []
    if doc.tree is not None:
        _calls(doc.tree.root_node, lo, hi, sig, doc, found)
    return found


def _enclosing_function(node):
    node = node.parent
    while node is not None and node.type not in FUNCTION_SCOPES:
        node = node.parent
    return node


def _bound_in_caller(doc: SyntaxDocument, call, name: str) -> bool:
    """`name` appears in the calling function before the call (its parameter, or a local it set or used), not
    only as the keyword of some other call's argument (`g(timeout=5)` binds nothing)."""
    fn = _enclosing_function(call)
    if fn is None:
        return False
    params = fn.child_by_field_name("parameters")
    if params is not None:
        declared = [node_text(doc, i) for c in params.named_children for i in param_names(c) if i is not None]
        if name in declared:
            return True
    body_start = params.end_byte if params is not None else fn.start_byte
    before = doc.source[body_start : call.start_byte].decode("utf-8", "replace")
    for m in re.finditer(rf"(?<![A-Za-z0-9_.]){re.escape(name)}(?![A-Za-z0-9_])", before):
        keyword = re.match(r"\s*=(?!=)", before[m.end() :]) and before[: m.start()].rstrip().endswith(("(", ","))
        if not keyword:
            return True
    return False


@dataclass(frozen=True)
class CallArguments:
    node: object  # the argument list node
    items: list  # its arguments, comments left out
    positional: list
    keywords: dict  # keyword -> argument node (python `name=value`)


def read_arguments(doc: SyntaxDocument, call) -> CallArguments | None:
    """A call's arguments, or None when they cannot be read with certainty (no plain list, splats, spreads)."""
    args = call.child_by_field_name("arguments")
    if args is None or args.type not in ARGUMENT_LISTS:
        return None
    items = [c for c in args.named_children if c.type != "comment"]
    if any(c.type in SPLAT_ARGUMENTS for c in items):
        return None
    positional = [c for c in items if c.type != "keyword_argument"]
    keywords = {node_text(doc, c.child_by_field_name("name")): c for c in items if c.type == "keyword_argument"}
    return CallArguments(args, items, positional, keywords)


def _call_edits(doc: SyntaxDocument, call, change: SignatureChange) -> list[tuple[int, int, str]]:
    """(byte start, byte end, new text) for one call; [] when it stays as it is or cannot be read."""
    read = read_arguments(doc, call)
    if read is None:
        return []
    args, items, positional, keywords = read.node, read.items, read.positional, read.keywords
    python = doc.language == "python"
    edits: list[tuple[int, int, str]] = []
    for p in change.removed:
        if p.name in keywords:
            edits.append(_cut(args, items, keywords[p.name]))
        elif 0 <= p.index < len(positional) and not keywords:
            edits.append(_cut(args, items, positional[p.index]))
    for p in change.added:
        if p.name in keywords or not _bound_in_caller(doc, call, p.name):
            continue
        slot = p.index
        # By keyword where position cannot say it: keyword-only, past the arguments given, or a defaulted
        # parameter among keyword arguments. Appended after the positional ones otherwise.
        if p.index < 0 or slot > len(positional) or (p.has_default and keywords):
            if not python:
                continue
            edits.append(_insert_after(doc, args, items, f"{p.name}={p.name}"))
        elif len(positional) > sum(q.index >= 0 for q in change.original):
            continue  # the call already gives more arguments than the old list took: it fits the new one
        elif slot == len(positional):
            edits.append(_insert_after(doc, args, positional, p.name, before_keywords=items))
        else:
            at = positional[slot].start_byte
            edits.append((at, at, f"{p.name}, "))
    return edits


def _insert_after(doc: SyntaxDocument, args, items: list, text: str, before_keywords: list | None = None):
    """(start, end, text) inserting `text` as the argument after `items` (first when there is none), in the
    call's layout: one argument a line stays one a line, a trailing comma stays last."""
    if items:
        last = items[-1]
        nxt = last.next_sibling
        trailing = nxt is not None and nxt.type == ","
        one_a_line = _line_of(doc, last.start_byte) > _line_of(doc, (last.prev_sibling or args).start_byte)
        if one_a_line:
            line_start = doc.source.rfind(b"\n", 0, last.start_byte) + 1
            indent = doc.source[line_start : last.start_byte].decode("utf-8", "replace")
            if not indent.strip():
                if trailing:
                    return nxt.end_byte, nxt.end_byte, f"\n{indent}{text},"
                return last.end_byte, last.end_byte, f",\n{indent}{text}"
        return last.end_byte, last.end_byte, f", {text}"
    rest = [c for c in (before_keywords or []) if c.type == "keyword_argument"]
    if rest:
        return rest[0].start_byte, rest[0].start_byte, f"{text}, "
    opening = args.children[0].end_byte if args.children else args.start_byte
    return opening, opening, text


def _line_of(doc: SyntaxDocument, byte: int) -> int:
    return doc.source.count(b"\n", 0, byte)


def _cut(args, items: list, item) -> tuple[int, int, str]:
    """Remove one argument with the comma that separates it from its neighbour."""
    k = items.index(item)
    if k + 1 < len(items):
        return item.start_byte, items[k + 1].start_byte, ""
    if k > 0:
        return items[k - 1].end_byte, item.end_byte, ""
    closing = args.children[-1].start_byte if args.children else item.end_byte
    return item.start_byte, closing, ""


def follow_signature(doc: SyntaxDocument, offset: int, change: SignatureChange, max_lines: int = MAX_LINES):
    """(start, end, new text) of the region from the cursor to the last call below it that must follow the
    changed signature, or None when no call needs a change (or the result would add a syntax error)."""
    if doc.tree is None:
        return None
    text = doc.text
    lo, hi = doc.byte_offset(offset), doc.byte_offset(lines_below(text, offset, max_lines))
    calls = calls_of(doc, change.signature, lo, hi)
    edits = sorted(e for call in calls for e in _call_edits(doc, call, change))
    if not edits or any(a[1] > b[0] for a, b in zip(edits, edits[1:], strict=False)):
        return None
    data = doc.source
    pieces, pos = [], lo
    for start, end, new in edits:
        pieces.append(data[pos:start].decode("utf-8", "replace") + new)
        pos = end
    line_end = data.find(b"\n", edits[-1][1])
    end_byte = len(data) if line_end < 0 else line_end
    pieces.append(data[pos:end_byte].decode("utf-8", "replace"))
    replacement = "".join(pieces)
    end = doc.offset_of_byte(end_byte)
    edited = text[:offset] + replacement + text[end:]
    if doc.language and count_errors(doc.language, edited) > count_errors(doc.language, text):
        return None
    return offset, end, replacement
