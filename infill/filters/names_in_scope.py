"""Refuse names that nothing in scope defines (Python).

A small model, or a line copied from elsewhere, often uses a name that reads right but does not exist where the
answer lands: `get_netrc_auth(url)` in a method that has no `url`, `exrule` where only `exdate` is defined. Such an
answer is cut before that name (`get_netrc_auth(`; the syntax guard then trims what no longer parses). A bare name
is in scope when the enclosing function (outermost `def` around the cursor) mentions it, when the code outside
every function does (imports, module and class level definitions), when it is a builtin or a keyword, or when the
answer or its line binds it (an assignment, a parameter, a loop or `with`/`except` target, a keyword argument,
an import), or when it stands alone on its line (what binds it may follow).
Attributes (`x.name`) are not judged, nor the word still being typed at the answer's end; a file with a star
import may define anything, so it is not judged at all, nor is a file too large to read at each keystroke.
"""

from __future__ import annotations

import builtins
import keyword
import re
from functools import lru_cache

from tree_sitter import Node

from diffill.infill.document import BUDGETED_PARSE_BYTES
from diffill.infill.filters.base import Candidate
from diffill.infill.languages import parser_for
from diffill.infill.text import STRING_PATTERN, utf8

_IDENT = re.compile(r"[A-Za-z_]\w*")
_WORD_TAIL = re.compile(r"\w*$")
_WORD_CHAR = re.compile(r"\w")
# strings (to their end on this line) and comments: their words are not names
_NOT_CODE = re.compile(rf"#[^\n]*|{STRING_PATTERN}")
_STAR_IMPORT = re.compile(r"^\s*from\s+\S+\s+import\s+\*", re.M)
_BINDERS = (
    re.compile(r"\b(?:def|class|global|nonlocal|import|as|from)[ \t]+([\w \t,.]+)"),
    re.compile(r"\bfor\s+([^\n]+?)\s+in\b"),
    re.compile(r"\blambda\s*([^:\n]*):"),
    re.compile(r"\bdef\s+\w+\s*\(([^)]*)"),
    re.compile(r"^[ \t]*([\w \t,*()\[\]]+)=(?!=)", re.M),  # `a, b = ...`
    re.compile(r"^[ \t]*([A-Za-z_]\w*)[ \t]*:", re.M),  # `x: int = 0`
    re.compile(r"\b([A-Za-z_]\w*)\s*(?::=|=(?!=))"),  # walrus, keyword arguments
)
_ASSIGNMENT = re.compile(r"[ \t]*([\w \t,*\[\]]+)=(?!=)")  # a statement `a, b = ...` (no call's `f(a=...`)
_ALWAYS = frozenset(dir(builtins)) | frozenset(keyword.kwlist) | frozenset(keyword.softkwlist)
_CODE_NODES = ("string", "string_content", "comment")
_FUNCTION = "function_definition"
_COMPREHENSIONS = ("list_comprehension", "set_comprehension", "dictionary_comprehension", "generator_expression")


