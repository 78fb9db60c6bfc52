import pytest

from diffill.infill.document import count_errors
from diffill.infill.languages import LANGUAGES, check_all, language_for, parser_for

VALID = {
    "python": "def f(x):\n    return x + 1\n",
    "javascript": "function f(x) {\n  return x + 1;\n}\n",
    "typescript": "function f(x: number): number {\n  return x + 1;\n}\n",
    "tsx": "const A = (p: {n: number}) => <div>{p.n}</div>;\n",
    "go": "package main\n\nfunc f(x int) int {\n\treturn x + 1\n}\n",
    "rust": "fn f(x: i32) -> i32 {\n    x + 1\n}\n",
    "c": "int f(int x) {\n    return x + 1;\n}\n",
    "cpp": "template <typename T> T f(T x) {\n    return x + 1;\n}\n",
    "java": "class A {\n    int f(int x) {\n        return x + 1;\n    }\n}\n",
    "lua": "local function f(x)\n  return x + 1\nend\n",
}
BROKEN = {
    "python": "def f(x:\n    return x +\n",
    "javascript": "function f(x {\n  return x + ;\n",
    "typescript": "function f(x: ): number {\n  return x + ;\n",
    "tsx": "const A = () => <div>{</span>;\n",
    "go": "package main\n\nfunc f(x int int {\n\treturn x +\n",
    "rust": "fn f(x: i32 -> i32 {\n    x +\n",
    "c": "int f(int x {\n    return x + ;\n",
    "cpp": "int f(int x {\n    return x + ;\n",
    "java": "class A {\n    int f(int x {\n        return x + ;\n",
    "lua": "local function f(x\n  return x +\n",
}


def test_registry_lists_every_language():
    assert set(LANGUAGES) == set(VALID) == set(BROKEN)


@pytest.mark.parametrize("name", LANGUAGES)
def test_valid_snippet_parses_clean(name):
    assert count_errors(name, VALID[name]) == 0


@pytest.mark.parametrize("name", LANGUAGES)
def test_broken_snippet_has_errors(name):
    assert count_errors(name, BROKEN[name]) > 0


def test_typescript_and_tsx_are_different_grammars():
    # A type assertion `<T>x` is TypeScript-only; in TSX it reads as an unterminated element.
    src = "let y = <number>x;\n"
    assert count_errors("typescript", src) == 0
    assert count_errors("tsx", src) > 0


def test_parsers_are_cached():
    assert parser_for("python") is parser_for("python")
    assert parser_for("python") is not parser_for("lua")


def test_check_all_loads_every_grammar():
    assert check_all() == dict.fromkeys(LANGUAGES, True)


@pytest.mark.parametrize(
    ("language_id", "expected"),
    [
        ("python", "python"),
        ("javascript", "javascript"),
        ("javascriptreact", "javascript"),
        ("typescript", "typescript"),
        ("typescriptreact", "tsx"),
        ("go", "go"),
        ("rust", "rust"),
        ("c", "c"),
        ("cpp", "cpp"),
        ("java", "java"),
        ("lua", "lua"),
        ("plaintext", None),
        ("markdown", None),
        (None, None),
    ],
)
def test_language_ids(language_id, expected):
    assert language_for(language_id, None) == expected


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("a.py", "python"),
        ("a.pyi", "python"),
        ("a.js", "javascript"),
        ("a.mjs", "javascript"),
        ("a.cjs", "javascript"),
        ("a.jsx", "javascript"),
        ("a.ts", "typescript"),
        ("a.mts", "typescript"),
        ("a.cts", "typescript"),
        ("a.tsx", "tsx"),
        ("a.go", "go"),
        ("a.rs", "rust"),
        ("a.c", "c"),
        ("a.h", "c"),
        ("a.cc", "cpp"),
        ("a.cpp", "cpp"),
        ("a.cxx", "cpp"),
        ("a.hpp", "cpp"),
        ("a.hh", "cpp"),
        ("a.java", "java"),
        ("a.lua", "lua"),
        ("/src/pkg/Main.PY", "python"),
        ("file:///home/u/my%20proj/x.rs", "rust"),
        ("C:\\code\\x.go", "go"),
        ("README.md", None),
        ("Makefile", None),
        ("archive.tar.gz", None),
    ],
)
def test_extensions(path, expected):
    assert language_for(None, path) == expected


def test_language_id_wins_over_extension_and_unknown_id_falls_back():
    assert language_for("typescriptreact", "x.js") == "tsx"
    assert language_for("plaintext", "x.py") == "python"
    assert language_for("unknown-lang", "notes.txt") is None
