"""SyntaxDocument against the reference model, in process: hypothesis finds and shrinks mismatches quickly."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import PIECES, apply_change, offset_at, wire

from diffill.infill.document import SyntaxDocument

texts = st.lists(st.sampled_from(PIECES) | st.text(max_size=3), max_size=12).map("".join).map(wire)
positions = st.fixed_dictionaries({"line": st.integers(0, 8), "character": st.integers(0, 14)})
changes = st.one_of(
    st.fixed_dictionaries({"range": st.fixed_dictionaries({"start": positions, "end": positions}), "text": texts}),
    st.fixed_dictionaries({"text": texts}),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=texts,
    edits=st.lists(changes, max_size=8),
    encoding=st.sampled_from(["utf-16", "utf-8", "utf-32"]),
    language=st.sampled_from([None, "python"]),
)
def test_edit_sequences_match_reference(text, edits, encoding, language):
    doc = SyntaxDocument(text, language)
    expected = text
    for change in edits:
        if "range" in change:
            r = change["range"]
            doc.apply_change(
                r["start"]["line"], r["start"]["character"], r["end"]["line"], r["end"]["character"],
                change["text"], encoding,
            )  # fmt: skip
        else:
            doc.replace_all(change["text"])
        expected = apply_change(expected, change, encoding)
        assert doc.text == expected
    assert doc.source == expected.encode("utf-8", "surrogatepass")
    if language is not None:
        assert doc.tree.root_node.end_byte == len(doc.source)


@settings(max_examples=300, deadline=None)
@given(text=texts, line=st.integers(0, 8), char=st.integers(0, 14), encoding=st.sampled_from(["utf-16", "utf-8"]))
def test_offsets_match_reference(text, line, char, encoding):
    assert SyntaxDocument(text, None).offset_at(line, char, encoding) == offset_at(text, line, char, encoding)


@pytest.mark.parametrize(
    "text, char, encoding, expected",
    [
        ("\ud800abc", 2, "utf-16", 2),  # a lone surrogate is one UTF-16 unit (was dropped by the decoder: 1)
        ("\udfffabc", 1, "utf-16", 1),
        ("\ud800abc", 4, "utf-8", 2),  # ... and three UTF-8 bytes (surrogatepass)
        ("a\U0001f600b", 2, "utf-16", 1),  # inside a surrogate pair: rounds down
        ("a\U0001f600b", 3, "utf-16", 2),
    ],
)
def test_lone_surrogate_positions(text, char, encoding, expected):
    assert SyntaxDocument(text, None).offset_at(0, char, encoding) == expected


def test_pathological_parse_is_abandoned_in_budget_and_parser_reset():
    """A 5 MB string literal took ~9 s to parse and ~15 s to reparse after one edit, on the event loop."""
    import time

    from diffill.infill import document

    text = "x = '" + "ab\x00é" * (5 * 1024 * 1024 // 5) + "'"
    started = time.monotonic()
    doc = SyntaxDocument(text, "python")
    doc.apply_change(0, 10, 0, 12, "\ud800\n")
    assert time.monotonic() - started < 4 * document.PARSE_BUDGET_S + 1.0
    assert doc.tree is None and doc.parse_abandoned and doc.language == "python"
    assert doc.text.startswith("x = 'ab\x00éa")
    # The shared per-thread parser was reset: the next document parses from scratch, correctly.
    small = SyntaxDocument("def f(x):\n    return x\n", "python")
    assert small.tree.root_node.end_byte == len(small.source) and small.error_count() == 0


def test_large_ordinary_document_keeps_its_tree():
    big = "def f(x):\n    return x\n" * 20_000  # ~480 KB: over the budgeted size, well within the budget
    doc = SyntaxDocument(big, "python")
    doc.apply_change(5, 0, 5, 0, "    y = 1\n")
    assert not doc.parse_abandoned and doc.error_count() == 0
    assert doc.tree.root_node.end_byte == len(doc.source)
