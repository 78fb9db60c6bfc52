"""The filters in order on raw model output at the cursor, as the engine runs them (CompletionEngine.complete)."""

import dataclasses

import pytest

from diffill.infill.document import SyntaxDocument
from diffill.infill.filters.balanced_brackets import keep_brackets_balanced
from diffill.infill.filters.base import Candidate
from diffill.infill.filters.indentation import normalize_indentation
from diffill.infill.filters.markdown_fence import strip_markdown_fence
from diffill.infill.filters.names_in_scope import names_in_scope
from diffill.infill.filters.repetition import drop_repetition
from diffill.infill.filters.stop_at_span import stop_at_span
from diffill.infill.filters.suffix_overlap import drop_suffix_overlap
from diffill.infill.filters.syntax_guard import syntax_guard
from diffill.infill.postprocess import FILTERS, judged_syntax_guard, postprocess
from diffill.infill.spans import select_span


def complete(doc: SyntaxDocument, offset: int, raw: str) -> Candidate:
    """The edit the filters make of `raw` inserted at `offset`, on the span the engine would choose there."""
    return postprocess(Candidate.at(doc.text, offset, select_span(doc, offset), doc.language, raw, tree=doc.tree))


GO_FUNC = "package main\n\nfunc f(x int) int {\n\t<CURSOR>\n}\n"

# (language, document with cursor, raw model output, expected inserted text, expected replaced text)
CASES = [
    ("python", "print(<CURSOR>)\n", '"hi")\nprint(2)\n', '"hi")', ")"),
    (
        "python",
        "def f(x):\n<CURSOR>\n",
        "    if x:\n        return 1\n    return 2\n\ndef g():\n    pass",
        "    if x:\n        return 1\n    return 2",
        "",
    ),
    ("python", "def f(x):\n    <CURSOR>\n    return x\n", "y = x + 1\n    return x\n", "y = x + 1", ""),
    ("python", "x = 1\n<CURSOR>\n", "y = 2\ny = 2\ny = 2", "y = 2", ""),
    ("python", "x = 1\n<CURSOR>\n", "y = (\nz = 3", "y", ""),
    ("python", "s = 'é'\r\ndef f():\r\n<CURSOR>\r\n", "return 'ü'\nx", "    return 'ü'", ""),
    ("javascript", "function f(x) {<CURSOR>}\n", "\n  return x;\n}\n\nfunction g() {}", "\n    return x;\n", ""),
    ("javascript", "const total = items.reduce(<CURSOR>);\n", "(a, b) => a + b, 0);", "(a, b) => a + b, 0);", ");"),
    ("go", GO_FUNC, "if x > 0 {\n\t\treturn 1\n\t}\n\treturn 0\n}\n", "if x > 0 {\n\t\treturn 1\n\t}\n\treturn 0", ""),
    ("go", GO_FUNC, "return x +\n}", "return x", ""),
    ("lua", "function f(x)\n  <CURSOR>\nend\n", "return x + 1\nend\nprint(f(1))", "return x + 1", ""),
    (None, "Dear <CURSOR>", "Sir,\nthanks", "Sir,", ""),
    # nothing left to suggest
    ("python", "print(<CURSOR>)\n", ")", "", ""),
    ("python", "x = compute(a)\n<CURSOR>\n", "x = compute(a)\nx = compute(a)", "", ""),
]


@pytest.mark.parametrize(("language", "src", "raw", "expected", "expected_replaced"), CASES)
def test_postprocess_golden(cursor_doc, language, src, raw, expected, expected_replaced):
    doc, offset = cursor_doc(language, src)
    text = doc.text
    out = complete(doc, offset, raw)
    assert out.text == expected
    assert text[out.offset : out.replace_end] == expected_replaced
    if expected:
        assert (out.offset, out.replace_end, out.text) == (offset, offset + len(expected_replaced), expected)
    else:
        assert out.text == "" and out.replace_end == out.offset


def test_filter_order():
    """The order the module docstring gives: an answer's Markdown fence off, then the span, repetition before
    indentation, indentation before the comparison with the next lines, names on what is left, syntax last."""
    at = {f: i for i, f in enumerate(FILTERS)}
    assert at[strip_markdown_fence] == 0 and at[stop_at_span] == 1 and at[judged_syntax_guard] == len(FILTERS) - 1
    assert at[drop_repetition] < at[normalize_indentation] < at[drop_suffix_overlap] < at[names_in_scope]
    assert at[names_in_scope] < at[keep_brackets_balanced]


def test_edit_converts_to_lsp_range(cursor_doc):
    doc, offset = cursor_doc("python", "s = '😀'; print(<CURSOR>)\n")
    out = complete(doc, offset, "s)")
    start, end, new_text = out.offset, out.replace_end, out.text
    assert (doc.position_at(start), doc.position_at(end), new_text) == ((0, 16), (0, 17), "s)")
    assert (doc.position_at(start, "utf-8"), doc.position_at(end, "utf-8")) == ((0, 18), (0, 19))


@pytest.mark.parametrize(
    ("src", "raw", "whole", "expected"),
    [
        # the model was sure of `port` only: the run-on along its line parses, and names what the file uses
        ("json.dumps(1)\nim<CURSOR>\n", "port", "port json", "port json"),
        # ... or a module it never uses, which the import judge would have cut: the word being typed instead
        ("json.dumps(1)\nim<CURSOR>\n", "port", "port torch", "port"),
        # ... or a name nothing in scope defines
        ("def f(path):\n    wit<CURSOR>\n", "h", "h tmp_path.open() as fh:", "h"),
        ("def f(path):\n    wit<CURSOR>\n", "h", "h path.open() as fh:", "h path.open() as fh:"),
    ],
)
def test_the_syntax_guards_run_on_is_judged_for_its_names(candidate, src, raw, whole, expected):
    c = dataclasses.replace(candidate("python", src, raw, with_tree=True), whole=whole)
    assert postprocess(c).text == expected
    assert syntax_guard(c).text == whole  # the guard alone runs on
