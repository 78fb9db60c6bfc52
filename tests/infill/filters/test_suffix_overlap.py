"""Rule under test: a completion ending with the characters after the cursor replaces them (replace_end moves over
them) when bracket balance says its copy is the one that closes; lines already below the cursor are dropped."""

import pytest

from diffill.infill.filters.suffix_overlap import drop_suffix_overlap

# (language, document with cursor, completion, expected text, expected replaced text)
CASES = [
    # closing brackets: keep the model's text, replace the existing closers
    ("python", "print(<CURSOR>)\n", '"hi")', '"hi")', ")"),
    ("python", "foo(a, <CURSOR>)\n", "b)", "b)", ")"),
    ("python", "print(<CURSOR>)\n", "len(x))", "len(x))", ")"),
    ("python", "x = [<CURSOR>]\n", "1, 2]", "1, 2]", "]"),
    ("python", 'print("<CURSOR>")\n', 'hello")', 'hello")', '")'),
    ("python", "if check(<CURSOR>):\n    pass\n", "a, b):", "a, b):", "):"),
    ("javascript", "console.log(<CURSOR>);\n", "x);", "x);", ");"),
    ("javascript", "if (<CURSOR>) {\n}\n", "a > 0) {", "a > 0) {", ") {"),
    ("go", "package main\n\nfunc f() {\n\tfmt.Println(<CURSOR>)\n}\n", "x)", "x)", ")"),
    # the whole rest of the line written again (not only closers)
    ("python", "foo(<CURSOR>, b)\n", "a, b)", "a, b)", ", b)"),
    ("python", "y = <CURSOR> + 1\n", "x + 1", "x + 1", " + 1"),
    # the completion's own `)` closes its own `(`: plain insertion
    ("python", "print(<CURSOR>)\n", "len(x)", "len(x)", ""),
    ("javascript", "f(<CURSOR>);\n", "g()", "g()", ""),
    # nothing in common
    ("python", "print(<CURSOR>)\n", '"hi"', '"hi"', ""),
    ("python", "x = <CURSOR>\n", "1", "1", ""),
    # a word character after the cursor is not a closer (cursor mid-identifier)
    ("python", "nam<CURSOR>e = 1\n", "me", "me", ""),
    # only re-typing what is there: no suggestion
    ("python", "print(<CURSOR>)\n", ")", "", ""),
    # multi-line: drop trailing lines equal to the next lines of the document
    ("python", "def f(x):\n    <CURSOR>\n    return x\n", "y = x + 1\n    return x", "y = x + 1", ""),
    ("python", "def f(x):\n    <CURSOR>\n\n    a = 1\n    return a\n", "b = 2\n    a = 1\n    return a", "b = 2", ""),
    ("python", "def f(x):\n    <CURSOR>\n    return x\n", "return x", "", ""),
    ("python", "def f(x):\n    <CURSOR>\n    return x\n", "y = 1\n    z = 2", "y = 1\n    z = 2", ""),
    ("javascript", "function f(x) {\n  <CURSOR>\n  return x;\n}\n", "const y = 1;\n  return x;", "const y = 1;", ""),
    ("python", "x = 1\r\n<CURSOR>\r\ny = 2\r\n", "a = 0\r\ny = 2", "a = 0", ""),
    # `{|}`: the `}` after the cursor is the next line; a body that does not repeat it stays
    ("javascript", "function f() {<CURSOR>}\n", "\n    a();\n", "\n    a();\n", ""),
]


@pytest.mark.parametrize(("language", "src", "raw", "expected", "expected_replaced"), CASES)
def test_suffix_overlap_golden(candidate, language, src, raw, expected, expected_replaced):
    out = drop_suffix_overlap(candidate(language, src, raw))
    assert out.text == expected
    assert out.doc_text[out.offset : out.replace_end] == expected_replaced


@pytest.mark.parametrize(
    ("src", "raw", "after"),
    [
        ("print(<CURSOR>)\n", '"hi")', 'print("hi")\n'),
        ("print(<CURSOR>)\n", "len(x)", "print(len(x))\n"),
        ("foo(<CURSOR>, b)\n", "a, b)", "foo(a, b)\n"),
    ],
)
def test_edited_document_has_one_copy(candidate, src, raw, after):
    assert drop_suffix_overlap(candidate("python", src, raw)).edited_text() == after


def test_a_line_of_megabytes_is_read_around_the_cursor_only(candidate):
    """Every head of the rest of the line was compared with the answer's end: a line of megabytes took minutes
    (its length squared). Only heads as long as the answer can end it, within the line's window."""
    import time

    rest = ", 1" * 200_000  # the cursor's line runs on for 600 kB
    c = candidate("python", "print(<CURSOR>)" + rest + "\n", '"hi")')
    started = time.perf_counter()
    out = drop_suffix_overlap(c)
    assert time.perf_counter() - started < 0.5
    assert out.text == '"hi")' and out.doc_text[out.offset : out.replace_end] == ")"
    # the rest of a line cut by its window is not all there: an answer cannot retype it whole
    c = candidate("python", "f(<CURSOR>" + "a" * 5_000 + "\n", "a" * 5_000)
    assert drop_suffix_overlap(c).text == "a" * 5_000
