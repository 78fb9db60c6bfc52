import random

import pytest

from diffill.infill.document import SyntaxDocument, count_errors
from diffill.infill.languages import parser_for
from diffill.infill.text import utf8

MIXED = 'x = "é"\n# 日本 😀 tail\r\ny = 1\rz = 2\n'
# LSP lines:   0: x = "é"   1: # 日本 😀 tail   2: y = 1   3: z = 2   4: ""


def _dump(node) -> list:
    """Structure plus every node's byte range and points: catches a wrong tree.edit that an s-expression misses."""
    return [node.type, node.start_byte, node.end_byte, tuple(node.start_point), tuple(node.end_point)] + [
        _dump(c) for c in node.children
    ]


def _assert_matches_fresh(doc: SyntaxDocument) -> None:
    fresh = parser_for(doc.language).parse(utf8(doc.text))
    assert str(doc.tree.root_node) == str(fresh.root_node)
    assert _dump(doc.tree.root_node) == _dump(fresh.root_node)


def test_lines_split_on_lf_crlf_and_cr():
    doc = SyntaxDocument(MIXED, None)
    assert doc.line_count == 5
    assert [doc.line_text(i) for i in range(5)] == ['x = "é"', "# 日本 😀 tail", "y = 1", "z = 2", ""]


@pytest.mark.parametrize(
    ("encoding", "char"),
    [("utf-16", 7), ("utf-8", 13), ("utf-32", 6)],  # "# 日本 😀" then " tail": 😀 is 2 UTF-16 units, 4 UTF-8 bytes
)
def test_offset_and_position_after_emoji(encoding, char):
    doc = SyntaxDocument(MIXED, None)
    offset = doc.offset_at(1, char, encoding)
    assert MIXED[offset:].startswith(" tail")
    assert doc.position_at(offset, encoding) == (1, char)


@pytest.mark.parametrize(
    ("encoding", "char", "rest"),
    [("utf-16", 6, '"'), ("utf-8", 7, '"'), ("utf-8", 6, 'é"'), ("utf-32", 5, 'é"')],
)
def test_offset_after_accented_char(encoding, char, rest):
    doc = SyntaxDocument(MIXED, None)
    assert MIXED[doc.offset_at(0, char, encoding) :].startswith(rest)


def test_position_inside_a_character_rounds_down():
    doc = SyntaxDocument("a😀b", None)
    assert doc.offset_at(0, 2, "utf-16") == 1  # between the surrogates
    assert doc.offset_at(0, 3, "utf-8") == 1  # inside the 4 bytes
    assert doc.offset_at(0, 3, "utf-16") == 2


def test_out_of_range_positions_clamp():
    doc = SyntaxDocument(MIXED, None)
    assert doc.offset_at(0, 99) == MIXED.index("\n")  # line end, before the terminator
    assert doc.offset_at(1, 99) == MIXED.index("\r\n")
    assert doc.offset_at(2, 99) == MIXED.index("\rz")
    assert doc.offset_at(99, 0) == len(MIXED)
    assert doc.offset_at(-1, 5) == 0
    assert doc.offset_at(0, -3) == 0
    assert doc.position_at(10_000) == (4, 0)
    assert doc.position_at(-4) == (0, 0)


def test_position_inside_crlf_is_line_end():
    doc = SyntaxDocument("ab\r\ncd", None)
    assert doc.position_at(3) == (0, 2)
    assert doc.position_at(4) == (1, 0)


def test_positions_roundtrip_every_offset():
    doc = SyntaxDocument(MIXED, None)
    for offset in range(len(MIXED) + 1):
        if MIXED[offset - 1 : offset + 1] == "\r\n":
            continue  # inside a CRLF: not a position of its own
        for enc in ("utf-8", "utf-16", "utf-32"):
            line, char = doc.position_at(offset, enc)
            assert doc.offset_at(line, char, enc) == offset, (offset, enc)


def test_apply_change_utf16_after_emoji():
    src = 'def f():\n    s = "😀é"\n    return s\n'
    doc = SyntaxDocument(src, "python")
    # Insert before the closing quote: "    s = \"" is 9 units, 😀 2 units, é 1 unit -> character 12.
    doc.apply_change(1, 12, 1, 12, "日本", "utf-16")
    assert doc.text == 'def f():\n    s = "😀é日本"\n    return s\n'
    _assert_matches_fresh(doc)
    assert doc.error_count() == 0


def test_apply_change_utf8_replaces_multiline_range():
    src = 'def f():\n    s = "😀é"\n    return s\n'
    doc = SyntaxDocument(src, "python")
    # From after the emoji (byte 9 + 4 = 13 on line 1) to line 2 character 11 ("    return " is 11 bytes).
    doc.apply_change(1, 13, 2, 11, '"\n    return len(', "utf-8")
    assert doc.text == 'def f():\n    s = "😀"\n    return len(s\n'
    _assert_matches_fresh(doc)
    assert doc.error_count() > 0
    doc.apply_change(2, 16, 2, 16, ")", "utf-8")
    assert doc.text.endswith("return len(s)\n")
    assert doc.error_count() == 0


