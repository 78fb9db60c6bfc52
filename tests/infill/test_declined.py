"""Ghost text typed along is declined: golden cases of what is still shown (infill.declined)."""

import pytest

from diffill.infill.completion import Completion
from diffill.infill.declined import after_declined

DOC = "    return the notebook docu\n"
AT = DOC.index("\n")


@pytest.mark.parametrize(
    "answer, declined, shown",
    [
        ("ment with the given uri.", "ment which contains a cell", "ment with the given uri."),  # another answer
        ("ment which contains a cell", "ment which contains a cell", "ment"),  # the same: the word being typed
        ("ment which contains a cell with", "ment which contains a cell", "ment"),  # the same and more
        ("me", "ment which contains a cell", "me"),  # a start of it: not what was declined
        ("ment", "ment", None),  # the word was all there was
    ],
)
def test_an_answer_that_shows_a_declined_rest_again_keeps_only_the_word(answer, declined, shown):
    out = after_declined(Completion(AT, AT, answer, "line"), AT, declined, DOC)
    assert (out.text if out is not None else None) == shown


def test_the_word_kept_is_inserted_at_the_cursor():
    answer = Completion(AT, AT + 1, "ment which contains a cell", "line", "copy")  # it replaced the line's end
    out = after_declined(answer, AT, "ment which contains", DOC)
    assert (out.start, out.end, out.text, out.kind, out.source) == (AT, AT, "ment", "line", "copy")


def test_after_a_space_or_elsewhere_a_declined_rest_is_not_shown():
    doc = "x = foo(a, \n"
    at = doc.index("\n")
    assert after_declined(Completion(at, at, "b)", "line"), at, "b)", doc) is None  # no word being typed
    moved = Completion(at - 1, at, " b)", "line")  # an edit that starts elsewhere is another answer
    assert after_declined(moved, at, "b)", doc) is moved
