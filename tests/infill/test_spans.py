import pytest

from diffill.infill.spans import BLOCK_MAX_LINES, LINES_MAX_LINES, select_span

# (language, document with cursor, kind, indent, lead, trail)
CASES = [
    # -- line: rest of a non-empty line
    ("python", "x = foo(<CURSOR>)\n", "line", "", "", ""),
    ("python", "def f():\n    return x<CURSOR>\n", "line", "    ", "", ""),
    ("python", "def f():<CURSOR>\n", "line", "", "", ""),
    ("javascript", "const o = {<CURSOR>};\n", "line", "", "", ""),  # object literal, not a body
    ("go", "package main\n\nfunc f() {\n\tx := <CURSOR>\n}\n", "line", "\t", "", ""),
    (None, "hello wor<CURSOR>ld\n", "line", "", "", ""),
    # -- block: empty line after an opener, or inside an empty body
    ("python", "def f(x):\n<CURSOR>\n", "block", "    ", "", ""),
    ("python", "def f(x):\n    <CURSOR>\n    return x\n", "block", "    ", "", ""),
    ("python", "def f(x):\n\n<CURSOR>\n", "block", "    ", "", ""),  # blank lines in between
    ("python", "def f(x):\r\n<CURSOR>\r\n", "block", "    ", "", ""),
    ("python", "def g():\n  y = 1\n\ndef f(x):\n<CURSOR>", "block", "  ", "", ""),  # 2-space file
    ("python", "def g():\n\treturn 1\n\ndef f(x):\n<CURSOR>", "block", "\t", "", ""),  # tab file
    ("python", "if x:  # why\n<CURSOR>", "block", "    ", "", ""),
    ("python", "    for a in b:\n<CURSOR>\n", "block", "        ", "", ""),
    ("python", "class A:\n    pass\n    <CURSOR>\n\nx = 1\n", "block", "    ", "", ""),
    ("python", 'def f():\n    """Doc."""\n    <CURSOR>\n', "block", "    ", "", ""),
    ("python", "def f():\n    ...\n    <CURSOR>\n", "block", "    ", "", ""),
    ("javascript", "function f(x) {\n  <CURSOR>\n}\n", "block", "  ", "", ""),
    ("javascript", "function f(x) {<CURSOR>}\n", "block", "    ", "\n", "\n"),
    ("javascript", "function g() {\n  return 1;\n}\nfunction f(x) {<CURSOR>}\n", "block", "  ", "\n", "\n"),
    ("javascript", "class A {\n  m() {<CURSOR>}\n}\n", "block", "    ", "\n", "\n  "),
    ("javascript", "if (a) {<CURSOR>\n}\n", "block", "    ", "\n", ""),
    ("go", "package main\n\nfunc f() {\n<CURSOR>}\n", "block", "\t", "", "\n"),
    ("go", "package main\n\nfunc f() {\n<CURSOR>\n}\n", "block", "\t", "", ""),
    ("c", "int f(void) {\n<CURSOR>\n", "block", "    ", "", ""),
    ("lua", "function f(x)\n<CURSOR>\nend\n", "block", "    ", "", ""),
    ("lua", "if x then\n  <CURSOR>\nend\n", "block", "  ", "", ""),
    (None, "Steps:\n<CURSOR>", "block", "    ", "", ""),
    (None, "fn main() {\n<CURSOR>\n}", "block", "    ", "", ""),
    # -- lines: empty line elsewhere
    ("python", "x = 1\n<CURSOR>\ny = 2\n", "lines", "", "", ""),
    ("python", "def f():\n    x = 1\n    <CURSOR>\n", "lines", "    ", "", ""),
    ("python", "def f():\n    x = 1\n<CURSOR>\n    return x\n", "lines", "    ", "", ""),
    ("python", "def f():\n    x = 1\n<CURSOR>\ny = 2\n", "lines", "", "", ""),
    ("python", "# note:\n<CURSOR>", "lines", "", "", ""),  # ":" inside a comment
    ("python", 'x = """\nnote:\n<CURSOR>\n"""\n', "lines", "", "", ""),  # ":" inside a string
    ("python", "def f():\n    pass\n<CURSOR>\n", "lines", "", "", ""),  # column 0: outside the body
    ("javascript", "if (a) {\n  b();\n}\n<CURSOR>\n", "lines", "", "", ""),
    ("javascript", "// see {\n<CURSOR>", "lines", "", "", ""),
    ("go", "package main\n\nfunc f() {\n\tx := 1\n\t<CURSOR>\n}\n", "lines", "\t", "", ""),
    (None, "hello\n<CURSOR>", "lines", "", "", ""),
]


@pytest.mark.parametrize(("language", "src", "kind", "indent", "lead", "trail"), CASES)
def test_span_golden(cursor_doc, language, src, kind, indent, lead, trail):
    doc, offset = cursor_doc(language, src)
    span = select_span(doc, offset)
    assert (span.kind, span.indent, span.lead, span.trail) == (kind, indent, lead, trail)
    assert span.start == offset
    assert span.multiline == (kind != "line")
    assert span.max_lines == {"line": 1, "block": BLOCK_MAX_LINES, "lines": LINES_MAX_LINES}[kind]


@pytest.mark.parametrize(
    ("language", "src", "replaceable"),
    [
        ("python", "x = foo(<CURSOR>)  \n", ")  "),  # line: the rest of the line may be overwritten
        ("python", "x = foo()<CURSOR>\r\ny = 1\n", ""),
        ("python", "def f():\n    <CURSOR>   \n", "   "),  # whitespace after the cursor on an empty line
        ("javascript", "function f() {<CURSOR>}\n", ""),  # the `}` stays; the trail re-creates its line
    ],
)
def test_span_end(cursor_doc, language, src, replaceable):
    doc, offset = cursor_doc(language, src)
    span = select_span(doc, offset)
    assert doc.text[span.start : span.end] == replaceable


def test_block_max_lines_are_bigger_than_lines():
    assert BLOCK_MAX_LINES > LINES_MAX_LINES == 3


def test_a_long_line_is_spanned_to_its_window_around_the_cursor(cursor_doc):
    """The rest of a line of megabytes is not the span: what an edit may replace ends at the line's window."""
    from diffill.infill.text import LINE_REACH

    doc, offset = cursor_doc("javascript", "var a=[" + "1," * 300_000 + "<CURSOR>" + "2," * 300_000 + "];\n")
    span = select_span(doc, offset)
    assert span.kind == "line" and span.end == offset + LINE_REACH


@pytest.mark.parametrize(
    ("src", "inside"),
    [
        ('def f():\n    """Doc <CURSOR>here."""\n', True),
        ("x = r'''raw <CURSOR>'''\n", True),
        ('x = "not <CURSOR>triple"\n', False),
        ("x = 1  # <CURSOR>\n", False),
        ('<CURSOR>"""at its opening quote"""\n', False),
    ],
)
def test_in_docstring(cursor_doc, src, inside):
    from diffill.infill.spans import in_docstring

    doc, offset = cursor_doc("python", src)
    assert in_docstring(doc, offset) is inside