def names_in_scope(c: Candidate) -> Candidate:
    """The candidate, or its text cut before the first name it uses that nothing in scope defines."""
    if c.language != "python" or not c.text or len(c.doc_text) >= BUDGETED_PARSE_BYTES:
        return c  # (a large file: reading its scopes, or even searching it for a star import, costs a keystroke)
    if _STAR_IMPORT.search(c.doc_text):
        return c
    tree = c.tree if c.tree is not None else _parse(c.doc_text)
    start = len(utf8(c.doc_text[: c.offset]))
    at = tree.root_node.descendant_for_byte_range(max(0, start - 1), start)
    if at is not None and at.type in _CODE_NODES:  # typing in a string or a comment: its words are prose
        return c
    before = c.before_cursor
    judged_from = len(before) - len(_WORD_TAIL.search(before).group(0))  # the word being typed is judged too
    line = before + c.text  # the answer with its line: what binds a name, what is a string, may start before it
    code = _code(line)
    bound = _bound(code)
    indent = len(c.text) - len(c.text.lstrip(" \t"))  # an answer on a blank line sits where its text starts
    line_byte = start - len(utf8(before))
    column = start - line_byte + indent  # where the answer's text starts on its line
    here = _function_at(c.doc_text, tree, start, column)
    known = _known(c.doc_text, tree, start, column, here)
    targets, value = _assigned(code)
    open_end = bool(_WORD_CHAR.match(_next_char(c)))
    for m in _IDENT.finditer(code, judged_from):
        name = m.group(0)
        if m.end() == len(code) and open_end:
            continue  # the word at the end is still being written
        if not code[: m.start()].strip() and not code[m.end() :].strip():
            continue  # a statement of one new name: what binds it may follow (`NAME = ...`)
        if name in _ALWAYS or _after_dot(code, m.start()):
            continue
        if name in targets and value[0] <= m.start() < value[1] and name not in _bound(code[slice(*value)]):
            if _read_before(c.doc_text, here, line_byte, name):
                continue
        elif name in bound or name in known:
            continue
        return c.with_text(c.text[: max(0, m.start() - len(before))].rstrip(" "), replace_end=c.offset)
    return c


def _code(text: str) -> str:
    """`text` with its strings and comments blanked out (same length): their words are not names."""
    return _NOT_CODE.sub(lambda m: " " * len(m.group(0)), text)


def _bound(code: str) -> set[str]:
    """The names `code` binds (_BINDERS)."""
    return {name for pattern in _BINDERS for m in pattern.finditer(code) for name in _IDENT.findall(m.group(1))}


def _assigned(code: str) -> tuple[set[str], tuple[int, int]]:
    """The names a plain assignment on the line `code` binds (`a, b = ...`), and where its value lies (to a `;`):
    `x = f(x)` reads `x` before it binds it, so there `x` must exist already."""
    m = _ASSIGNMENT.match(code)
    if m is None:
        return set(), (0, 0)
    end = code.find(";", m.end())
    return set(_IDENT.findall(m.group(1))), (m.end(), end if end >= 0 else len(code))


def _read_before(text: str, function: Node | None, line_byte: int, name: str) -> bool:
    """Whether `name` is mentioned in code before the line at `line_byte`: in the enclosing function from its
    start (a name the function assigns is its own local), else anywhere above."""
    data = _bytes(text)
    begin = function.start_byte if function is not None else 0
    return name in _names(_code(data[begin:line_byte].decode("utf-8", "replace")))


def _next_char(c: Candidate) -> str:
    """The character after the answer: in the line it was cut from when it was cut short, else the document's."""
    if len(c.whole) > len(c.text) and c.whole.startswith(c.text):
        return c.whole[len(c.text)]
    return c.doc_text[c.replace_end : c.replace_end + 1]


def _after_dot(code: str, at: int) -> bool:
    return code[:at].rstrip().endswith(".")


@lru_cache(maxsize=4)
def _parse(text: str):
    return parser_for("python").parse(utf8(text))


def _function_at(text: str, tree, byte: int, column: int) -> Node | None:
    """The outermost function an answer at `byte` (starting at `column`) lands in, if any."""
    data = _bytes(text)
    return next((node for node in _module_names(text, tree)[1] if _holds(node, data, byte, column)), None)


def _known(text: str, tree, byte: int, column: int, here: Node | None) -> frozenset[str]:
    """Names an answer at `byte` (starting at `column`) in the outermost function `here` (None: outside every
    function) can see: those of that function, of the code outside all functions, and those the other functions
    use without binding (they must come from the module, so this function sees them too)."""
    outside, functions = _module_names(text, tree)
    data = _bytes(text)
    known = set(outside)
    for node in functions:
        source = _text_of(text, node)
        known |= _names(source) if node is here else _free_names(source)
    if here is not None:
        known -= _confined(here, data, byte, column)
    return frozenset(known)


