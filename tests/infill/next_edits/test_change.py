"""Golden cases of the core replacement an edit makes (infill.next_edits.change)."""

from __future__ import annotations

import pytest

from diffill.infill.next_edits.change import core_of


@pytest.mark.parametrize(
    ("before", "after", "old", "new", "left", "right"),
    [
        ("    def f(self, s: t.AnyStr) -> t.Any:\n", "    def f(self, s: _TSerialized) -> t.Any:\n", "t.AnyStr", "_TSerialized", ":", ")"),
        ("        mac = hashlib.sha1(key)\n", "        mac = _lazy_sha1(key)\n", "hashlib.sha1", "_lazy_sha1", "=", "("),
        ("        self.assertEquals(a, b)\n", "        self.assertEqual(a, b)\n", "assertEquals", "assertEqual", ".", "("),
        ("x = f(a)\n", "x = f(a)  # type: ignore\n", "", "  # type: ignore", ")", ""),
    ],
)  # fmt: skip
def test_the_core_is_what_changed_with_its_anchors(before, after, old, new, left, right):
    change = core_of(before, after)
    assert (change.old, change.new, change.left, change.right) == (old, new, left, right)
    assert before[change.offset : change.offset + len(old)] == old
    assert after[change.offset : change.offset + len(new)] == new


def test_a_suffix_added_at_the_line_end_says_so():
    assert core_of("x = f(a)\n", "x = f(a)  # type: ignore\n").at_line_end
    assert not core_of("x = f(a)\n", "x = g(a)\n").at_line_end


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("x = 1\n", "x = 1\n"),  # nothing changed
        ("a = 1\nb = 2\n", "a = 3\nc = 4\n"),  # a change across lines: a block rewritten
        ("x = 1\n", "x = 1\ny = 2\n"),  # a line added
        ("x = '" + "a" * 500 + "'\n", "x = '" + "b" * 500 + "'\n"),  # too long to recur
    ],
)
def test_no_core_where_there_is_nothing_to_repeat(before, after):
    assert core_of(before, after) is None
