import dataclasses

import pytest

from diffill.infill.filters.syntax_guard import syntax_guard

# (language, document with cursor, completion, expected text, expected replaced text)
CASES = [
    # valid completions pass untouched
    ("python", "x = <CURSOR>\n", "foo(1)", "foo(1)", ""),
    (
        "python",
        "def f(x):\n    <CURSOR>\n",
        "if x:\n        return 1\n    return 2",
        "if x:\n        return 1\n    return 2",
        "",
    ),
    ("go", "package main\n\nfunc f() int {\n\t<CURSOR>\n}\n", "return 1", "return 1", ""),
    # cut at a line end, longest first
    ("python", "def f(x):\n    <CURSOR>\n", "y = x + 1\n    z = 2\n    return (y", "y = x + 1\n    z = 2", ""),
    ("javascript", "function f(x) {\n  <CURSOR>\n}\n", "const y = x;\n  return y +;", "const y = x;", ""),
    # cut at a token boundary when no whole line is valid
    ("python", "print(<CURSOR>)\n", "a, b +", "a, b", ""),
    ("python", "y = 1\nprint(<CURSOR>)\n", "foo(1)) + [", "foo(1)", ""),
    ("go", "package main\n\nfunc f() int {\n\t<CURSOR>\n}\n", "return 1 +", "return 1", ""),
    ("javascript", "function f(x) {\n  <CURSOR>\n}\n", "const y = x +;\n  return y;", "const y = x", ""),
    # nothing valid: no suggestion
    ("python", "x = 1\n<CURSOR>\n", ")))", "", ""),
    # a Python block the completion opens but leaves empty (tree-sitter accepts it, Python does not)
    ("python", "def f():\n    <CURSOR>\n", "if a:\n    b()", "", ""),
    ("python", "def f():\n    <CURSOR>\n", "x = 1\n    if a:", "x = 1", ""),
    # unfinished construct: a line completion that adds no error is fine
    ("python", "x = foo(<CURSOR>\n", "a, b", "a, b", ""),
    ("javascript", "const x = [<CURSOR>\n", "1, 2", "1, 2", ""),
    ("python", "if a<CURSOR>\n", ":", ":", ""),
    # the span's trail survives shortening
    ("javascript", "function f() {<CURSOR>}\n", "\n    return 1 +\n", "\n    return 1\n", ""),
    # plain text passes through
    (None, "hello <CURSOR>", "))) ((", "))) ((", ""),
]


@pytest.mark.parametrize(("language", "src", "raw", "expected", "expected_replaced"), CASES)
def test_syntax_guard_golden(candidate, language, src, raw, expected, expected_replaced):
    out = syntax_guard(candidate(language, src, raw))
    assert out.text == expected
    assert out.doc_text[out.offset : out.replace_end] == expected_replaced


def test_valid_replacement_keeps_its_range(candidate):
    c = candidate("python", "print(<CURSOR>)\n", '"hi")')
    c = c.with_text(c.text, replace_end=c.offset + 1)
    out = syntax_guard(c)
    assert (out.text, out.replace_end - out.offset) == ('"hi")', 1)


def test_shortened_replacement_falls_back_to_insertion(candidate):
    c = candidate("python", "print(<CURSOR>)\n", '"hi" + (')
    c = c.with_text(c.text + ")", replace_end=c.offset + 1)  # '"hi" + ()' replacing ")" leaves print( open
    out = syntax_guard(c)
    assert out.edited_text() == 'print("hi")\n'
    assert out.replace_end == out.offset


def test_shorter_tries_stop_at_the_time_budget(candidate, monkeypatch):
    """Each shorter try parses the whole document: past the budget the guard gives up (no suggestion) instead of
    holding the answer back on a large file."""
    from diffill.infill.filters import syntax_guard as guard

    c = candidate("python", "def f(x):\n    <CURSOR>\n", "y = x + 1\n    z = 2\n    return (y")
    assert guard.syntax_guard(c).text == "y = x + 1\n    z = 2"
    tries = []
    real = guard._acceptable
    monkeypatch.setattr(
        guard, "_acceptable", lambda cand, allowed, deadline=None: tries.append(1) or real(cand, allowed, deadline)
    )
    monkeypatch.setattr(guard, "TRY_BUDGET_S", -1.0)  # already spent
    assert guard.syntax_guard(c).text == ""
    assert len(tries) == 1  # only the full candidate was parsed


