"""Registry of the languages the syntax layer parses, backed by the tree-sitter grammar wheels.

Grammars load lazily (importing ten grammar modules costs start-up time the daemon does not need for one file
type) and are cached; parsers are cached per thread because a `tree_sitter.Parser` must not be shared between
threads parsing at the same time.
"""

from __future__ import annotations

import functools
import importlib
import posixpath
import threading
from urllib.parse import unquote, urlsplit

import tree_sitter

# name -> (grammar module, function returning the language pointer)
_GRAMMARS: dict[str, tuple[str, str]] = {
    "python": ("tree_sitter_python", "language"),
    "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "go": ("tree_sitter_go", "language"),
    "rust": ("tree_sitter_rust", "language"),
    "c": ("tree_sitter_c", "language"),
    "cpp": ("tree_sitter_cpp", "language"),
    "java": ("tree_sitter_java", "language"),
    "lua": ("tree_sitter_lua", "language"),
}

LANGUAGES: tuple[str, ...] = tuple(_GRAMMARS)

# LSP languageId -> language name
_LANGUAGE_IDS: dict[str, str] = {
    "python": "python",
    "javascript": "javascript",
    "javascriptreact": "javascript",
    "typescript": "typescript",
    "typescriptreact": "tsx",
    "go": "go",
    "rust": "rust",
    "c": "c",
    "cpp": "cpp",
    "java": "java",
    "lua": "lua",
}

# file extension (lower case, with dot) -> language name
_EXTENSIONS: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".java": "java",
    ".lua": "lua",
}

# Languages whose blocks are delimited by indentation rather than braces/keywords.
INDENT_BLOCK_LANGUAGES = frozenset({"python"})

# Indentation unit when a file shows none (gofmt indents with tabs).
_DEFAULT_INDENT = {"go": "\t"}

_local = threading.local()


def language_for(language_id: str | None, path: str | None = None) -> str | None:
    """The language name for an LSP languageId, falling back to the file extension; None means plain text."""
    if language_id:
        name = _LANGUAGE_IDS.get(language_id.lower())
        if name:
            return name
    if path:
        if "://" in path:
            path = unquote(urlsplit(path).path)
        ext = posixpath.splitext(path.replace("\\", "/"))[1].lower()
        return _EXTENSIONS.get(ext)
    return None


def default_indent(name: str | None) -> str:
    """The indentation unit to assume for a language when the file itself gives no evidence."""
    return _DEFAULT_INDENT.get(name or "", "    ")


@functools.cache
def language(name: str) -> tree_sitter.Language:
    """The tree-sitter Language for a registered name (KeyError for an unknown one)."""
    module_name, func = _GRAMMARS[name]
    module = importlib.import_module(module_name)
    return tree_sitter.Language(getattr(module, func)())


def parser_for(name: str) -> tree_sitter.Parser:
    """A parser for `name`, cached per thread (parsers are not safe to share across concurrent threads)."""
    cache: dict[str, tree_sitter.Parser] | None = getattr(_local, "parsers", None)
    if cache is None:
        cache = _local.parsers = {}
    parser = cache.get(name)
    if parser is None:
        parser = cache[name] = tree_sitter.Parser(language(name))
    return parser


def check_all() -> dict[str, bool | str]:
    """Load every grammar and parse a trivial input: True when it works, else the error text (for `diffill doctor`)."""
    out: dict[str, bool | str] = {}
    for name in LANGUAGES:
        try:
            tree = parser_for(name).parse(b"\n")
            out[name] = True if tree is not None else "parser returned no tree"
        except Exception as exc:  # doctor reports every failure, whatever it is
            out[name] = f"{type(exc).__name__}: {exc}"
    return out