def _confined(function: Node, data: bytes, byte: int, column: int) -> set[str]:
    """Names that `function` binds only where they stay local, the cursor being elsewhere: the target of an
    `except ... as e:` clause (Python deletes it when the clause ends) or of a comprehension's `for`, when every
    mention of the name in the function lies in such a clause that binds it. `set_exception(exc)` copied from the
    clause `except Exception as exc:` into the clause `except Exception as ex:` names nothing that exists."""
    clauses: dict[str, list[Node]] = {}
    mentions: dict[str, list[int]] = {}
    stack = [function]
    while stack:
        node = stack.pop()
        if node.type == "identifier":
            mentions.setdefault(_word(data, node), []).append(node.start_byte)
        elif node.type == "except_clause":
            for target in _except_targets(node, data):
                clauses.setdefault(target, []).append(node)
        elif node.type in _COMPREHENSIONS:
            for clause in node.children:
                left = clause.child_by_field_name("left") if clause.type == "for_in_clause" else None
                for name in _identifiers(left, data):
                    clauses.setdefault(name, []).append(node)
        stack.extend(node.children)
    confined = set()
    for name, nodes in clauses.items():
        if any(_holds(node, data, byte, column) for node in nodes):
            continue
        if all(any(n.start_byte <= at < n.end_byte for n in nodes) for at in mentions.get(name, ())):
            confined.add(name)
    return confined


def _except_targets(clause: Node, data: bytes) -> list[str]:
    """The names an `except E as name:` clause binds."""
    for child in clause.children:
        if child.type == "as_pattern":
            return [n for t in child.children if t.type == "as_pattern_target" for n in _identifiers(t, data)]
    return []


def _identifiers(node: Node | None, data: bytes) -> list[str]:
    """The identifiers in a target (`x`, `k, v`, `(a, b)`)."""
    if node is None:
        return []
    if node.type == "identifier":
        return [_word(data, node)]
    return [name for child in node.children for name in _identifiers(child, data)]


def _word(data: bytes, node: Node) -> str:
    """A node's text, read from the document's bytes (a tree parsed from chunks keeps no text of its own)."""
    return data[node.start_byte : node.end_byte].decode("utf-8", "replace")


def _holds(node: Node, data: bytes, byte: int, column: int) -> bool:
    """Whether the cursor (at `byte`, an answer starting at `column`) is in `node`, or on a blank line below its
    end indented past its start: the next line of a function's or an except clause's body."""
    if node.start_byte <= byte <= node.end_byte:
        return True
    return node.end_byte < byte and not data[node.end_byte : byte].strip() and column > node.start_point[1]


@lru_cache(maxsize=4)
def _module_names(text: str, tree) -> tuple[frozenset[str], tuple[Node, ...]]:
    """(names used outside every function, the outermost function nodes) of a document."""
    data = _bytes(text)
    functions = tuple(sorted(_outermost_functions(tree.root_node), key=lambda node: node.start_byte))
    pieces, at = [], 0
    for node in functions:
        pieces.append(data[at : node.start_byte])
        name = node.child_by_field_name("name")
        if name is not None:
            pieces.append(b" " + data[name.start_byte : name.end_byte] + b" ")
        at = node.end_byte
    pieces.append(data[at:])
    return _names(b"".join(pieces).decode("utf-8", "replace")), functions


@lru_cache(maxsize=4096)
def _free_names(source: str) -> frozenset[str]:
    """The names a function's source uses but does not bind (its parameters, assignment and loop targets, `as`
    names): a parameter of another method is not in scope here. Cached by the function's text, so a keystroke
    re-reads only the function it changed."""
    code = _code(source)
    return _names(code) - _bound(code)


def _outermost_functions(root: Node) -> list[Node]:
    out, stack = [], [root]
    while stack:
        node = stack.pop()
        if node.type == _FUNCTION:
            out.append(node)
            continue
        stack.extend(node.children)
    return out


def _text_of(text: str, node: Node) -> str:
    return _bytes(text)[node.start_byte : node.end_byte].decode("utf-8", "replace")


@lru_cache(maxsize=4)
def _bytes(text: str) -> bytes:
    return utf8(text)


def _names(text: str) -> frozenset[str]:
    return frozenset(_IDENT.findall(text))