@pytest.mark.parametrize(("language", "src", "raw", "expected", "expected_replaced"), CASES)
def test_incremental_reparse_agrees_with_a_fresh_parse(candidate, language, src, raw, expected, expected_replaced):
    """With the document's tree the guard re-parses incrementally: same answers as the fresh parses."""
    c = candidate(language, src, raw, with_tree=True)
    assert c.tree is not None or language is None
    out = syntax_guard(c)
    assert out.text == expected
    assert out.doc_text[out.offset : out.replace_end] == expected_replaced


def test_incremental_reparse_of_a_replacement_in_a_large_file():
    from diffill.infill.document import SyntaxDocument
    from diffill.infill.filters.base import Candidate
    from diffill.infill.spans import select_span

    body = "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(3000))
    text = body + "print(é, (1, 2))\n" + body
    offset = text.index("(1, 2)")
    doc = SyntaxDocument(text, "python")
    span = select_span(doc, offset)
    good = Candidate.at(text, offset, span, "python", "[3, 4])", tree=doc.tree).with_text("[3, 4])", offset + 7)
    assert syntax_guard(good).text == "[3, 4])"  # replaces "(1, 2))" with no new error
    bad = Candidate.at(text, offset, span, "python", "[3, 4", tree=doc.tree).with_text("[3, 4", offset + 7)
    assert syntax_guard(bad).text != "[3, 4"


@pytest.mark.parametrize(
    ("src", "raw", "whole", "expected"),
    [
        # cut short on purpose and parses: it stands
        ("x = a<CURSOR>\n", " + b", " + b + c", " + b"),
        # cut short where it breaks the parse: its longest prefix that parses ...
        ("x = self<CURSOR>\n", ".read(", ".read(n)", ".read"),
        # ... or, with none, extended along the line it was cut from until it parses again
        ("im<CURSOR>\nx = 1\n", "port", "port os", "port os"),
        ("y = a<CURSOR>\nz = 2\n", "[", "[0] * 2", "[0]"),
        ("x = a<CURSOR>\n", " +", " + b", " + b"),
        ("x = f<CURSOR>\n", "(", "(a) + b", "(a)"),
        # the line it was cut from breaks the parse too: the usual shortening, here nothing
        ("x = a<CURSOR>\n", " +", " + (", ""),
        # a `whole` the text does not start is ignored
        ("x = a<CURSOR>\n", " +", " - b", ""),
    ],
)
def test_an_answer_cut_short_parses_or_is_extended_along_its_whole_line(candidate, src, raw, whole, expected):
    c = candidate("python", src, raw)
    out = syntax_guard(dataclasses.replace(c, whole=whole))
    assert out.text == expected


@pytest.mark.parametrize(
    ("src", "raw", "known", "whole", "expected", "asked"),
    [
        # the answer parses: the rest of its line is never written
        ("x = a<CURSOR>\n", " + b", " + b +", " + b + c", " + b", False),
        # a prefix parses: neither
        ("x = self<CURSOR>\n", ".read(", ".read(n", ".read(n)", ".read", False),
        # nothing does: the guard runs the answer on along its whole line, written now
        ("im<CURSOR>\nx = 1\n", "port", "port o", "port os", "port os", True),
        ("x = f<CURSOR>\n", "(", "(a", "(a) + b", "(a)", True),
    ],
)
def test_the_rest_of_a_line_drafted_only_as_far_as_shown_is_written_when_the_guard_needs_it(
    candidate, src, raw, known, whole, expected, asked
):
    """An answer whose line the engine wrote only past the cut (`whole` its start, `rest_of_whole` the rest):
    the guard asks for the rest only where it runs the answer on along the line, and then judges as if the
    whole line had been there all along."""
    c = candidate("python", src, raw)
    written = []
    lazy = dataclasses.replace(c, whole=known, rest_of_whole=lambda: written.append(whole) or whole)
    assert syntax_guard(lazy).text == expected == syntax_guard(dataclasses.replace(c, whole=whole)).text
    assert written == ([whole] if asked else [])