def test_apply_change_on_crlf_document():
    doc = SyntaxDocument("a = 1\r\nb = 2\r\n", "python")
    doc.apply_change(1, 0, 1, 0, "c = 3\r\n")
    assert doc.text == "a = 1\r\nc = 3\r\nb = 2\r\n"
    assert doc.line_text(2) == "b = 2"
    _assert_matches_fresh(doc)


def test_replace_all_and_plain_text():
    doc = SyntaxDocument("x = (", "python")
    assert doc.error_count() > 0
    doc.replace_all("x = 1\n")
    assert doc.error_count() == 0
    plain = SyntaxDocument("hello\nworld", None)
    assert plain.tree is None and plain.error_count() == 0
    plain.apply_change(1, 0, 1, 5, "there")
    assert plain.text == "hello\nthere"


def test_count_errors_counts_error_and_missing_nodes():
    assert count_errors("python", "x = 1\n") == 0
    assert count_errors("lua", "x = (1\n") == 1  # one MISSING ")"
    assert count_errors("python", "x = (1\ny = [2\n") >= 1
    assert count_errors(None, "x = (") == 0


def test_byte_offsets_map_both_ways():
    doc = SyntaxDocument("é😀x", None)
    assert [doc.byte_offset(i) for i in range(4)] == [0, 2, 6, 7]
    assert [doc.offset_of_byte(b) for b in (0, 2, 6, 7)] == [0, 1, 2, 3]


SOURCES = {
    "python": 'def f(x):\r\n    s = "é日本😀"\n    return x + 1\r\n\nclass A:\n    def g(self):\n        pass\n',
    "javascript": 'function f(x) {\r\n  const s = "é日本😀";\n  return x + 1;\r\n}\n\nclass A { g() { return [1, 2]; } }\n',
}
PIECES = ["x", "(", ")", "{", "}", "\n", "\r\n", "\r", "😀", "é", "日本", "  ", ":", ";", '"', "return 1", "if (a) "]


@pytest.mark.parametrize("language", sorted(SOURCES))
@pytest.mark.parametrize("seed", range(6))
def test_random_edits_keep_incremental_tree_equal_to_fresh_parse(language, seed):
    rnd = random.Random(seed)
    reference = SOURCES[language]
    doc = SyntaxDocument(reference, language)
    encodings = ("utf-8", "utf-16", "utf-32")
    for _ in range(40):
        start = rnd.randrange(len(reference) + 1)
        end = min(len(reference), start + rnd.randrange(5))
        new = "".join(rnd.choice(PIECES) for _ in range(rnd.randrange(3)))
        # A CRLF split by the range would change the line structure under the positions; keep offsets valid.
        if reference[start - 1 : start + 1] == "\r\n" or reference[end - 1 : end + 1] == "\r\n":
            continue
        enc = rnd.choice(encodings)
        (sl, sc), (el, ec) = doc.position_at(start, enc), doc.position_at(end, enc)
        old_tree = doc.tree
        doc.apply_change(sl, sc, el, ec, new, enc)
        reference = reference[:start] + new + reference[end:]
        assert doc.text == reference
        _assert_matches_fresh(doc)
        _assert_shifted_points(old_tree, doc.source, doc.byte_offset(start + len(new)))


def _assert_shifted_points(edited, data: bytes, after: int) -> None:
    """The old tree after `tree.edit` must place every token past the edit at its true (row, byte column): the
    reparse recomputes positions itself, so only this shows whether the points given to `edit` were right."""
    stack = [edited.root_node]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        if node.child_count == 0 and node.start_byte > after:
            row = data.count(b"\n", 0, node.start_byte)
            col = node.start_byte - (data.rfind(b"\n", 0, node.start_byte) + 1)
            assert tuple(node.start_point) == (row, col), node


def test_line_starts_follow_edits_as_a_fresh_count_would():
    """The cached line starts are updated around each edit (not recounted over the document): random edits with
    every kind of line end, CRLFs split and joined, agree with a fresh count."""
    from diffill.infill.text import line_starts

    rng = random.Random(7)
    pieces = ["a", "bc", "\n", "\r", "\r\n", " ", "\u00e9", "\U0001f600"]
    doc = SyntaxDocument("".join(rng.choice(pieces) for _ in range(200)), None)
    for _ in range(400):
        doc.line_starts  # noqa: B018 - cached, so the next edit updates it
        a, b = sorted(rng.randrange(len(doc.text) + 1) for _ in range(2))
        doc.replace_range(a, b, "".join(rng.choice(pieces) for _ in range(rng.randrange(4))))
        assert list(doc.line_starts) == line_starts(doc.text)


