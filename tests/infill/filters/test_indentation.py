import pytest

from diffill.infill.filters.indentation import normalize_indentation

FOUR = "def g():\n    pass\n\n"  # evidence of a 4-space file
TABS = "def g():\n\treturn 1\n\n"

# (language, document with cursor, raw model output, expected text, expected replaced text)
CASES = [
    # cursor at column 0 of a block: the first line gets the body indent, the rest keeps relative depth
    (
        "python",
        "def f(x):\n<CURSOR>\n",
        "if x:\n    return 1\nreturn 2",
        "    if x:\n        return 1\n    return 2",
        "",
    ),
    # cursor already indented, model wrote absolute indentation
    (
        "python",
        "def f(x):\n    <CURSOR>\n",
        "if x:\n        return 1\n    return 2",
        "if x:\n        return 1\n    return 2",
        "",
    ),
    # model indents by 2 in a 4-space file
    (
        "python",
        FOUR + "def f(x):\n    <CURSOR>\n",
        "if x:\n      return 1\n    return 2",
        "if x:\n        return 1\n    return 2",
        "",
    ),
    # model indents with spaces in a tab file
    (
        "python",
        TABS + "def f(x):\n\t<CURSOR>\n",
        "if x:\n        return 1\n    return 2",
        "if x:\n\t\treturn 1\n\treturn 2",
        "",
    ),
    # trailing whitespace, trailing blank lines, a leading blank line
    ("python", "x = 1\n<CURSOR>\n", "a = 1   \nb = 2\t\n\n\n", "a = 1\nb = 2", ""),
    ("python", "def f():\n    <CURSOR>\n", "\n    return 1", "return 1", ""),
    ("python", "x = 1\n<CURSOR>\n", "\n \n\t\n", "", ""),
    # the document's line endings
    ("python", "x = 1\r\n<CURSOR>\r\n", "a = 1\nb = 2", "a = 1\r\nb = 2", ""),
    # braces: the body of `{|}` goes on its own lines, the `}` back to the opener's indent
    ("javascript", "function f(x) {<CURSOR>}\n", "\n  return x;\n", "\n    return x;\n", ""),
    ("javascript", "class A {\n  m() {<CURSOR>}\n}\n", "return 1;", "\n    return 1;\n  ", ""),
    ("javascript", "function f(x) {\n<CURSOR>}\n", "return x;", "    return x;\n", ""),
    (
        "go",
        "package main\n\nfunc f() int {<CURSOR>}\n",
        "if a {\n\treturn 1\n}\nreturn 0",
        "\n\tif a {\n\t\treturn 1\n\t}\n\treturn 0\n",
        "",
    ),
    # spaces written by the model in a tab file (absolute columns: the cursor is at width 4)
    (
        "go",
        "package main\n\nfunc f() int {\n\t<CURSOR>\n}\n",
        "if a {\n        return 1\n    }",
        "if a {\n\t\treturn 1\n\t}",
        "",
    ),
    # a model that ignored the cursor column: the shallower lines set the base, the first line moves deeper
    ("go", "package main\n\nfunc f() int {\n\t<CURSOR>\n}\n", "x := 1\ny := 2", "x := 1\n\ty := 2", ""),
    # single line: trailing spaces dropped only at the end of the line
    ("python", "x = <CURSOR>\n", "1   ", "1", ""),
    ("python", "foo(<CURSOR>)\n", "a, ", "a, ", ""),
]


@pytest.mark.parametrize(("language", "src", "raw", "expected", "expected_replaced"), CASES)
def test_indentation_golden(candidate, language, src, raw, expected, expected_replaced):
    out = normalize_indentation(candidate(language, src, raw))
    assert out.text == expected
    assert out.doc_text[out.offset : out.replace_end] == expected_replaced