def test_the_time_a_lines_rest_takes_to_write_is_not_the_parses(candidate):
    """Writing the rest of the line (model passes) does not eat the guard's budget for its parses."""
    import time

    from diffill.infill.filters import syntax_guard as guard

    # a document whose re-parses take long enough for tree-sitter to ask the clock
    c = candidate("python", "im<CURSOR>\n" + "x = [1, 2]\n" * 1_000, "port", with_tree=True)

    def slow() -> str:
        time.sleep(guard.TRY_BUDGET_S * 2)
        return "port os"

    assert syntax_guard(dataclasses.replace(c, whole="port o", rest_of_whole=slow)).text == "port os"


@pytest.mark.parametrize(
    ("src", "raw", "expected"),
    [
        # no prefix of the answer parses, but it completes the word being typed: that much is offered
        ("impo<CURSOR>\nx = 1\n", "rt (", "rt"),
        ("    d<CURSOR>\n", "ef (", "ef"),
        # not in a word, or the word goes on after the cursor, or the answer starts with no word: nothing
        ("x = 1\n<CURSOR>\n", ")))", ""),
        ("impo<CURSOR>\n", " (", ""),
    ],
)
def test_the_word_being_typed_is_completed_when_nothing_longer_parses(candidate, src, raw, expected):
    assert syntax_guard(candidate("python", src, raw)).text == expected