def test_byte_offsets_stay_right_through_edits_as_a_fresh_count_would_give_them():
    """Byte and string offsets convert through the line index that each edit keeps up to date (not over the whole
    text): after random edits with every kind of line end and character width, every offset maps as a fresh
    encoding of the text says, both ways, and a byte inside a character maps to the character before it."""
    from diffill.infill.text import utf8

    rng = random.Random(11)
    pieces = ["a", "bc", "\n", "\r", "\r\n", " ", "\u00e9", "\u65e5", "\U0001f600"]
    doc = SyntaxDocument("".join(rng.choice(pieces) for _ in range(120)), None)
    for step in range(300):
        a, b = sorted(rng.randrange(len(doc.text) + 1) for _ in range(2))
        doc.replace_range(a, b, "".join(rng.choice(pieces) for _ in range(rng.randrange(4))))
        if step % 10:
            continue
        assert doc.source == utf8(doc.text)
        for i in range(len(doc.text) + 1):
            byte = len(utf8(doc.text[:i]))
            assert doc.byte_offset(i) == byte
            assert doc.offset_of_byte(byte) == i
            if i < len(doc.text) and len(utf8(doc.text[i])) > 1:
                assert doc.offset_of_byte(byte + 1) == i  # inside the character


@pytest.mark.parametrize(
    "text", ["", "\r", "a\r", "a\r\nb\rc\nd", "\n\n\r\r\n", "é\r日本\r\n😀\nx", "\ud800z\r\n\udfff", "no end"]
)
def test_the_line_index_read_off_the_bytes_matches_a_count_over_the_text(text):
    from diffill.infill.text import line_starts, utf8

    doc = SyntaxDocument(text, None)
    assert list(doc.line_starts) == line_starts(text)
    assert [doc.byte_offset(s) for s in doc.line_starts] == [len(utf8(text[:s])) for s in line_starts(text)]


def _functions(n: int) -> str:
    return "".join(f"def f{i}(x):\n    if x:\n        return g(x, {i})\n    return None\n\n\n" for i in range(n))


def _assert_window_matches_fresh(doc: SyntaxDocument, offsets) -> None:
    """Around each offset the window's tree is the whole text's: the same innermost node and its parents."""
    fresh = parser_for(doc.language).parse(utf8(doc.text))
    for offset in offsets:
        byte = doc.byte_offset(offset)
        ours = doc.tree.root_node.descendant_for_byte_range(byte, byte)
        theirs = fresh.root_node.descendant_for_byte_range(byte, byte)
        while theirs is not None and theirs.type != "module":
            assert ours is not None and _dump(ours) == _dump(theirs), offset
            ours, theirs = ours.parent, theirs.parent


def test_a_large_documents_tree_is_a_window_that_follows_the_edits_and_the_completions():
    """A document of WINDOWED_BYTES or more is parsed in a window (tree-sitter's included ranges: its nodes keep the
    document's positions): where the user types or asks, the tree is the one a whole parse gives, and the window
    moves there when they go elsewhere."""
    from diffill.infill import document

    text = _functions(20_000)  # 1.2 MB
    doc = SyntaxDocument(text, "python")
    start, end = doc.window
    assert start == 0 and document.WINDOW_REACH <= end < document.WINDOW_REACH + document.WINDOW_SNAP + 100
    assert doc.tree.root_node.end_byte <= end and doc.error_count() == 0
    far = text.index("def f15000(")
    doc.focus(far)
    assert doc.window[0] <= doc.byte_offset(far) < doc.window[1] and doc.window[0] > end
    assert text[doc.window[0] : doc.window[0] + 4] == "def "  # it starts at a top-level line
    at = text.index("return g(x, 15000)", far)
    for k, ch in enumerate(" + 1"):
        before = doc.window
        doc.replace_range(at + 18 + k, at + 18 + k, ch)
        assert doc.window == (before[0], before[1] + 1)  # typed inside it: it grows with the text, not re-centred
    _assert_window_matches_fresh(doc, [at, at + 20, far, far + 40])
    elsewhere = doc.text.index("def f300(")
    doc.replace_range(elsewhere, elsewhere, "x = 1\n")  # an edit outside it: a window where the user is now
    assert doc.window[0] <= doc.byte_offset(elsewhere) < doc.window[1]
    _assert_window_matches_fresh(doc, [elsewhere, elsewhere + 10])
    small = parser_for("python").parse(b"a = 1\nb = 2\n")  # the shared parser parses whole documents again
    assert small.root_node.end_byte == len(b"a = 1\nb = 2\n") and len(small.root_node.children) == 2


def test_a_document_that_grows_large_gets_a_window():
    from diffill.infill import document

    doc = SyntaxDocument("x = 1\n", "python")
    assert doc.window is None
    doc.replace_range(6, 6, _functions(9_000))  # 0.55 MB pasted
    assert doc.window is not None and doc.window[1] - doc.window[0] < 2 * (document.WINDOW_REACH + document.WINDOW_SNAP)
    _assert_window_matches_fresh(doc, [6 + 100, 6 + 1000])
