import pytest

from diffill.infill.filters.stop_at_span import stop_at_span

LONG_BODY = "\n".join(f"    v{i} = {i}" for i in range(20)).lstrip()

# (language, document with cursor, raw model output, expected text, expected replaced text)
CASES = [
    # line: keep up to the first newline (any LSP line break)
    ("python", "x = foo(<CURSOR>)\n", "a, b)\nprint(1)\n", "a, b)", ""),
    ("python", "x = <CURSOR>\r\n", "1\r\ny = 2", "1", ""),
    ("python", "x = <CURSOR>\n", "1\ry = 2", "1", ""),
    ("javascript", "const x = <CURSOR>\n", "compute(1);\nconst y = 2;", "compute(1);", ""),
    (None, "hello <CURSOR>", "world\nfoo", "world", ""),
    # block: stop at the first dedented line
    (
        "python",
        "def f(x):\n    <CURSOR>\n",
        "y = x + 1\n    return y\n\ndef g():\n    pass",
        "y = x + 1\n    return y",
        "",
    ),
    ("python", "def f(x):\n<CURSOR>\n", "return x\nprint(1)", "return x", ""),  # first line is never a dedent
    (
        "python",
        "def f(x):\n    <CURSOR>\n",
        "if x:\n        a()\n    else:\n        b()\nc()",
        "if x:\n        a()\n    else:\n        b()",
        "",
    ),
    ("python", "def f():\n    <CURSOR>\n", LONG_BODY, "\n".join(LONG_BODY.splitlines()[:12]), ""),
    (
        "javascript",
        "function f(x) {\n  <CURSOR>\n}\n",
        "const y = x;\n  return y;\n}\n\nfunction g() {}",
        "const y = x;\n  return y;",
        "",
    ),
    ("javascript", "function f(x) {<CURSOR>}\n", "\n    return x;\n}\n", "\n    return x;", ""),
    ("go", "package main\n\nfunc f() int {\n\t<CURSOR>\n}\n", "return 1\n}\n", "return 1", ""),
    # lines: at most three, leading blank lines not counted, dedent still stops
    ("python", "x = 1\n<CURSOR>\n", "a = 1\nb = 2\nc = 3\nd = 4", "a = 1\nb = 2\nc = 3", ""),
    ("python", "x = 1\n<CURSOR>\n", "\n\na = 1\nb = 2\nc = 3\nd = 4", "\n\na = 1\nb = 2\nc = 3", ""),
    ("python", "def f():\n    x = 1\n    <CURSOR>\n", "y = 2\n    z = 3\nw = 4", "y = 2\n    z = 3", ""),
    ("python", "x = 1\n<CURSOR>\n", "a = 1\r\nb = 2\r\n", "a = 1\r\nb = 2", ""),
    # nothing but whitespace: no suggestion
    ("python", "x = 1\n<CURSOR>\n", "\n\n  \n", "", ""),
    ("python", "x = <CURSOR>\n", "\n1", "", ""),
]


@pytest.mark.parametrize(("language", "src", "raw", "expected", "expected_replaced"), CASES)
def test_stop_at_span_golden(candidate, language, src, raw, expected, expected_replaced):
    out = stop_at_span(candidate(language, src, raw))
    assert out.text == expected
    assert out.doc_text[out.offset : out.replace_end] == expected_replaced