def test_a_document_too_large_to_parse_in_time_is_not_checked(candidate):
    """No tree (its parse ran past the budget): each try would be a fresh parse of the whole file, so the answer
    goes through unchecked instead of costing seconds; a small document without a tree is still checked."""
    from diffill.infill.document import BUDGETED_PARSE_BYTES

    broken = "y = x + 1\n    return (y"
    small = candidate("python", "def f(x):\n    <CURSOR>\n", broken)
    assert syntax_guard(small).text == "y = x + 1"
    filler = "# filler\n" * (BUDGETED_PARSE_BYTES // 9 + 1)
    large = candidate("python", filler + "def f(x):\n    <CURSOR>\n", broken)
    assert large.tree is None and syntax_guard(large).text == broken


def _nodes(tree):
    out, stack = [], [tree.root_node]
    while stack:
        node = stack.pop()
        out.append((node.type, node.start_byte, node.end_byte, tuple(node.start_point), tuple(node.end_point)))
        stack.extend(reversed(node.children))
    return out


@pytest.mark.parametrize("with_bytes", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_a_try_reparsed_from_the_document_tree_equals_a_fresh_parse_of_the_edited_text(seed, with_bytes):
    """Each try edits the document's tree at the cursor (byte offsets and points from one pass over the text before
    it, shared by every try there) and reparses: the tree must be the one a fresh parse of the edited text gives,
    positions included, with wide characters and line breaks before, in and after the edit."""
    import random

    from diffill.infill.document import SyntaxDocument
    from diffill.infill.filters.base import Candidate
    from diffill.infill.filters.syntax_guard import _anchor, _parse_edited, _point_after
    from diffill.infill.languages import parser_for
    from diffill.infill.spans import select_span
    from diffill.infill.text import utf8

    rng = random.Random(seed)
    text = 'def f(x):\n    s = "é日本😀"\n    return (x,\n            1)\n\nclass A:\n    y = [1, 2]\n'
    doc = SyntaxDocument(text, "python")
    for _ in range(20):
        offset = rng.randrange(len(text) + 1)
        end = min(len(text), offset + rng.randrange(6))
        raw = "".join(rng.choice(["x", "(", ")", "\n", "    ", "é", "😀", ", ", ":"]) for _ in range(rng.randrange(5)))
        source, at = (doc.source, doc.byte_offset(offset)) if with_bytes else (None, None)  # as the engine gives
        c = Candidate.at(
            text, offset, select_span(doc, offset), "python", raw, tree=doc.tree, source=source, offset_byte=at
        )
        c = c.with_text(raw, end)
        fresh = parser_for("python").parse(utf8(c.edited_text()))
        assert _nodes(_parse_edited(c)) == _nodes(fresh), (offset, end, raw)
        # the points handed to tree.edit: where the replaced text and the answer end, as a count over the text says
        start, row, column = _anchor(c)
        for written in (text[offset:end], raw):
            upto = utf8(text[:offset] + written)
            expected = (upto.count(b"\n"), len(upto) - (upto.rfind(b"\n") + 1))
            assert start == len(utf8(text[:offset])) and _point_after(row, column, written) == expected


def test_a_check_whose_reparse_runs_out_of_time_fails(candidate, monkeypatch):
    """A re-parse that runs long re-reads far past the edit (a bracket left open in a large file, a line of
    megabytes that is one node): past CHECK_BUDGET_S the answer fails instead of holding the model thread."""
    from diffill.infill.filters import syntax_guard as guard

    src = "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(500)) + "y = <CURSOR>\n"
    c = candidate("python", src, "f1(2)", with_tree=True)
    assert guard.syntax_guard(c).text == "f1(2)"
    monkeypatch.setattr(guard, "CHECK_BUDGET_S", -1.0)  # already spent
    assert guard.syntax_guard(c).text == ""
    assert guard.parse_errors(c, budget_s=-1.0) is None  # (extra_closers then judges nothing)


def test_an_empty_block_is_looked_for_among_the_children_near_the_answer_only():
    """A list of thirty thousand items is one node: its children around the answer are visited, not all."""
    from diffill.infill.document import SyntaxDocument
    from diffill.infill.filters.syntax_guard import _empty_block_opened_in, _named_children_around

    text = "x = [" + ", ".join(str(i) for i in range(30_000)) + "]\nif y:\n    pass\n"
    doc = SyntaxDocument(text, "python")
    items = doc.tree.root_node.named_children[0].named_children[0].named_children[1]
    assert items.type == "list" and items.named_child_count == 30_000
    at = doc.byte_offset(text.index("500, 501"))
    near = _named_children_around(items, at, at + len("500, 501"))
    assert [doc.source[n.start_byte : n.end_byte] for n in near] == [b"500", b"501"]
    assert not _empty_block_opened_in(doc.tree.root_node, at, at + 3)
    empty = SyntaxDocument("x = [1, 2]\nif y:\n# only a comment\n", "python")
    at = empty.byte_offset(empty.text.index("if"))
    assert _empty_block_opened_in(empty.tree.root_node, at, at + 5)


def test_the_guard_judges_a_large_documents_edits_within_its_window():
    """In a document parsed as a window (infill.document.WINDOWED_BYTES), a try is parsed within the window moved
    by the edit: a good answer stands, one that breaks the parse does not, as in a small file."""
    from diffill.infill.document import SyntaxDocument
    from diffill.infill.filters.base import Candidate
    from diffill.infill.spans import select_span

    text = "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(16_000)) + "y = g(\n"
    offset = text.index("return x + 9000") + len("return x + 9000")
    doc = SyntaxDocument(text, "python")
    doc.focus(offset)
    assert doc.window is not None and doc.window[1] < len(doc.source)
    span = select_span(doc, offset)
    source, byte = doc.source, doc.byte_offset(offset)
    good = Candidate.at(text, offset, span, "python", " * 2", tree=doc.tree, source=source, offset_byte=byte)
    assert syntax_guard(good).text == " * 2"
    bad = Candidate.at(text, offset, span, "python", " * (2", tree=doc.tree, source=source, offset_byte=byte)
    assert syntax_guard(bad).text != " * (2"
