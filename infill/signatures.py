"""A function's parameter list as the syntax tree reads it, and how the user's edit of it changed it.

A parameter added to (or dropped from) a list is passed on (or dropped) at the calls below the cursor
(infill.call_sites): the tracker here remembers the list as it was before the user began editing it, so that the
change can be told once the list parses again.
"""

from __future__ import annotations

from dataclasses import dataclass

from .document import SyntaxDocument

VARIADIC = frozenset(
    {
        "list_splat_pattern",  # python *args
        "dictionary_splat_pattern",  # python **kwargs
        "rest_pattern",  # javascript ...rest
        "variadic_parameter_declaration",  # go
        "variadic_parameter",  # rust (extern)
        "spread_parameter",  # java
        "spread",  # lua ...
    }
)
WITH_DEFAULT = frozenset({"default_parameter", "typed_default_parameter", "assignment_pattern", "optional_parameter"})
RECEIVERS = frozenset({"self", "cls"})
METHODS = frozenset({"method_definition", "method_declaration"})
CLASS_BODIES = frozenset({"class_body", "declaration_list", "field_declaration_list"})


@dataclass(frozen=True)
class Param:
    name: str
    index: int  # position among the positional parameters; -1 for keyword-only and variadic ones
    has_default: bool
    keyword_only: bool


@dataclass(frozen=True)
class Signature:
    name: str
    start: int  # string offset of the function's node: identifies it while its parameter list is edited
    params_start: int  # string offsets of the parameter list, parentheses included
    params_end: int
    params: tuple[Param, ...]
    receiver: bool  # the first parameter is the object of a method call (python self/cls, rust &self)
    method: bool  # defined in a class (or with a Go receiver): called as self.f / this.f / cls.f
    has_errors: bool  # the list does not parse cleanly (typing in progress)


@dataclass(frozen=True)
class SignatureChange:
    signature: Signature  # as it is now
    original: tuple[Param, ...]  # the parameters before the user began editing the list
    added: tuple[Param, ...]
    removed: tuple[Param, ...]  # as they were, with their old positions


def node_text(doc: SyntaxDocument, node) -> str:
    """The source text of a node."""
    return doc.source[node.start_byte : node.end_byte].decode("utf-8", "replace")


def _first_identifier(node):
    if node.type in ("identifier", "self"):
        return node
    for child in node.named_children:
        found = _first_identifier(child)
        if found is not None:
            return found
    return None


def param_names(node) -> list:
    """Identifier nodes a parameter node declares (Go's `a, b int` declares two)."""
    if node.type in ("identifier", "self_parameter"):
        return [node]
    names = node.children_by_field_name("name")
    if names:
        return [n for n in names if n.type == "identifier"] or [_first_identifier(names[0])]
    for field in ("pattern", "left", "declarator"):
        sub = node.child_by_field_name(field)
        if sub is not None:
            ident = _first_identifier(sub)
            return [ident] if ident is not None else []
    ident = _first_identifier(node)
    return [ident] if ident is not None else []


def _function_of(params_node):
    """(function node, name node) owning a parameter list, or None (lambdas, anonymous functions)."""
    fn = params_node.parent
    if fn is None:
        return None
    name = fn.child_by_field_name("name") or fn.child_by_field_name("declarator")
    if name is not None and name.type == "identifier":
        owner = fn.parent if fn.type == "function_declarator" and fn.parent is not None else fn
        return owner, name
    if name is not None and name.type in ("property_identifier", "field_identifier"):
        return fn, name
    return None


def _is_python_receiver(doc: SyntaxDocument, fn, param) -> bool:
    """`self`/`cls` as the first parameter of a function defined in a class body."""
    if doc.language != "python" or param.type != "identifier" or node_text(doc, param) not in RECEIVERS:
        return False
    return _in_class(fn)


def _in_class(fn) -> bool:
    body = fn.parent
    if body is not None and body.type == "decorated_definition":
        body = body.parent
    if body is None:
        return False
    if body.type == "block":
        return body.parent is not None and body.parent.type == "class_definition"
    return body.type in CLASS_BODIES


def read_signature(doc: SyntaxDocument, params_node) -> Signature | None:
    found = _function_of(params_node)
    if found is None:
        return None
    fn, name_node = found
    params: list[Param] = []
    keyword_only = False
    index = 0
    receiver = False
    for child in params_node.named_children:
        if child.type in ("comment", "positional_separator"):
            continue
        if child.type == "keyword_separator":
            keyword_only = True
            continue
        if child.type == "self_parameter" or (not params and not receiver and _is_python_receiver(doc, fn, child)):
            receiver = True  # obj.f(x): the object is not among the call's arguments
            continue
        variadic = child.type in VARIADIC
        for ident in param_names(child):
            positional = not (variadic or keyword_only)
            params.append(
                Param(node_text(doc, ident), index if positional else -1, child.type in WITH_DEFAULT, keyword_only)
            )
            index += positional
        if child.type == "list_splat_pattern":
            keyword_only = True  # after *args, python parameters are keyword-only
    return Signature(
        name=node_text(doc, name_node),
        start=doc.offset_of_byte(fn.start_byte),
        params_start=doc.offset_of_byte(params_node.start_byte),
        params_end=doc.offset_of_byte(params_node.end_byte),
        params=tuple(params),
        receiver=receiver,
        method=receiver or fn.type in METHODS or _in_class(fn),
        has_errors=params_node.has_error,
    )


def signature_at(doc: SyntaxDocument, offset: int) -> Signature | None:
    """The named function whose parameter list holds `offset` (its parentheses included), or None."""
    node = doc.node_at(offset)
    while node is not None:
        if node.parent is not None and node.parent.child_by_field_name("parameters") == node:
            return read_signature(doc, node)
        node = node.parent
    return None


@dataclass
class _Session:
    start: int
    name: str
    original: tuple[Param, ...]


class SignatureTracker:
    """Remembers a function's parameters as they were before the user began editing its parameter list."""

    def __init__(self) -> None:
        self.session: _Session | None = None

    def before_change(self, doc: SyntaxDocument, at: int) -> Signature | None:
        """Called before a change at string offset `at` is applied: the list as it is now (from the current
        tree, no parse) when the change lands in one and starts a new session, else None."""
        was = signature_at(doc, at)
        if was is None or (self.session is not None and self.session.start == was.start):
            return None
        return was

    def observe(self, was: Signature | None, doc: SyntaxDocument, at: int) -> None:
        """Called after the change: `was` is what `before_change` returned for it."""
        now = signature_at(doc, at) if doc.tree is not None else None
        if now is None:
            self.session = None
            return
        if self.session is not None and self.session.start == now.start:
            return  # still editing the same list: its original stays
        if was is None or was.start != now.start or was.has_errors:
            self.session = None
            return
        self.session = _Session(was.start, was.name, was.params)

    def change_at(self, doc: SyntaxDocument, offset: int) -> SignatureChange | None:
        """Parameters added or removed so far, when the cursor is in the list being edited and it parses."""
        sess = self.session
        if sess is None:
            return None
        now = signature_at(doc, offset)
        if now is None or now.start != sess.start or now.name != sess.name or now.has_errors:
            return None
        old_names = {p.name for p in sess.original}
        new_names = {p.name for p in now.params}
        added = tuple(p for p in now.params if p.name not in old_names)
        removed = tuple(p for p in sess.original if p.name not in new_names)
        if not added and not removed:
            return None
        if len(added) == 1 and len(removed) == 1 and added[0].index == removed[0].index:
            return None  # a renamed parameter: the rename tracker carries it into the body
        return SignatureChange(now, sess.original, added, removed)
