"""Definition chunks of a source file (tree-sitter): what another file needs to call into this one.

A chunk is a definition's signature (the text of the node up to its body), or an import line, with the
definition's name. Training and the workspace index use the same extraction, so the model sees at completion
time the context shape it was trained on.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..languages import parser_for

# Node types that define something (their `name` field names it) or import something, per language.
DEFINITIONS = {
    "python": ("function_definition", "class_definition"),
    "javascript": ("function_declaration", "class_declaration", "method_definition", "generator_function_declaration"),
    "typescript": (
        "function_declaration",
        "class_declaration",
        "method_definition",
        "interface_declaration",
        "type_alias_declaration",
        "abstract_class_declaration",
        "method_signature",
    ),
    "go": ("function_declaration", "method_declaration", "type_spec"),
    "rust": ("function_item", "struct_item", "enum_item", "trait_item", "function_signature_item"),
    "c": ("function_definition", "struct_specifier"),
    "cpp": ("function_definition", "struct_specifier", "class_specifier"),
    "java": ("class_declaration", "method_declaration", "interface_declaration", "constructor_declaration"),
    "lua": ("function_declaration",),
}
DEFINITIONS["tsx"] = DEFINITIONS["typescript"]
BODIES = {
    "block",
    "body",
    "class_body",
    "statement_block",
    "compound_statement",
    "field_declaration_list",
    "declaration_list",
    "interface_body",
    "enum_body",
    "object_type",
    "constructor_body",
    "enum_variant_list",
}
IMPORTS = {"import_statement", "import_from_statement", "import_declaration", "use_declaration", "preproc_include"}
MAX_SIGNATURE_CHARS = 240


@dataclass(frozen=True)
class Chunk:
    path: str
    name: str
    kind: str  # "definition" or "import"
    line: int
    text: str


def _name(node) -> str:
    n = node.child_by_field_name("name") or node.child_by_field_name("declarator")
    while n is not None and n.type not in (
        "identifier",
        "type_identifier",
        "field_identifier",
        "property_identifier",
        "name",
        "dotted_name",
    ):
        inner = n.child_by_field_name("declarator") or n.child_by_field_name("name")
        if inner is None:
            break
        n = inner
    return n.text.decode("utf-8", "replace") if n is not None else ""


def _signature(node, source: bytes) -> str:
    end = node.end_byte
    for child in node.children:
        if child.type in BODIES:
            end = child.start_byte
            break
    text = source[node.start_byte : end].decode("utf-8", "replace").rstrip().rstrip("{").rstrip()
    return text[:MAX_SIGNATURE_CHARS]


def extract_chunks(text: str, language: str | None, path: str = "", max_chunks: int = 400) -> list[Chunk]:
    """Definitions (with nested methods) and imports of `text`; [] for unknown languages."""
    if language not in DEFINITIONS:
        return []
    source = text.encode("utf-8", "surrogatepass")
    tree = parser_for(language).parse(source)
    kinds = DEFINITIONS[language]
    out: list[Chunk] = []
    stack = [tree.root_node]
    while stack and len(out) < max_chunks:
        node = stack.pop()
        if node.type in kinds:
            name = _name(node)
            if name:
                out.append(Chunk(path, name, "definition", node.start_point[0], _signature(node, source)))
        elif node.type in IMPORTS:
            line = source[node.start_byte : node.end_byte].decode("utf-8", "replace").split("\n")[0]
            out.append(
                Chunk(path, line[:MAX_SIGNATURE_CHARS], "import", node.start_point[0], line[:MAX_SIGNATURE_CHARS])
            )
            continue
        stack.extend(reversed(node.children))
    out.sort(key=lambda c: c.line)
    return out
