"""Keystrokes grouped into edits (infill.next_edits.progress)."""

from __future__ import annotations

from diffill.infill.next_edits.progress import EditInProgress, edit_between

TEXT = "a = 1\nb = old(2)\nc = 3\n"


def test_the_edit_between_two_texts_is_whole_lines():
    after = TEXT.replace("old", "new")
    edit = edit_between(TEXT, after)
    assert (edit.start, edit.before, edit.after) == (6, "b = old(2)\n", "b = new(2)\n")
    assert edit_between(TEXT, TEXT) is None
    grown = edit_between(TEXT, TEXT.replace("b = old(2)\n", "b = old(2)\nb2 = 4\n"))
    assert TEXT[: grown.start] + grown.after + TEXT[grown.start + len(grown.before) :] == TEXT.replace(
        "b = old(2)\n", "b = old(2)\nb2 = 4\n"
    )
    last = edit_between("x = 1", "x = 2")  # no line end at all
    assert (last.before, last.after) == ("x = 1", "x = 2")
    inside = edit_between("a\nb\n", "a\nxb\n")  # typed at a line's start: still the whole line
    assert (inside.start, inside.before, inside.after) == (2, "b\n", "xb\n")


def test_keystrokes_on_the_edits_lines_go_on_with_it_and_one_elsewhere_does_not():
    e = EditInProgress()
    assert not e.continues(1, 1)  # nothing in progress
    e.change(TEXT, 1, 1, 0)
    assert e.continues(1, 1) and not e.continues(2, 2) and not e.continues(0, 1)
    e.change(TEXT, 1, 1, 1)  # Enter: the edit now spans lines 1-2
    assert e.continues(2, 2)
    base, edit = e.finish(TEXT.replace("old(2)", "old(2)\nx"))
    assert base == TEXT and (edit.start, edit.before, edit.after) == (17, "", "x\n")  # a line added
    assert e.finish(TEXT) is None  # finished: the next change begins a new one


def test_an_edit_that_ends_where_it_began_is_no_edit():
    e = EditInProgress()
    e.change(TEXT, 0, 0, 0)
    assert e.finish(TEXT) is None
