"""Rest-of-line copies: which other lines of the file continue the way the current one started."""

from diffill.infill.copies import LineCopy, line_copies


def at_cursor(text: str) -> tuple[str, int]:
    offset = text.index("|")
    return text[:offset] + text[offset + 1 :], offset


def test_the_rest_of_a_line_that_starts_the_same_is_a_candidate():
    text, offset = at_cursor(
        "def f(x):\n    logger = logging.getLogger(__name__)\n    return x\n\ndef g(y):\n    logger = logging.get|\n"
    )
    assert line_copies(text, offset) == [LineCopy("Logger(__name__)", len("logger = logging.get"), True, 1)]


def test_longer_matches_rank_first_then_more_lines_then_the_nearest():
    text, offset = at_cursor(
        "a.assert_called_with(1)\n"
        "self.assertEqual(x, 1)\n"
        "self.assertEqual(y, 2)\n"
        "b.assert_called_with(1)\n"
        "self.assertEqual(y, 2)\n"
        "self.assertTrue(z)\n"
        "self.assert|\n"
    )
    rests = [c.rest for c in line_copies(text, offset)]
    # `self.assert` matches all three whole lines; `(y, 2)` continues two of them; `True(z)` is nearer than `(x, 1)`
    assert rests[:3] == ["Equal(y, 2)", "True(z)", "Equal(x, 1)"]
    assert all(c.whole_line for c in line_copies(text, offset)[:3])
    assert rests[3] == "_called_with(1)"  # only `assert` matches there
    assert not line_copies(text, offset)[3].whole_line


def test_a_match_in_the_middle_of_a_line_is_not_a_whole_line_match():
    text, offset = at_cursor("x = foo.bar(1)\ny = foo.bar(2)\n    foo.b|\n")
    copies = line_copies(text, offset)
    assert {c.rest for c in copies} == {"ar(1)", "ar(2)"} and not any(c.whole_line for c in copies)


def test_lines_below_the_cursor_count_too_and_the_current_rest_is_left_out():
    text, offset = at_cursor(
        "def f():\n    return compute|(a)\n\ndef g():\n    return compute(a)\n    return compute(b)\n"
    )
    assert [c.rest for c in line_copies(text, offset)] == ["(b)"]  # `(a)` is already there


def test_short_typed_text_and_no_match_give_nothing():
    text, offset = at_cursor("x=foo(1)\nx=fo|\n")
    assert line_copies(text, offset) == []  # `x=fo` is four characters: too short to trust
    text, offset = at_cursor("x = foo(1)\nprint(value|\n")
    assert line_copies(text, offset) == []
    text, offset = at_cursor("|")
    assert line_copies(text, offset) == []
