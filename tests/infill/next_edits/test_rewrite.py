"""Next edits a model writes (infill.next_edits.rewrite): the region below an edit, cut to the canvas, and the
model's rewrite of it turned into proposals where it is sure."""

from __future__ import annotations

from diffill.infill.next_edits import Proposal, apply
from diffill.infill.next_edits.rewrite import char_confidence, fit_region, proposals, region_below

TEXT = "def test(self):\n    self.assertEquals(a, 1)\n    self.assertEquals(b, 2)\n    x = 3\n    self.assertEquals(c, 3)\n"


def test_the_region_is_the_whole_lines_below_the_edit():
    first_line_end = TEXT.index("\n") + 1
    assert region_below(TEXT, first_line_end) == (first_line_end, len(TEXT))  # an edit's end: the next line's start
    assert region_below(TEXT, 4) == (first_line_end, len(TEXT))  # a place on the edit's last line
    second = TEXT.index("\n", first_line_end) + 1
    assert region_below(TEXT, first_line_end, max_lines=1) == (first_line_end, second)
    assert region_below(TEXT, len(TEXT)) is None  # nothing below
    assert region_below("x = 1", 2) is None
    assert region_below("x = 1\n\n   \n", 6) is None  # blank lines hold nothing to rewrite


def test_the_region_is_cut_to_the_lines_that_fit():
    one_id_a_char = list
    start = TEXT.index("\n") + 1
    lines = TEXT[start:].splitlines(keepends=True)
    canvas = 80  # 59 for the region: a quarter, and the end, left for what the rewrite adds
    assert len(lines[0]) + len(lines[1]) <= 59 < len(lines[0]) + len(lines[1]) + len(lines[2])
    (s, e), ids = fit_region((start, len(TEXT)), TEXT, one_id_a_char, canvas)
    assert (s, e) == (start, start + len(lines[0]) + len(lines[1])) and len(ids) == e - s
    assert fit_region((start, len(TEXT)), TEXT, one_id_a_char, 16) is None  # not even the first line


def test_each_character_is_as_sure_as_the_token_that_wrote_it():
    pieces = [b"ab", b"\xc3", b"\xa9", b"c"]  # "é" split between two byte tokens

    def decode(ids):
        return b"".join(pieces[i] for i in ids).decode("utf-8", errors="replace")

    assert char_confidence([0, 1, 2, 3], [0.9, 0.8, 0.5, 0.7], decode) == [0.9, 0.9, 0.5, 0.7]


def test_a_rewrite_becomes_the_proposals_it_is_sure_of():
    start = TEXT.index("\n") + 1
    region = (start, len(TEXT))
    old = TEXT[start:]
    written = old.replace("assertEquals", "assertEqual")
    sure = [1.0] * len(written)
    got = proposals(TEXT, region, written, sure, 0.9)
    assert [(TEXT[p.start : p.end], p.text, p.old) for p in got] == [
        ("assertEquals", "assertEqual", "assertEquals")
    ] * 3
    assert apply(TEXT, got) == TEXT[:start] + written
    unsure_at = written.index("assertEqual(b")
    doubted = sure[:unsure_at] + [0.5] + sure[unsure_at + 1 :]
    kept = proposals(TEXT, region, written, doubted, 0.9)
    assert [TEXT[p.start - 10 : p.start] for p in kept] == [
        TEXT[got[0].start - 10 : got[0].start],
        TEXT[got[2].start - 10 : got[2].start],
    ]


def test_lines_added_and_removed_are_proposals_too_and_a_missing_last_newline_is_no_change():
    start = TEXT.index("\n") + 1
    old = TEXT[start:]
    lines = old.splitlines(keepends=True)
    written = lines[1] + "    y = 3\n" + lines[3] + "    z = 4\n"  # a line gone, `x` become `y`, a line added
    written = written.rstrip("\n")
    got = proposals(TEXT, (start, len(TEXT)), written, [1.0] * len(written), 0.9)
    assert apply(TEXT, got) == TEXT[:start] + written + "\n"
    at_x = TEXT.index("x = 3")
    assert got == [
        Proposal(start, start + len(lines[0]), "", lines[0]),
        Proposal(at_x, at_x + 1, "y", "x"),
        Proposal(len(TEXT), len(TEXT), "    z = 4\n", ""),
    ]
    assert proposals(TEXT, (start, len(TEXT)), old.rstrip("\n"), [1.0] * len(old), 0.9) == []
